"""Leak scan of a release (SPEC §11): direct identifiers that survived into the released text.

Before anything is written to ``released/``, every identifier of every document's company is
searched in every released chunk (and in the published manifest values): the protected value,
the company's aliases (``aliases.csv`` plus the forms derived from the company name), its ticker,
its web domains, the names of its executives (listed in ``executives.csv`` or detected from
the transcript) and of the analysts its participant lists name, each as a whole word.

Two kinds of hit, reported separately:

* **exact case** — the identifier as written ("Dolby", "DLB", "Craig Lampo");
* **any case** — the same letters in another case ("DOLBY", "dolby").

Common words (issue 23 item 3). An identifier whose words are all common English by
``wordfreq`` (``text.words.is_common_word``; no hand list) is never searched in lower case:
"regions", "travelers", "target" are words. It is searched as written and in capitals; when
it is one word, an occurrence is a hit only where it names the company (``leak_context``:
capitalised mid-sentence, followed by a possessive or a corporate suffix, or in a participant
line), so "in the Finger Lakes regions" and "domestic travelers" pass while "Regions Bank",
"at Regions we" and "Travelers' combined ratio" are hits. A ticker that is an everyday word
("ALL", "NOW") counts only in ticker context. Other identifiers of 4+ letters are also searched
in any case; web domains always (a domain has no case).

Executives are searched by full name (with and without middle initials), given name or its
usual nickname plus surname, and surname alone (3+ letters; a common-word surname such as
"Price" only where it names). A surname alone and an analyst's name are searched only in their
own company's documents: elsewhere they are far more often someone else ("Frost & Sullivan"),
or an analyst who covers both companies. A given name alone is not searched: "Thanks, Craig" is
as likely another call's analyst as the executive, and the suppression step already replaced the
executives' given names in their own documents. Placeholders such as ``[Company Name]`` are never
searched inside.

Shapes (issue 20 item 3, ``leak_context.shape_hits``): social-media handles, residue around a
placeholder ("[Company Name] Inc", "[Company Name].com") and analysts' participant lines are
hits of their own kinds, in every document.

A hit is keyed by (document, chunk, identifier, case): the analyst accepts hits one by one or
by identifier (``group_hits``: one group per identifier with counts and example contexts, for
a bulk accept) — CLI ``--accept-leaks FILE``, a CSV with those columns.
"""

from __future__ import annotations

import csv
import io
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import PLACEHOLDER_PATTERN
from ..corpus import Corpus
from ..errors import ConfigError
from ..text.alternation import alternation
from ..text.identifiers import NICKNAMES, document_aliases, is_domain
from ..text.words import is_common_word
from .leak_context import names_company, shape_hits, ticker_context, ticker_is_word

#: Minimum number of letters for an identifier to be searched in any case as well.
MIN_LETTERS_ANY_CASE = 4
#: Characters of context shown on each side of a hit.
CONTEXT = 40
#: Columns of a leak list (key/leaks.csv) and of an accept file.
HIT_COLUMNS = ("document", "chunk", "identifier", "case", "kind", "found", "own_company", "context")
KEY_COLUMNS = ("document", "chunk", "identifier", "case")
#: Kinds of identifier, in the order that names a string found under several kinds.
KINDS = ("protected", "ticker", "domain", "alias", "executive", "surname", "analyst")
#: Kinds of shape (``leak_context.SHAPES``): found by their form, not from a list of names.
SHAPE_KINDS = ("handle", "residue", "participant line")
#: Kinds searched only in their own company's documents: a bare surname elsewhere is far more
#: often someone else ("Frost & Sullivan" in another call is not that company's Sullivan), and
#: an analyst often covers several of the corpus's companies.
OWN_ONLY_KINDS = frozenset({"surname", "analyst"})
_INITIAL = re.compile(r"^[A-Z]\.?$")
_TITLE = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Prof|Sir)\.?$")
_PLACEHOLDER = re.compile(PLACEHOLDER_PATTERN)


