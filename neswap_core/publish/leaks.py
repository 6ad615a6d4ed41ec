"""Leak scan of a release (SPEC §11): direct identifiers that survived into the released text.

Before anything is written to ``released/``, every identifier of every document's company is
searched in every released chunk (and in the published manifest values): the protected value,
the company's aliases (``aliases.csv`` plus the forms derived from the company name), its ticker,
its web domains, and the names of its executives (listed in ``executives.csv`` or detected from
the transcript), each as a whole word.

Two kinds of hit, reported separately:

* **exact case** — the identifier as written ("Dolby", "DLB", "Craig Lampo");
* **any case** — the same letters in another case ("DOLBY", "dolby"). This search is made only
  where it is not absurd: for identifiers with at least 4 letters that are not a common English
  word or stop word ("Apple", "Target", "Block" and tickers such as "ALL" or "NOW" are searched
  in exact case only, otherwise every "target" and "now" would be a hit). Web domains are
  always searched in any case (a domain has no case).

Executives are searched by full name (with and without middle initials), given name or its
usual nickname plus surname, and surname alone (3+ letters, not a common word). A surname alone
is searched only in the executive's own company's documents: elsewhere it is far more often
someone else ("Frost & Sullivan"). A given name alone is not searched: "Thanks, Craig" is as likely another call's analyst as the executive,
and the suppression step already replaced the executives' given names in their own documents.
Placeholders such as ``[Company Name]`` are never searched inside.

A hit is keyed by (document, chunk, identifier, case): the analyst accepts hits one by one
(CLI ``--accept-leaks FILE``, a CSV with those columns; the app: a checkbox per hit).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import PLACEHOLDER_PATTERN
from ..corpus import Corpus
from ..errors import ConfigError
from ..text.identifiers import (
    COMMON_TICKER_WORDS,
    COMMON_WORDS,
    NICKNAMES,
    document_aliases,
    is_domain,
)

#: Minimum number of letters for an identifier to be searched in any case as well.
MIN_LETTERS_ANY_CASE = 4
#: Characters of context shown on each side of a hit.
CONTEXT = 40
#: Columns of a leak list (key/leaks.csv) and of an accept file.
HIT_COLUMNS = ("document", "chunk", "identifier", "case", "kind", "found", "own_company", "context")
KEY_COLUMNS = ("document", "chunk", "identifier", "case")
#: Kinds of identifier, in the order that names a string found under several kinds.
KINDS = ("protected", "ticker", "domain", "alias", "executive", "surname")
#: Kinds searched only in their own company's documents: a bare surname elsewhere is far more
#: often someone else ("Frost & Sullivan" in another call is not that company's Sullivan).
OWN_ONLY_KINDS = frozenset({"surname"})
_INITIAL = re.compile(r"^[A-Z]\.?$")
_TITLE = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Prof|Sir)\.?$")
_PLACEHOLDER = re.compile(PLACEHOLDER_PATTERN)


def _stop_words() -> frozenset[str]:
    try:
        from spacy.lang.en.stop_words import STOP_WORDS
    except ImportError:  # pragma: no cover - spaCy is a dependency
        return frozenset()
    return frozenset(STOP_WORDS)


_COMMON = COMMON_WORDS | {w.lower() for w in COMMON_TICKER_WORDS} | _stop_words()


@dataclass(frozen=True)
class LeakTerm:
    """One identifier to search for, with the documents (original ids) it identifies."""

    text: str
    kind: str  # one of KINDS
    owners: frozenset[str] = field(default_factory=frozenset)

    @property
    def any_case(self) -> bool:
        """Whether the identifier is also searched case-insensitively (module docstring)."""
        if self.kind == "domain":
            return True
        letters = sum(ch.isalpha() for ch in self.text)
        words = self.text.lower().split()
        return letters >= MIN_LETTERS_ANY_CASE and not all(w in _COMMON for w in words)


@dataclass(frozen=True)
class LeakHit:
    """An identifier found in a released chunk: where (pseudonymous), what, and which case."""

    document: str  # pseudonymous document id, or "manifest"
    chunk: int  # position of the chunk in the released document (-1: the manifest)
    identifier: str
    case: str  # "exact case" or "any case"
    kind: str
    found: str  # the text as it appears
    own_company: bool  # the identifier belongs to this document's own company
    context: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.document, str(self.chunk), self.identifier, self.case)

    def sentence(self) -> str:
        where = "the manifest" if self.chunk < 0 else f"{self.document}, chunk {self.chunk}"
        whose = "its own company's" if self.own_company else "another company's"
        return f"{where}: {self.kind} {self.identifier!r} ({whose}, {self.case}) in “{self.context}”"


def _executive_forms(name: str) -> list[str]:
    """Full name, name without initials/titles, (nick)name + surname, surname alone."""
    tokens = [t.strip(",") for t in name.split() if t.strip(",")]
    tokens = [t for t in tokens if not _TITLE.match(t)]
    core = [t for t in tokens if not _INITIAL.match(t)]
    forms = [" ".join(tokens)]
    if len(core) >= 2:
        given, surname = core[0], core[-1]
        forms += [" ".join(core), f"{given} {surname}"]
        forms += [f"{nick} {surname}" for nick in NICKNAMES.get(given, ())]
    return [f for f in forms if " " in f] if core else []


def _surname(name: str) -> str | None:
    """The surname of a full name when it may be searched alone (3+ letters, not a common word)."""
    core = [t.strip(",") for t in name.split() if not _INITIAL.match(t.strip(",")) and not _TITLE.match(t)]
    if len(core) < 2 or len(core[-1]) < 3 or core[-1].lower() in _COMMON:
        return None
    return core[-1]


def leak_terms(
    corpus: Corpus, people: Mapping[str, Sequence[str]] | None = None
) -> list[LeakTerm]:
    """Every identifier of every document's company (module docstring), merged across documents.

    ``people``: extra person names per original document id (e.g. detected executives).
    """
    found: dict[tuple[str, str], set[str]] = {}

    def add(text: str, kind: str, owner: str) -> None:
        text = " ".join(str(text).split())
        if text and not _PLACEHOLDER.fullmatch(text):
            found.setdefault((text, kind), set()).add(owner)

    for doc in corpus.documents:
        add(corpus.protected_value(doc), "protected", doc.doc_id)
        for key in ("ticker", "symbol"):
            if doc.metadata.get(key):
                add(doc.metadata[key], "ticker", doc.doc_id)
        for alias in document_aliases(doc.metadata, doc.aliases):
            add(alias, "domain" if is_domain(alias) else "alias", doc.doc_id)
        names = list(doc.executives) + list((people or {}).get(doc.doc_id, ()))
        for name in names:
            for form in _executive_forms(name):
                add(form, "executive", doc.doc_id)
            if surname := _surname(name):
                add(surname, "surname", doc.doc_id)
    merged: dict[str, LeakTerm] = {}
    for (text, kind), owners in sorted(found.items(), key=lambda kv: (kv[0][0], KINDS.index(kv[0][1]))):
        prior = merged.get(text)  # one term per string, named by its first kind in KINDS
        owners_all = frozenset(owners) | (prior.owners if prior else frozenset())
        merged[text] = LeakTerm(text, prior.kind if prior else kind, owners_all)
    return list(merged.values())


def _pattern(terms: Iterable[LeakTerm], flags: int = 0) -> re.Pattern[str] | None:
    bodies = sorted({t.text for t in terms}, key=lambda s: (-len(s), s))
    if not bodies:
        return None
    alternatives = "|".join(r"\s+".join(re.escape(w) for w in b.split()) for b in bodies)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", flags)


@dataclass(frozen=True)
class LeakScanner:
    """Compiled search for a set of terms: ``scan(text)`` → [(start, end, term, case)]."""

    terms: tuple[LeakTerm, ...]

    def __post_init__(self) -> None:
        exact = {t.text: t for t in self.terms}
        folded = {t.text.lower(): t for t in self.terms if t.any_case}
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_folded", folded)
        object.__setattr__(self, "_exact_re", _pattern(self.terms))
        object.__setattr__(
            self, "_folded_re", _pattern([t for t in self.terms if t.any_case], re.IGNORECASE)
        )

    def scan(self, text: str) -> list[tuple[int, int, LeakTerm, str]]:
        blocked = [m.span() for m in _PLACEHOLDER.finditer(text)]

        def free(a: int, b: int) -> bool:
            return not any(a < e and s < b for s, e in blocked)

        out, seen = [], set()
        if self._exact_re is not None:
            for m in self._exact_re.finditer(text):
                term = self._exact[" ".join(m.group(0).split())]
                if free(*m.span()):
                    out.append((m.start(), m.end(), term, "exact case"))
                    seen.add(m.span())
        if self._folded_re is not None:
            for m in self._folded_re.finditer(text):
                if m.span() in seen or not free(*m.span()):
                    continue
                term = self._folded[" ".join(m.group(0).split()).lower()]
                out.append((m.start(), m.end(), term, "any case"))
        return sorted(out, key=lambda h: (h[0], h[1]))


def _context(text: str, start: int, end: int) -> str:
    left = text[max(0, start - CONTEXT) : start]
    right = text[end : end + CONTEXT]
    return " ".join(f"{left}[[{text[start:end]}]]{right}".split())


def scan_release(
    documents: Mapping[str, Sequence[str]],
    terms: Sequence[LeakTerm],
    originals: Mapping[str, str],
    manifest: Mapping[str, Mapping[str, str]] | None = None,
) -> list[LeakHit]:
    """Hits of ``terms`` in the released ``documents`` ({pseudonym: chunk texts}) and manifest.

    ``originals``: pseudonym → original document id (to tell own-company hits from others).
    ``manifest``: pseudonym → published column values, searched like text (chunk -1).
    """
    scanner = LeakScanner(tuple(terms))
    hits: list[LeakHit] = []

    def record(doc: str, chunk: int, text: str) -> None:
        for start, end, term, case in scanner.scan(text):
            own = originals.get(doc) in term.owners
            if term.kind in OWN_ONLY_KINDS and not own:
                continue
            hits.append(
                LeakHit(doc, chunk, term.text, case, term.kind, text[start:end], own,
                        _context(text, start, end))
            )

    for doc, chunks in documents.items():
        for i, text in enumerate(chunks):
            record(doc, i, text)
    for doc, values in (manifest or {}).items():
        for value in values.values():
            for start, end, term, case in scanner.scan(str(value)):
                hits.append(
                    LeakHit("manifest", -1, term.text, case, term.kind, str(value)[start:end],
                            originals.get(doc) in term.owners, f"{doc}: {value}")
                )
    return hits


def hits_csv(hits: Sequence[LeakHit], accepted: set[tuple[str, str, str, str]] = frozenset()) -> str:
    """The leak list as CSV (key/leaks.csv), with an ``accepted`` column."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*HIT_COLUMNS, "accepted"], lineterminator="\n")
    writer.writeheader()
    for hit in hits:
        writer.writerow({**asdict(hit), "accepted": "yes" if hit.key in accepted else ""})
    return buf.getvalue()


def read_accepted(path: str | Path) -> set[tuple[str, str, str, str]]:
    """Accepted hits from a CSV with columns document, chunk, identifier, case (e.g. an edited
    copy of key/leaks.csv: every row listed is accepted)."""
    path = Path(path)
    try:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    except FileNotFoundError as exc:
        raise ConfigError(f"The accept-leaks file {path} does not exist.") from exc
    if rows and not set(KEY_COLUMNS) <= set(rows[0]):
        raise ConfigError(
            f"The accept-leaks file {path} needs the columns {', '.join(KEY_COLUMNS)} "
            "(copy the rows you accept from key/leaks.csv)."
        )
    return {tuple(str(r[c]).strip() for c in KEY_COLUMNS) for r in rows}  # type: ignore[misc]


def unaccepted(hits: Sequence[LeakHit], accepted: Iterable[tuple[str, ...]]) -> list[LeakHit]:
    """The hits the analyst has not accepted yet (they block the export)."""
    ok = set(accepted)
    return [h for h in hits if h.key not in ok]
