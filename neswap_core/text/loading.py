"""Loading a corpus from disk or from uploads into ``Corpus`` (SPEC §1).

Accepted inputs (``load_corpus`` looks at what ``path`` is; ``load_uploaded`` at file names):

* a **folder of ``.txt`` transcripts** (directly in it, or in a ``docs/`` subfolder as in
  ``data/sample``) plus ``manifest.csv``: one row per file, ``doc_id`` = file stem, every other
  column is metadata. Without a manifest each file is a document whose only metadata come from a
  ``TICKER_qN_YYYY`` file stem (ticker, quarter), so protecting ``company`` needs a manifest.
  ``LICENSE*``/``README*`` text files are not documents.
* a **``.csv`` or ``.jsonl`` table**: one row per document, a text column and metadata columns;
  optional ``aliases`` / ``executives`` columns (``|``-separated). Rows without an id column get
  ``doc_0001``, ``doc_0002``, ...
* **Motley Fool ``.json``** calls (``prepared_remarks``, ``q_and_a``, ``participants``), one file
  or a folder of them (metadata from a ``manifest.csv`` beside them or from the file stem).
  Company-side participants (not analysts, investors or the operator) become ``executives``.

``aliases.csv`` (ticker, company_name, aliases) and ``executives.csv`` (ticker, [quarter,] name,
[role]) beside the input attach by ticker (and quarter); the company name and ticker of the
metadata are always aliases too (``identifiers.document_aliases``). Executives named in a
transcript's own ``Name -- Role`` speaker lines are added after the listed ones; the outside
participants its lists name (analysts, investors) become ``Document.analysts`` (``[Analyst #]``).

Text is decoded by ``decoding.py`` (UTF-8, or UTF-16 with or without a BOM; anything else is a
``CorpusError`` naming the file). A single document loads (for preview); ``check_swappable`` is the
separate gate the pipeline and the app call before swapping (≥ 2 documents, ≥ 2 protected values).
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePath

import pandas as pd

from ..config import DEFAULT_PROTECT
from ..corpus import Corpus, Document
from ..errors import CorpusError
from ..paths import resolve_corpus
from .decoding import decode_text
from .identifiers import document_aliases
from .motleyfool import render_motleyfool
from .participants import UNIDENTIFIED, Participant, is_company_side, looks_like_name
from .presentation import text_participants

MANIFEST = "manifest.csv"
ALIASES = "aliases.csv"
EXECUTIVES = "executives.csv"
DOCS_FOLDER = "docs"
_STEM = re.compile(r"^(?P<ticker>[A-Z][A-Z0-9.-]{0,9})_(?P<quarter>[qQ][1-4]_\d{4})$")
_NOT_DOCUMENTS = re.compile(r"^(?:licen[cs]e|readme|copying|notice|attribution)", re.I)


@dataclass
class _Raw:
    """A document before metadata, aliases and executives are attached."""

    doc_id: str
    text: str
    source: str
    layout: str = "text"
    q_and_a: str | None = None
    metadata: dict[str, str] | None = None  # None: from the manifest or the file stem
    participants: list[Participant] = field(default_factory=list)
    aliases: tuple[str, ...] = ()


@dataclass
class _Sides:
    """aliases.csv and executives.csv, indexed by ticker."""

    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    executives: list[dict[str, str]] = field(default_factory=list)


def _read_table(data: bytes, name: str) -> pd.DataFrame:
    """A CSV or JSONL file as a frame of strings (column names stripped)."""
    text = decode_text(data, name)
    if name.lower().endswith(".jsonl"):
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise CorpusError(
                        f"{name}, line {number}: not valid JSON ({exc.msg})."
                    ) from None
        if not all(isinstance(r, dict) for r in records):
            raise CorpusError(f"{name}: every line must be a JSON object with named fields.")
        frame = pd.DataFrame.from_records(records).fillna("").astype(str)
    else:
        try:
            frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, ValueError) as exc:
            raise CorpusError(f"{name} is not a readable CSV file: {exc}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def _require(frame: pd.DataFrame, columns: list[str], name: str, hint: str = "") -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise CorpusError(
            f"{name} has no column {', '.join(map(repr, missing))}; its columns are "
            f"{list(frame.columns)}.{(' ' + hint) if hint else ''}"
        )


# --- side tables ------------------------------------------------------------------------------
def _read_sides(files: dict[str, bytes]) -> _Sides:
    sides = _Sides()
    if ALIASES in files:
        frame = _read_table(files[ALIASES], ALIASES)
        _require(frame, ["ticker", "aliases"], ALIASES)
        for row in frame.to_dict("records"):
            names = [row.get("company_name", ""), *str(row["aliases"]).split("|")]
            listed = sides.aliases.get(row["ticker"].strip(), ())
            sides.aliases[row["ticker"].strip()] = listed + tuple(
                n.strip() for n in names if n.strip()
            )
    if EXECUTIVES in files:
        frame = _read_table(files[EXECUTIVES], EXECUTIVES)
        _require(frame, ["ticker", "name"], EXECUTIVES)
        sides.executives = frame.to_dict("records")
    return sides


def _executives_for(metadata: dict[str, str], raw: _Raw, sides: _Sides) -> tuple[str, ...]:
    """Listed company-side executives of this call, then those of its own participant list."""
    ticker, quarter = metadata.get("ticker", ""), metadata.get("quarter", "")
    names = [
        row["name"]
        for row in sides.executives
        if ticker
        and row["ticker"].strip() == ticker
        and (not row.get("quarter") or not quarter or row["quarter"].strip() == quarter)
        and is_company_side(row["name"], row.get("role", ""))
    ]
    names += [p.name for p in raw.participants if p.company_side]
    unique: dict[str, str] = {}
    for n in names:
        unique.setdefault(" ".join(n.lower().split()), " ".join(n.split()))
    return tuple(unique.values())


def _analysts_for(raw: _Raw, executives: tuple[str, ...]) -> tuple[str, ...]:
    """Outside participants (analysts, investors) of this call's own lists, in order: their
    names are suppressed as ``[Analyst #]`` (the operator and unnamed speakers are not people)."""
    known = {" ".join(n.lower().split()) for n in executives}
    names: dict[str, str] = {}
    for p in raw.participants:
        key = " ".join(p.name.lower().split())
        if p.company_side or key in known or UNIDENTIFIED.fullmatch(p.name.strip()):
            continue
        if looks_like_name(p.name):
            names.setdefault(key, " ".join(p.name.split()))
    return tuple(names.values())


# --- documents --------------------------------------------------------------------------------
def _stem_metadata(doc_id: str) -> dict[str, str]:
    match = _STEM.match(doc_id)
    meta = {"doc_id": doc_id}
    if match:
        meta.update(ticker=match["ticker"], quarter=match["quarter"].lower())
    return meta


def _manifest_rows(
    raws: list[_Raw], manifest: pd.DataFrame, name: str, id_column: str, subset: bool
) -> dict[str, dict[str, str]]:
    """Manifest rows by doc id, checking both directions (files without rows and vice versa)."""
    _require(manifest, [id_column], name, "Its id column must hold the file names without .txt.")
    ids = manifest[id_column].str.strip()
    dupes = sorted(set(ids[ids.duplicated()]))
    if dupes:
        raise CorpusError(f"{name} lists doc ids more than once: {dupes[:5]}. Keep one row each.")
    rows = {
        i: {k: str(v) for k, v in r.items()}
        for i, r in zip(ids, manifest.to_dict("records"), strict=True)
    }
    have = {r.doc_id for r in raws}
    unlisted = sorted(have - set(rows))
    if unlisted:
        raise CorpusError(
            f"{len(unlisted)} file(s) have no row in {name}: {unlisted[:5]}. Add a row for "
            f"each (column {id_column!r} = file name without extension) or remove the files."
        )
    orphans = sorted(set(rows) - have)
    if orphans and not subset:
        raise CorpusError(
            f"{len(orphans)} row(s) of {name} have no file: {orphans[:5]}. Add the files or "
            "delete those rows."
        )
    return rows


def _finish(
    raws: list[_Raw],
    manifest: tuple[str, pd.DataFrame] | None,
    sides: _Sides,
    protect: str,
    id_column: str,
    name: str,
    subset: bool = False,
) -> Corpus:
    """Attach metadata, aliases and executives; check ids and the protected column."""
    if not raws:
        raise CorpusError(f"No documents found in {name}.")
    seen: dict[str, str] = {}
    for raw in raws:
        if raw.doc_id in seen:
            raise CorpusError(
                f"Duplicate doc id {raw.doc_id!r} ({seen[raw.doc_id]} and {raw.source}). "
                "Every document needs its own id: rename one of them."
            )
        seen[raw.doc_id] = raw.source
    rows = _manifest_rows(raws, manifest[1], manifest[0], id_column, subset) if manifest else {}
    documents = []
    for raw in raws:
        meta = raw.metadata if raw.metadata is not None else rows.get(raw.doc_id)
        meta = dict(meta) if meta is not None else _stem_metadata(raw.doc_id)
        if protect not in meta:
            hint = (
                ""
                if manifest or raw.metadata is not None
                else (
                    f" There is no {MANIFEST}: add one with columns {id_column!r} and {protect!r}."
                )
            )
            raise CorpusError(
                f"The column to protect, {protect!r}, is missing for {raw.doc_id!r} "
                f"({raw.source}); available columns: {sorted(meta)}.{hint}"
            )
        if not str(meta[protect]).strip():
            raise CorpusError(f"{raw.doc_id!r} has an empty {protect!r}; fill it in.")
        listed = raw.aliases + sides.aliases.get(meta.get("ticker", ""), ())
        executives = _executives_for(meta, raw, sides)
        documents.append(
            Document(
                doc_id=raw.doc_id,
                text=raw.text,
                metadata=meta,
                executives=executives,
                analysts=_analysts_for(raw, executives),
                aliases=document_aliases(meta, listed),
                source=raw.source,
                layout=raw.layout,
                q_and_a=raw.q_and_a,
            )
        )
    return Corpus(tuple(documents), protect=protect, name=name)


def _text_raw(name: str, data: bytes) -> _Raw:
    text = decode_text(data, name)
    return _Raw(PurePath(name).stem, text, name, participants=text_participants(text))


def _motleyfool_raw(name: str, obj: dict) -> _Raw:
    """One Motley Fool JSON call: prepared remarks as text, the Q&A kept apart."""
    prepared, q_and_a, participants = render_motleyfool(obj, name)
    return _Raw(PurePath(name).stem, prepared, name, "motleyfool", q_and_a, None, participants)


def _table_raws(frame: pd.DataFrame, name: str, text_column: str, id_column: str) -> list[_Raw]:
    _require(frame, [text_column], name, "Name the column that holds the text: --text-column "
             "NAME on the command line, text_column = \"NAME\" in run.toml.")
    if frame.empty:
        raise CorpusError(f"{name} has no rows.")
    extra = {text_column, "aliases", "executives"}
    raws = []
    for number, row in enumerate(frame.to_dict("records"), start=1):
        doc_id = str(row[id_column]).strip() if id_column in row else f"doc_{number:04d}"
        text = str(row[text_column]).replace("\r\n", "\n")
        if not text.strip():
            raise CorpusError(f"{name}: the text of row {number} ({doc_id!r}) is empty.")
        meta = {k: str(v) for k, v in row.items() if k not in extra}
        meta.setdefault(id_column, doc_id)
        listed = [p.strip() for p in str(row.get("executives", "")).split("|") if p.strip()]
        participants = [Participant(p, "", True) for p in listed] + text_participants(text)
        aliases = tuple(a.strip() for a in str(row.get("aliases", "")).split("|") if a.strip())
        raws.append(
            _Raw(doc_id, text, f"{name}, row {number}", "table", None, meta, participants, aliases)
        )
    return raws


# --- dispatch ---------------------------------------------------------------------------------
def _json_raws(jsons: dict[str, bytes], text_column: str, id_column: str) -> list[_Raw]:
    raws = []
    for name, data in jsons.items():
        try:
            obj = json.loads(decode_text(data, name))
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{name} is not valid JSON (line {exc.lineno}: {exc.msg}).") from None
        if isinstance(obj, dict) and "prepared_remarks" in obj:
            raws.append(_motleyfool_raw(name, obj))
        elif isinstance(obj, list) and all(isinstance(r, dict) for r in obj):
            frame = pd.DataFrame.from_records(obj).fillna("").astype(str)
            raws.extend(_table_raws(frame, name, text_column, id_column))
        else:
            raise CorpusError(
                f"{name} is neither a Motley Fool transcript (keys 'prepared_remarks', "
                "'q_and_a', 'participants') nor a list of records with a text field."
            )
    return raws


def _sort_files(files: dict[str, bytes]) -> dict[str, dict[str, bytes]]:
    """Input files by kind (.txt, .csv, .jsonl, .json); side tables and licence texts left out."""
    kinds: dict[str, dict[str, bytes]] = {".txt": {}, ".csv": {}, ".jsonl": {}, ".json": {}}
    for fname, data in files.items():
        suffix = PurePath(fname).suffix.lower()
        if fname.lower() in (ALIASES, EXECUTIVES) or suffix not in kinds:
            continue
        if suffix == ".txt" and _NOT_DOCUMENTS.match(fname):
            continue
        kinds[suffix][fname] = data
    return kinds


def _manifest(csvs: dict[str, bytes], name: str) -> tuple[str, pd.DataFrame] | None:
    """The manifest among the CSV files beside transcripts: manifest.csv, or the only CSV."""
    if not csvs:
        return None
    if len(csvs) > 1 and MANIFEST not in csvs:
        raise CorpusError(
            f"{name} holds several CSV files {sorted(csvs)}; name the manifest {MANIFEST}."
        )
    mname = MANIFEST if MANIFEST in csvs else next(iter(csvs))
    return mname, _read_table(csvs[mname], mname)


def _build(
    files: dict[str, bytes],
    protect: str,
    text_column: str,
    id_column: str,
    name: str,
    subset: bool = False,
) -> Corpus:
    """Turn named file contents into a corpus (shared by ``load_corpus`` and ``load_uploaded``)."""
    kinds = _sort_files(files)
    texts, csvs, jsonls, jsons = (kinds[k] for k in (".txt", ".csv", ".jsonl", ".json"))
    sides = _read_sides(
        {k.lower(): v for k, v in files.items() if k.lower() in (ALIASES, EXECUTIVES)}
    )
    if (texts or jsons) and jsonls:
        raise CorpusError(
            f"{name} holds transcripts and JSONL tables {sorted(jsonls)}; keep one kind."
        )
    if texts and jsons:
        raise CorpusError(
            f"{name} holds both .txt ({len(texts)}) and .json ({len(jsons)}) transcripts. "
            "Keep one kind per corpus: move the other files to their own folder."
        )
    if texts or jsons:
        raws = [_text_raw(n, d) for n, d in sorted(texts.items())]
        raws += _json_raws(dict(sorted(jsons.items())), text_column, id_column)
        return _finish(raws, _manifest(csvs, name), sides, protect, id_column, name, subset)
    tables = {**csvs, **jsonls}
    if len(tables) > 1:
        raise CorpusError(
            f"{name} holds several tables {sorted(tables)} and no .txt files; give one CSV/JSONL "
            f"file, or .txt transcripts with a {MANIFEST}."
        )
    if not tables:
        raise CorpusError(
            f"No transcripts in {name}: expected .txt files (+ {MANIFEST}), one CSV/JSONL table, "
            "or Motley Fool .json files."
        )
    ((tname, data),) = tables.items()
    frame = _read_table(data, tname)
    if tname == MANIFEST and text_column not in frame.columns:
        raise CorpusError(
            f"{name} has a {MANIFEST} but no .txt transcripts: put the .txt files beside it "
            f"or in a {DOCS_FOLDER}/ subfolder."
        )
    return _finish(
        _table_raws(frame, tname, text_column, id_column), None, sides, protect, id_column, name
    )


def _folder_files(folder: Path) -> dict[str, bytes]:
    """Files of ``folder`` and of its ``docs/`` subfolder (a name in both is an error)."""
    files: dict[str, bytes] = {}
    for sub in (folder, folder / DOCS_FOLDER):
        if not sub.is_dir():
            continue
        for p in sorted(sub.iterdir()):
            if p.is_file() and not p.name.startswith("."):
                if p.name in files:
                    raise CorpusError(
                        f"{p.name} is both in {folder} and in {sub}; keep one of them."
                    )
                files[p.name] = p.read_bytes()
    return files


def load_corpus(
    path: str | Path,
    protect: str = DEFAULT_PROTECT,
    text_column: str = "text",
    id_column: str = "doc_id",
) -> Corpus:
    """Load a folder, a CSV/JSONL table or Motley Fool JSON (module docstring) into a Corpus.

    ``protect`` names the metadata column whose values swapping must hide (c_i, SPEC §1).
    ``data/sample`` (or ``sample``) names the bundled sample wherever this runs, unless such a
    folder exists there (``paths.resolve_corpus``).
    """
    path = resolve_corpus(path)
    if not path.exists():
        raise CorpusError(f"{path} does not exist. Give a folder of transcripts or a file.")
    if path.is_dir():
        return _build(_folder_files(path), protect, text_column, id_column, path.name)
    if path.name.lower() in (ALIASES, EXECUTIVES, MANIFEST):
        raise CorpusError(f"{path.name} describes a corpus; load its folder {path.parent} instead.")
    files = {path.name: path.read_bytes()}
    beside = [ALIASES, EXECUTIVES]
    if path.suffix.lower() in (".txt", ".json"):
        beside.append(MANIFEST)
    for extra in beside:
        if (path.parent / extra).is_file():
            files[extra] = (path.parent / extra).read_bytes()
    return _build(files, protect, text_column, id_column, path.stem, subset=True)


def load_uploaded(
    files: list[tuple[str, bytes]],
    protect: str = DEFAULT_PROTECT,
    text_column: str = "text",
    id_column: str = "doc_id",
) -> Corpus:
    """Load uploads given as (file name, raw bytes): .txt files + one manifest CSV (+ aliases.csv,
    executives.csv), or one CSV/JSONL table, or Motley Fool .json files."""
    if not files:
        raise CorpusError(
            "No files uploaded. Upload .txt transcripts with a manifest.csv, "
            "a CSV/JSONL table, or Motley Fool .json files."
        )
    named: dict[str, bytes] = {}
    for fname, data in files:
        base = PurePath(fname.replace("\\", "/")).name
        if base in named:
            raise CorpusError(f"Two uploaded files are named {base!r}; rename one.")
        named[base] = data
    return _build(named, protect, text_column, id_column, "upload")


def check_swappable(corpus: Corpus) -> None:
    """Raise ``CorpusError`` unless swapping is possible: ≥ 2 documents and ≥ 2 distinct values
    of the protected column (swaps pair chunks with different values, SPEC §3 constraint 1)."""
    if len(corpus) < 2:
        raise CorpusError(
            f"The corpus has {len(corpus)} document(s); swapping needs at least 2 documents "
            f"with different {corpus.protect!r}. Add more transcripts."
        )
    values = {corpus.protected_value(d) for d in corpus.documents}
    if len(values) < 2:
        raise CorpusError(
            f"All {len(corpus)} documents have the same {corpus.protect!r} ({values.pop()!r}); "
            "swapping needs at least 2 different values. Add other companies' transcripts or "
            "choose another column to protect."
        )


#: Optional folder beside ``docs/`` with other texts of the same companies (SPEC §8).
ATTACKER_FOLDER = "attacker"


def attacker_folder(path: str | Path) -> Path | None:
    """The ``attacker/`` folder ``load_attacker`` reads for the corpus at ``path``, or None when
    there is none (a caller can tell whether there is a reading without parsing it)."""
    path = resolve_corpus(path)
    folder = (path if path.is_dir() else path.parent) / ATTACKER_FOLDER
    return folder if folder.is_dir() else None


def load_attacker(
    path: str | Path,
    protect: str = DEFAULT_PROTECT,
    text_column: str = "text",
    id_column: str = "doc_id",
) -> Corpus | None:
    """The reading attacker's corpus: the ``attacker/`` folder of a corpus folder (or beside a
    corpus file), loaded like a corpus; ``aliases.csv``/``executives.csv`` of the corpus folder
    apply unless ``attacker/`` has its own. ``None`` when there is no such folder."""
    files = attacker_files(path)
    if files is None:
        return None
    return _build(files, protect, text_column, id_column, attacker_label(path))


def attacker_files(path: str | Path) -> dict[str, bytes] | None:
    """{name: bytes} of every file ``load_attacker`` parses for the corpus at ``path`` (its
    ``attacker/`` folder, and the corpus's aliases and executives unless it has its own), or
    None: what a kept reading is keyed by (``publish/evaluate.fit_reading``)."""
    folder = attacker_folder(path)
    if folder is None:
        return None
    files = _folder_files(folder)
    for extra in (ALIASES, EXECUTIVES):
        if extra not in files and (folder.parent / extra).is_file():
            files[extra] = (folder.parent / extra).read_bytes()
    return files


def with_corpus_side_files(reading: dict[str, bytes], corpus: dict[str, bytes]) -> dict[str, bytes]:
    """A reading's files and the corpus's aliases and executives it has none of its own of:
    ``attacker_files``' rule, for a reading uploaded beside an uploaded corpus (the app)."""
    names = {Path(name).name for name in reading}
    extra = {name: data for name, data in corpus.items()
             if Path(name).name in (ALIASES, EXECUTIVES) and Path(name).name not in names}
    return {**reading, **extra}


def attacker_label(path: str | Path) -> str:
    """The name ``load_attacker`` gives the reading in its messages: ``<corpus>/attacker``."""
    path = resolve_corpus(path)
    return f"{(path if path.is_dir() else path.parent).name}/{ATTACKER_FOLDER}"