@dataclass(frozen=True)
class LeakTerm:
    """One identifier to search for, with the documents (original ids) it identifies."""

    text: str
    kind: str  # one of KINDS
    owners: frozenset[str] = field(default_factory=frozenset)

    @property
    def common(self) -> bool:
        """Whether every word of the identifier is common English (``wordfreq``); never a domain."""
        if self.kind == "domain":
            return False
        if self.kind == "ticker":
            return ticker_is_word(self.text)
        return is_common_word(self.text)

    @property
    def any_case(self) -> bool:
        """Whether the identifier is also searched case-insensitively (module docstring)."""
        if self.kind == "domain":
            return True
        letters = sum(ch.isalpha() for ch in self.text)
        return letters >= MIN_LETTERS_ANY_CASE and not self.common

    @property
    def in_capitals(self) -> str | None:
        """The capitals form searched for a common identifier ("REGIONS"), if it differs."""
        upper = self.text.upper()
        letters = sum(ch.isalpha() for ch in self.text)
        if not self.common or upper == self.text or letters < MIN_LETTERS_ANY_CASE:
            return None
        return upper

    def counts_at(self, text: str, start: int, end: int) -> bool:
        """Whether an occurrence at ``text[start:end]`` is a hit (module docstring)."""
        if not self.common or self.kind == "domain":
            return True
        if self.kind == "ticker":
            return ticker_context(text, start, end)
        return len(self.text.split()) > 1 or names_company(text, start, end)


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
    """The surname of a full name when it may be searched alone (3+ letters)."""
    core = [t.strip(",") for t in name.split() if not _INITIAL.match(t.strip(",")) and not _TITLE.match(t)]
    if len(core) < 2 or len(core[-1]) < 3:
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
        for name in doc.analysts:
            for form in _executive_forms(name):
                add(form, "analyst", doc.doc_id)
    merged: dict[str, LeakTerm] = {}
    for (text, kind), owners in sorted(found.items(), key=lambda kv: (kv[0][0], KINDS.index(kv[0][1]))):
        prior = merged.get(text)  # one term per string, named by its first kind in KINDS
        owners_all = frozenset(owners) | (prior.owners if prior else frozenset())
        merged[text] = LeakTerm(text, prior.kind if prior else kind, owners_all)
    return list(merged.values())


def _pattern(terms: Iterable[LeakTerm], flags: int = 0) -> re.Pattern[str] | None:
    """Whole-word search for the terms, longest first, words apart by any white space; one
    prefix tree (``text.alternation``): an alternation of every term was text × terms."""
    alternatives = alternation({t.text for t in terms}, whitespace=True, fold=bool(flags & re.IGNORECASE))
    if alternatives is None:
        return None
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", flags)


