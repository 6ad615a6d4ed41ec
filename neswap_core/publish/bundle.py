"""The released bundle (SPEC §11): ``released/`` may leave the analyst's hands, ``key/`` may not.

``released/`` holds the anonymised documents under pseudonymous ids (``doc_7f3a91``: random
hex drawn from a seeded generator, assigned in a random order, so neither the original id nor
the corpus order can be read back), in the input's layout (``publish.export.corpus_files``:
``docs/<id>.txt`` + ``manifest.csv``, or ``corpus.csv``/``.jsonl``, or one JSON per document),
documents sorted by pseudonym. The manifest holds the pseudonym and only the metadata columns
the analyst marks publishable (``publishable_columns``; never the protected column, the original
id, ticker/company columns or source paths). Chunk order within a document is kept unless
``shuffle_chunks`` (then it is a seeded random permutation: the text reads in a scrambled
order, which hides the flow of the call at the cost of readability). No swap log, no per-chunk
metadata.

``key/`` holds the map back (``pseudonyms.csv``: pseudonym → original id, source and every
metadata column), the per-chunk table with original ids (``chunks.csv``), the leak list
(``leaks.csv``), the changed spans in TAB format (``tab_annotations.json``), and whatever the
caller adds (swap log, decisions, releases, frontier, Pitman table, report, configuration).

Nothing is written to ``released/`` while the leak scan (``leaks.py``) has unaccepted hits.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from ..choose.memo_keys import chunk_field_digests
from ..config import IDENTIFYING_COLUMNS
from ..corpus import Chunk, Corpus, Document, corpus_digest
from ..disk_memo import DiskMemo, content_key, texts_digest
from ..errors import ConfigError, LeakError
from ..text.presentation import extract_presentations
from .annotations import tab_documents
from .export import chunks_frame, corpus_files, document_texts, zip_files
from .folders import replace_folders
from .leaks import LeakHit, LeakTerm, hits_csv, leak_terms, scan_release, unaccepted

RELEASED_DIR = "released"
KEY_DIR = "key"
#: One sentence per folder, shown by the CLI and the Export page.
FOLDER_PURPOSE = {
    RELEASED_DIR: "the anonymised documents under random ids: the only folder that may be "
    "shared, e.g. given to an LLM.",
    KEY_DIR: "the map from random ids back to documents and companies, the swap log, review "
    "decisions, report and configuration: it stays with you and must never be shared.",
}
_ID_DIGITS = 6


def pseudonym_map(doc_ids: Sequence[str], rng: np.random.Generator) -> dict[str, str]:
    """Original id → ``doc_xxxxxx`` (random hex, unique), assigned in a random order."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for k in rng.permutation(len(doc_ids)):
        while True:
            name = f"doc_{int(rng.integers(16**_ID_DIGITS)):0{_ID_DIGITS}x}"
            if name not in used:
                break
        used.add(name)
        out[doc_ids[int(k)]] = name
    return {d: out[d] for d in doc_ids}


def check_publishable(columns: Iterable[str], corpus: Corpus) -> tuple[str, ...]:
    """The publishable metadata columns, or a ``ConfigError`` naming the one that may not be."""
    columns = tuple(dict.fromkeys(columns))
    available = {k for d in corpus.documents for k in d.metadata}
    for column in columns:
        if column == corpus.protect:
            raise ConfigError(
                f"{column!r} is the protected column: it can never be published. Remove it "
                "from publishable_columns."
            )
        if column.lower() in IDENTIFYING_COLUMNS or "path" in column.lower():
            raise ConfigError(
                f"{column!r} names the company, the original document or a source file: it "
                "cannot be published. Remove it from publishable_columns."
            )
        if column not in available:
            raise ConfigError(
                f"publishable column {column!r} is not in the corpus metadata; available: "
                f"{sorted(available) or 'none'}."
            )
    return columns


