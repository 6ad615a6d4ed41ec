"""People without a list: the executives of each call, found in its own text (issue 10, SPEC §2.3).

Sources, in this order (the executive index of ``[Executive #]`` follows it):

1. ``executives.csv`` rows (when the analyst has the file) and the participant lists and speaker
   lines of the transcript's layout (``layouts.py``): attached by the loader;
2. spaCy PERSON entities in **title context**, detected here: "our CEO, X", "X, our Chief
   Financial Officer", "I'll turn it over to X", "joined by X and Y", "with me today are X",
   "I'm X", "This is X", "Thank you, X", "X will review ...".

Efficiency (decision): only sentences holding a trigger word (a title, "turn"/"hand" ... "to",
"joined", "with me", "I'm", "this is", "thank") go through the NER model, in one ``nlp.pipe``
over all documents and through the on-disk entity cache, so a cold dev-corpus run tags about a
tenth of its text and a warm run none. Only PERSON spans are used.

Filters (decision): a detected name must look like a name (capitalised tokens, no digits), may not
touch a placeholder, a company alias or a job-title word, and at most four tokens; "Operator" and
"Unidentified ..." are never people, nor is page furniture ("EDITED TRANSCRIPT": words of
publishing and document structure, ``participants.looks_like_name``; furniture lines are blanked
before layouts are read, ``furniture.py``). A detected name that is the same person as a known one (same
surname and the same or a nickname-related given name, or the given name alone) is merged into
it, so indices stay stable. Outside participants (analysts) are not executives; in prose texts
they are rarely in title context, and the layouts' lists name them when present.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..config import DEFAULT_NER_BATCH, PLACEHOLDER_PATTERN
from ..corpus import Corpus
from .layouts import looks_like_name
from .nicknames import FORMAL, NICKNAMES

_TITLE = (
    r"(?:CEO|CFO|COO|CTO|CIO|CMO|CRO|CAO|CHRO|EVP|SVP|VP|chief|officer|president|chairman|"
    r"chairwoman|chair|treasurer|controller|head|director|founder|co-founder|general counsel|"
    r"secretary|investor relations|IR|executive)"
)
_TRIGGER = re.compile(
    rf"\b{_TITLE}\b|\b(?:turn|turning|hand|handing|pass|passing|joined|joining|with me|"
    r"I'm|I am|this is|my name is|thank|thanks|introduce|as|will|over to|and I|like for|ask)\b",
    re.I,
)
_BEFORE = re.compile(
    rf"(?:\b(?:our|the|company's|as|new|interim)\s+(?:[\w&'-]+\s+){{0,5}}?{_TITLE}s?,?\s*(?:and\s+)?"
    r"|\b(?:over|back|along|it)\s+to\s+|\bturn\s+(?:it\s+)?(?:over\s+)?to\s+"
    r"|\b(?:joined|accompanied)\s+(?:today\s+|here\s+|on\s+the\s+call\s+)?by\b[^.;:]*"
    r"|\b(?:with\s+me|joining\s+(?:me|us)|with\s+us)\b[^.;:]*"
    r"|\b(?:I'm|I\s+am|this\s+is|my\s+name\s+is|introduce)\s+"
    r"|\bthanks?(?:\s+you)?(?:\s+very\s+much)?,?\s+)$",
    re.I,
)
_AFTER = re.compile(
    rf"^(?:'s)?,?\s+(?:(?:who\s+is\s+|who's\s+|is\s+)?(?:our|the|its|company's)\s+|as\s+)?"
    rf"(?:[\w&'-]+\s+){{0,4}}?{_TITLE}\b"
    r"|^,?\s+(?:will|who\s+will)\s+(?:now\s+|then\s+|also\s+)?(?:review|discuss|walk|cover|"
    r"provide|take|give|talk|go|share|update|comment|speak)\b|^\s+here\b",
    re.I,
)
#: Strong hand-over contexts: how executives pass the word in prepared remarks. A capitalised
#: name here counts even when spaCy does not tag it PERSON (it tags "Jagtar" or "Terrence" ORG).
_SAID = (
    r"(?:mentioned|said|noted|discussed|highlighted|indicated|described|explained|outlined|"
    r"covered|stated|pointed\s+out|alluded|talked|shared|reviewed|touched|will\s+discuss|"
    r"will\s+cover|will\s+explain|will\s+review)"
)
_WILL = (
    r"(?:start|review|discuss|provide|follow|give|walk|take|cover|break|share|talk|comment|"
    r"update|go|present|close|speak|lead|begin|run|summarize|summarise|outline|detail|offer)"
)


def _name(k: int) -> str:
    token = r"[A-Z][a-z]+(?:['’-][A-Za-z]+)?"
    return rf"(?P<n{k}>{token}(?:\s+{token}){{0,2}})"


_HANDOVER = re.compile(
    rf"\b[Aa]s\s+{_name(1)}\s+(?:just\s+|also\s+|earlier\s+|has\s+|had\s+|already\s+|"
    rf"previously\s+|will\s+)*{_SAID}\b"
    rf"|(?:^|[,;]\s*|\b(?:then|and|now|next|first)\s+){_name(2)}\s+will\s+(?:now\s+|then\s+|"
    rf"also\s+|shortly\s+)?{_WILL}\b"
    rf"|(?i:\bover\s+to\s+you,?\s+){_name(3)}\b"
    rf"|(?i:\b(?:hand|turn|pass|handing|turning|passing)\s+(?:it|the\s+call|things)\s+(?:over\s+|"
    rf"back\s+)?to\s+){_name(4)}\b"
    rf"|(?:^|(?i:\bbefore\s+|\bboth\s+)){_name(5)}\s+and\s+I\b"
    rf"|(?i:\b(?:like\s+for|ask)\s+){_name(6)}\s+to\b",
)
_NOT_NAMES = frozenset(
    """
    I We Our The This That It You They He She Management Operator Company Everyone Team Board
    Today Now Then First Next Finally Again Also Let Please Thanks Thank So And But Before After
    With Both Slide Page Chart Table Europe America Asia China
    """.split()
)
_BLOCKING = ("Date",)  # spaCy tags "Edmund" PRODUCT and "Heath" GPE: only dates block
_TITLE_WORD = re.compile(rf"^{_TITLE}$", re.I)
_AFTER_TITLE = re.compile(rf"\b(?:our|the|its)\s+(?:[\w&'-]+\s+){{0,5}}?{_TITLE}s?,\s*$", re.I)
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")
_PLACEHOLDER = re.compile(PLACEHOLDER_PATTERN)
_NOT_PEOPLE = re.compile(r"^(?:operator|unidentified|unknown|moderator|everyone|all)\b", re.I)
_POSSESSIVE = re.compile(r"['’]s$")
_CORPORATE = re.compile(
    r"\b(?:Group|Worldgroup|Inc|Corp|Corporation|Company|Holdings|Partners|Capital|Technologies|"
    r"Systems|Solutions|Labs|Media|Networks|Bank|Fund|Health|Energy|International|Global)\b"
)


def trigger_sentences(text: str) -> list[str]:
    """Sentences of ``text`` that could name a person in title context (module docstring)."""
    return [s.strip() for s in _SENTENCE.findall(text) if _TRIGGER.search(s)]


def _clean_name(name: str) -> str | None:
    name = _POSSESSIVE.sub("", " ".join(name.split())).strip(" ,;:")
    if not name or _PLACEHOLDER.search(name) or _NOT_PEOPLE.match(name):
        return None
    tokens = name.split()
    if len(tokens) > 4 or not looks_like_name(name) or any(_TITLE_WORD.match(t) for t in tokens):
        return None
    if _CORPORATE.search(name):
        return None
    return name


def names_in_title_context(
    sentence: str,
    spans: Sequence[tuple[int, int]],
    blocked: Sequence[tuple[int, int]] = (),
    organisations: Sequence[tuple[int, int]] = (),
) -> list[str]:
    """Names of ``sentence`` in title context, cleaned, in order: PERSON ``spans`` (start, end)
    in title context, ORG ``organisations`` right after a title ("our CEO, X"), and capitalised
    names in a strong hand-over context unless they lie in a ``blocked`` span (a date)."""
    found: list[tuple[int, str]] = []
    for start, end in spans:
        before, after = sentence[max(0, start - 160) : start], sentence[end : end + 80]
        if _BEFORE.search(before) or _AFTER.search(after):
            found.append((start, sentence[start:end]))
    for start, end in organisations:  # "our CEO, Hikmet Ersek" comes out ORG
        text = sentence[start:end]
        if (
            2 <= len(text.split()) <= 3
            and _AFTER_TITLE.search(sentence[:start])
            and not text.isupper()
        ):
            found.append((start, text))
    for match in _HANDOVER.finditer(sentence):
        start, end = next((match.span(g) for g in match.groupdict() if match.group(g)), (0, 0))
        tokens = sentence[start:end].split()
        while tokens and tokens[0] in _NOT_NAMES:  # "Before Heath and I": the name is Heath
            start = sentence.index(tokens[1], start + len(tokens[0])) if len(tokens) > 1 else end
            tokens = tokens[1:]
        if not tokens or any(s < end and start < e for s, e in blocked):
            continue
        found.append((start, " ".join(tokens)))
    out = [_clean_name(name) for _, name in sorted(found)]
    return [n for n in out if n]


def detect_names(
    texts: Sequence[str], nlp: Any, cache_dir: str | Path | None = None, batch_size: int = DEFAULT_NER_BATCH
) -> list[list[str]]:
    """Names in title context of every text, in order of first mention (one ``nlp.pipe``)."""
    from .entity_cache import EntityCache, pipeline_fingerprint

    per_doc = [trigger_sentences(t) for t in texts]
    unique = list(dict.fromkeys(s for sentences in per_doc for s in sentences))
    label_map = {"PERSON": "Person", "GPE": "Location", "LOC": "Location", "FAC": "Location"}
    label_map |= {"ORG": "Organization", "PRODUCT": "Product", "EVENT": "Event", "DATE": "Date"}
    cache = EntityCache(cache_dir, pipeline_fingerprint(nlp, label_map))
    spans = dict(zip(unique, cache.extract(unique, nlp, label_map, batch_size), strict=True))
    out = []
    for sentences in per_doc:
        names: list[str] = []
        for sentence in sentences:
            people = [(s.start, s.end) for s in spans[sentence] if s.category == "Person"]
            blocked = [(s.start, s.end) for s in spans[sentence] if s.category in _BLOCKING]
            orgs = [(s.start, s.end) for s in spans[sentence] if s.category == "Organization"]
            names.extend(names_in_title_context(sentence, people, blocked, orgs))
        out.append(list(dict.fromkeys(names)))
    return [_complete_given_names(t, names) for t, names in zip(texts, out, strict=True)]


def _complete_given_names(text: str, names: list[str]) -> list[str]:
    """A given name found alone becomes the full name when the text writes exactly one
    "Given Surname" ("Jagtar" -> "Jagtar Narula"), so the surname is suppressed too."""
    out = []
    for name in names:
        if " " not in name:
            pattern = rf"(?<![\w.]){re.escape(name)}\s+([A-Z][a-z]+(?:['’-][A-Za-z]+)?)(?!\w)"
            surnames = {m for m in re.findall(pattern, text) if m not in _NOT_NAMES}
            if len(surnames) == 1:
                name = f"{name} {surnames.pop()}"
        out.append(name)
    return list(dict.fromkeys(out))


# --- the same person -------------------------------------------------------------------------------
def _given_forms(given: str) -> set[str]:
    forms = {given, *NICKNAMES.get(given, ()), *FORMAL.get(given, ())}
    for formal in FORMAL.get(given, ()):
        forms.update(NICKNAMES.get(formal, ()))
    return forms


def _key(name: str) -> tuple[str, str]:
    """(given name, surname) without titles, initials and suffixes."""
    tokens = [t.strip(",.") for t in re.sub(r"^(?:Dr|Mr|Mrs|Ms)\.?\s*", "", name).split()]
    tokens = [t for t in tokens if len(t) > 1 and t.lower() not in {"jr", "sr", "ii", "iii"}]
    if not tokens:
        return "", ""
    return (tokens[0], tokens[-1]) if len(tokens) > 1 else (tokens[0], "")


def same_person(a: str, b: str) -> bool:
    """Whether two names denote one person (surname equal, given names equal or nicknames)."""
    (ga, sa), (gb, sb) = _key(a), _key(b)
    if not ga or not gb:
        return False
    if sa and sb:
        return sa.lower() == sb.lower() and (gb in _given_forms(ga) or ga in _given_forms(gb))
    if sa or sb:  # one of them is a given name alone
        full_given, alone = (ga, gb) if sa else (gb, ga)
        return alone in _given_forms(full_given)
    return ga == gb


def merge_people(known: Sequence[str], detected: Sequence[str]) -> tuple[str, ...]:
    """``known`` then the detected names that are nobody known (and no one detected before).

    A detected full name replaces an earlier detected given name alone of the same person
    ("Kevin", then "Kevin Yeaman"), keeping its place; listed names are never replaced."""
    out = list(known)
    for name in detected:
        same = [k for k, other in enumerate(out) if same_person(name, other)]
        if not same:
            out.append(name)
            continue
        k = same[0]
        if k >= len(known) and not _key(out[k])[1] and _key(name)[1]:
            out[k] = name
    return tuple(out)


def _blocked(name: str, aliases: Sequence[str]) -> bool:
    words = {w.lower() for a in aliases for w in a.split() if len(w) > 2}
    return any(t.lower() in words for t in name.split())


def add_detected_people(
    corpus: Corpus, nlp: Any, cache_dir: str | Path | None = None
) -> tuple[Corpus, pd.DataFrame]:
    """Every document's executives plus the names detected in title context of its text.

    Report: one row per document with ``listed`` (from the file and the layout) and
    ``detected`` (added here), both ``; ``-joined.
    """
    names = detect_names([d.text for d in corpus.documents], nlp, cache_dir)
    documents, rows = [], []
    for doc, found in zip(corpus.documents, names, strict=True):
        found = [n for n in found if not _blocked(n, doc.aliases)]
        merged = merge_people(doc.executives, found)
        documents.append(replace(doc, executives=merged))
        added = merged[len(doc.executives) :]
        rows.append(
            {
                "doc_id": doc.doc_id,
                "listed": "; ".join(doc.executives),
                "detected": "; ".join(added),
            }
        )
    report = pd.DataFrame(rows, columns=["doc_id", "listed", "detected"])
    return corpus.with_documents(documents), report