@dataclass(frozen=True)
class LeakScanner:
    """Compiled search for a set of terms: ``scan(text)`` → [(start, end, term, case)]."""

    terms: tuple[LeakTerm, ...]
    # compiled in __post_init__: term tables by exact text, lower case and capitals, and patterns
    _exact: dict[str, LeakTerm] = field(init=False, repr=False, compare=False)
    _folded: dict[str, LeakTerm] = field(init=False, repr=False, compare=False)
    _capitals: dict[str, LeakTerm] = field(init=False, repr=False, compare=False)
    _exact_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _folded_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _capitals_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        exact = {t.text: t for t in self.terms}
        folded = {t.text.lower(): t for t in self.terms if t.any_case}
        capitals = {c: t for t in self.terms if (c := t.in_capitals) and c not in exact}
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_folded", folded)
        object.__setattr__(self, "_capitals", capitals)
        object.__setattr__(self, "_exact_re", _pattern(self.terms))
        object.__setattr__(
            self, "_folded_re", _pattern([t for t in self.terms if t.any_case], re.IGNORECASE)
        )
        object.__setattr__(
            self, "_capitals_re", _pattern([LeakTerm(c, t.kind) for c, t in capitals.items()])
        )

    def scan(self, text: str) -> list[tuple[int, int, LeakTerm, str]]:
        blocked = [m.span() for m in _PLACEHOLDER.finditer(text)]
        starts = [s for s, _ in blocked]

        def free(a: int, b: int) -> bool:  # no placeholder overlaps [a, b) (sorted, disjoint)
            k = bisect_left(starts, b)
            return k == 0 or blocked[k - 1][1] <= a

        out, seen = [], set()
        searches = (
            (self._exact_re, self._exact, "exact case", False),
            (self._capitals_re, self._capitals, "any case", False),
            (self._folded_re, self._folded, "any case", True),
        )
        for pattern, table, case, fold in searches:
            if pattern is None:
                continue
            for m in pattern.finditer(text):
                if m.span() in seen or not free(*m.span()):
                    continue
                key = " ".join(m.group(0).split())
                term = table[key.lower() if fold else key]
                if case == "exact case" or fold is False:
                    if not term.counts_at(text, *m.span()):
                        continue
                out.append((m.start(), m.end(), term, case))
                seen.add(m.span())
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
    """Hits of ``terms`` and of the leak shapes in the released ``documents`` ({pseudonym: chunk
    texts}) and manifest.

    ``originals``: pseudonym → original document id (to tell own-company hits from others).
    ``manifest``: pseudonym → published column values, searched like text (chunk -1).
    """
    scanner = LeakScanner(tuple(terms))
    hits: list[LeakHit] = []

    def record(doc: str, chunk: int, text: str, where: str | None = None) -> None:
        found = []
        for start, end, term, case in scanner.scan(text):
            own = originals.get(doc) in term.owners
            if term.kind in OWN_ONLY_KINDS and not own:
                continue
            found.append((start, end, term.text, case, term.kind, own))
        for start, end, kind, identifier in shape_hits(text):
            found.append((start, end, identifier, "exact case", kind, False))
        for start, end, identifier, case, kind, own in sorted(found, key=lambda f: f[:2]):
            context = f"{where}: {text}" if where else _context(text, start, end)
            hits.append(
                LeakHit("manifest" if where else doc, -1 if where else chunk, identifier, case,
                        kind, text[start:end], own, context)
            )

    for doc, chunks in documents.items():
        for i, text in enumerate(chunks):
            record(doc, i, text)
    for doc, values in (manifest or {}).items():
        for value in values.values():
            record(doc, -1, str(value), where=doc)
    return hits


@dataclass(frozen=True)
class LeakGroup:
    """All hits of one identifier: counts, where, a few contexts, and their keys (bulk accept)."""

    identifier: str
    kind: str
    hits: int
    documents: int
    own_company: int  # hits in the identifier's own company's documents
    cases: dict[str, int]  # "exact case" / "any case" -> hits
    examples: tuple[str, ...]  # contexts of the first hits, at most one per document first
    keys: tuple[tuple[str, str, str, str], ...]

    def sentence(self) -> str:
        cases = ", ".join(f"{n} {case}" for case, n in sorted(self.cases.items()))
        return (
            f"{self.kind} {self.identifier!r}: {self.hits} hit(s) in {self.documents} "
            f"document(s) ({cases}; {self.own_company} in its own company's documents)"
        )


def group_hits(hits: Sequence[LeakHit], examples: int = 3) -> list[LeakGroup]:
    """The hits grouped by identifier (and kind), most hits first, with counts and up to
    ``examples`` contexts each (from different documents first): what the leak gate shows."""
    groups: dict[tuple[str, str], list[LeakHit]] = {}
    for hit in hits:
        groups.setdefault((hit.identifier, hit.kind), []).append(hit)
    out = []
    for (identifier, kind), members in groups.items():
        cases: dict[str, int] = {}
        for h in members:
            cases[h.case] = cases.get(h.case, 0) + 1
        first_per_doc = list({h.document: h for h in reversed(members)}.values())[::-1]
        rest = [h for h in members if h not in first_per_doc]
        shown = tuple(h.context for h in [*first_per_doc, *rest][:examples])
        out.append(
            LeakGroup(identifier, kind, len(members), len({h.document for h in members}),
                      sum(h.own_company for h in members), cases, shown,
                      tuple(h.key for h in members))
        )
    return sorted(out, key=lambda g: (-g.hits, g.identifier, g.kind))


def hits_csv(hits: Sequence[LeakHit], accepted: AbstractSet[tuple[str, ...]] = frozenset()) -> str:
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