@dataclass
class Bundle:
    """The files of both folders (relative path → bytes) and the leak scan's hits."""

    released: dict[str, bytes]
    key: dict[str, bytes]
    hits: list[LeakHit]
    pseudonyms: dict[str, str]
    accepted: set[tuple[str, str, str, str]] = field(default_factory=set)

    def blocking(self, accepted: Iterable[tuple[str, ...]] = ()) -> list[LeakHit]:
        """Hits not accepted by the analyst: while any is left, ``released/`` is not written."""
        return unaccepted(self.hits, set(accepted) | self.accepted)

    def with_key_files(self, files: Mapping[str, bytes]) -> Bundle:
        return replace(self, key={**self.key, **files})

    def write(self, out: str | Path, accepted: Iterable[tuple[str, ...]] = ()) -> list[Path]:
        """Write ``key/`` always and ``released/`` only when every hit is accepted, each
        replacing its previous folder whole (``folders.replace_folders``: the old release stays
        intact until the new one is complete; a blocked release leaves no old ``released/``).
        Raises ``LeakError`` (after writing ``key/``) when hits are left."""
        out = Path(out)
        accepted = set(accepted) | self.accepted
        key = {**self.key, "leaks.csv": hits_csv(self.hits, accepted).encode("utf-8")}
        left = self.blocking(accepted)
        written = replace_folders(out, {RELEASED_DIR: None if left else self.released,
                                        KEY_DIR: key})  # fmt: skip
        if left:
            raise LeakError(leak_message(left, out / KEY_DIR / "leaks.csv"))
        return written

    def released_zip(self) -> bytes:

        return zip_files({f"{RELEASED_DIR}/{k}": v for k, v in self.released.items()})

    def key_zip(self, accepted: Iterable[tuple[str, ...]] = ()) -> bytes:

        key = {**self.key, "leaks.csv": hits_csv(self.hits, set(accepted)).encode("utf-8")}
        return zip_files({f"{KEY_DIR}/{k}": v for k, v in key.items()})


def leak_message(hits: Sequence[LeakHit], listing: Path | str, limit: int = 20) -> str:
    """What blocks the export, one line per hit (at most ``limit``), and what to do."""
    exact = sum(h.case == "exact case" for h in hits)
    lines = [
        f"The leak scan found {len(hits)} identifier(s) in the released text ({exact} in exact "
        f"case, {len(hits) - exact} in another case); released/ was not written. Fix the text "
        f"(entity corrections, roles) or accept each hit: copy its row from {listing} into a "
        "file and pass --accept-leaks FILE."
    ]
    lines += [f"  - {h.sentence()}" for h in hits[:limit]]
    if len(hits) > limit:
        lines.append(f"  … and {len(hits) - limit} more in {listing}.")
    return "\n".join(lines)


def _csv(rows: list[dict], columns: Sequence[str]) -> bytes:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8")


def released_chunk_texts(
    corpus: Corpus, chunks: Sequence[Chunk], rng: np.random.Generator, shuffle: bool
) -> dict[str, list[str]]:
    """Original id → the document's released chunk texts, in order or shuffled (seeded)."""
    parts: dict[str, list[tuple[int, str]]] = {d.doc_id: [] for d in corpus.documents}
    for ch in chunks:
        parts.setdefault(ch.doc_id, []).append((ch.index, ch.text))
    out = {}
    for doc_id, items in parts.items():
        texts = [t for _, t in sorted(items)]
        if shuffle and len(texts) > 1:
            texts = [texts[i] for i in rng.permutation(len(texts))]
        out[doc_id] = texts
    return out


def _key_tables(
    raw: Corpus, clean: Corpus, chunks: Sequence[Chunk], pseudonyms: Mapping[str, str],
    cache_dir: str | Path | None = None,
) -> dict[str, bytes]:
    """pseudonyms.csv, chunks.csv and tab_annotations.json (SPEC §11), kept on disk in
    ``cache_dir`` by a hash of every input (``disk_memo``): the TAB spans diff each document."""
    key = content_key(  # digests made once per corpus and chunk list (2 s of repr at 100k)
        "key_tables", corpus_digest(raw), corpus_digest(clean), *chunk_field_digests(chunks),
        texts_digest(str(c.index) for c in chunks), dict(pseudonyms),
    )  # fmt: skip
    return DiskMemo(cache_dir, "key_tables").get_or_compute(
        key, lambda: _computed_key_tables(raw, clean, chunks, pseudonyms))


def _scanned(by_pseudo: Mapping[str, Sequence[str]], terms: Sequence[LeakTerm],
             originals: Mapping[str, str], manifest: Mapping | None, cache_dir) -> list[LeakHit]:
    """``scan_release``, kept on disk by its inputs (a warm re-run of a release rescans
    nothing: compiling the identifiers' patterns and loading the word list cost about a second)."""
    key = content_key(
        "leak_scan", {p: texts_digest(t) for p, t in by_pseudo.items()},
        sorted((t.text, t.kind, sorted(t.owners)) for t in terms), dict(originals),
        None if manifest is None else {p: dict(v) for p, v in manifest.items()},
        _wordfreq_version())  # fmt: skip
    return DiskMemo(cache_dir, "leak_scans").get_or_compute(
        key, lambda: scan_release(by_pseudo, terms, originals, manifest))


def _wordfreq_version() -> str:
    """The word list deciding which identifiers are common words (``LeakTerm.common``)."""
    try:
        return version("wordfreq")
    except PackageNotFoundError:
        return ""


def _computed_key_tables(
    raw: Corpus, clean: Corpus, chunks: Sequence[Chunk], pseudonyms: Mapping[str, str]
) -> dict[str, bytes]:
    rows = [
        {"pseudonym": pseudonyms[d.doc_id], "doc_id": d.doc_id, "source": d.source, **d.metadata}
        for d in raw.documents
    ]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    frame = chunks_frame(chunks, clean)
    frame.insert(0, "pseudonym", frame["doc_id"].map(pseudonyms))
    presented, _ = extract_presentations(raw)
    categories: dict[str, dict[str, str]] = {doc: {} for doc in pseudonyms}
    for ch in chunks:  # one pass (was one pass over every chunk per document)
        categories.setdefault(ch.doc_id, {}).update({s.text: s.category for s in ch.entities})
    tab = tab_documents(
        {d.doc_id: d.text for d in presented.documents},
        document_texts(clean, chunks),
        pseudonyms,
        categories,
    )
    return {
        "pseudonyms.csv": _csv(sorted(rows, key=lambda r: r["pseudonym"]), columns),
        "chunks.csv": frame.to_csv(index=False).encode("utf-8"),
        "tab_annotations.json": (json.dumps(tab, indent=1, ensure_ascii=False) + "\n").encode(),
    }


def build_bundle(
    raw: Corpus,
    clean: Corpus,
    chunks: Sequence[Chunk],
    *,
    seed: int = 0,
    shuffle_chunks: bool = False,
    publishable_columns: Sequence[str] = (),
    people: Mapping[str, Sequence[str]] | None = None,
    key_files: Mapping[str, bytes] | None = None,
    cache_dir: str | Path | None = None,
) -> Bundle:
    """Pseudonymise, scan for leaks and lay out both folders for the released ``chunks``.

    ``raw``: the corpus as loaded (metadata, executives, original text); ``clean``: after
    presentation extraction and suppression (aliases filled in); ``chunks``: the release.
    ``people``: extra person names per document to scan for (detected executives).
    ``cache_dir``: where the key tables are kept by their inputs (None: nowhere).
    """
    columns = check_publishable(publishable_columns, raw)
    rng = np.random.default_rng([int(seed), 0x6E5, 0xB0D])
    doc_ids = [d.doc_id for d in raw.documents]
    pseudonyms = pseudonym_map(doc_ids, rng)
    texts = released_chunk_texts(clean, chunks, rng, shuffle_chunks)
    by_pseudo = {pseudonyms[d]: texts.get(d, []) for d in doc_ids}
    originals = {p: d for d, p in pseudonyms.items()}
    manifest = {
        pseudonyms[d.doc_id]: {c: str(d.metadata.get(c, "")) for c in columns}
        for d in raw.documents
    }
    terms = leak_terms(clean, people)
    hits = _scanned(by_pseudo, terms, originals, manifest if columns else None, cache_dir)
    layout_of = {d.doc_id: d.layout for d in raw.documents}
    released_docs = tuple(
        Document(doc_id=p, text="\n\n".join(by_pseudo[p]), metadata=manifest[p],
                 layout=layout_of[originals[p]])
        for p in sorted(by_pseudo)
    )
    released_corpus = Corpus(released_docs, protect=raw.protect)
    released = corpus_files(released_corpus, {d.doc_id: d.text for d in released_docs})
    key = _key_tables(raw, clean, chunks, pseudonyms, cache_dir)
    key.update(key_files or {})
    return Bundle(released, key, hits, pseudonyms)
