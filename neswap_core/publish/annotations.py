"""Changed spans of a release in the TAB benchmark's JSON annotation format (SPEC §11).

TAB (Text Anonymization Benchmark, Pilán et al. 2022) annotates each document as
``{"doc_id", "text", "annotations": {annotator: {"entity_mentions": [...]}}}`` where a mention
has ``entity_type``, ``start_offset``, ``end_offset``, ``span_text``, ``identifier_type``
(DIRECT / QUASI / NO_MASK) and ``entity_id``. Here ``text`` is the document's original
presentation text (before suppression) and the mentions are exactly the spans that differ in
the released text, found by a word-level diff (so suppression, C placeholders, swaps and any
later operator are covered alike; ``text.token_diff``: difflib's answer for ordinary documents,
linear time on long ones). The file carries original text: it belongs in ``key/``.

Classification of a changed span by what replaced it:
* ``[Company Name]`` → ORG, ``[Executive #]`` / ``[Analyst #]`` → PERSON, ``[URL]`` → MISC:
  DIRECT identifiers;
* a category placeholder (``[Event]``) or a swapped entity → the category's TAB type: QUASI;
* anything else (e.g. ``[MASK]`` of a redaction) → MISC, QUASI.
Mentions with the same text in a document share an ``entity_id``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any

from ..config import COMPANY_PLACEHOLDER, URL_PLACEHOLDER
from ..models.fit_processes import fit_processes, run_in_processes
from ..text.token_diff import opcodes

ANNOTATOR = "neswap"
#: neswap category -> TAB entity type.
TAB_TYPES: dict[str, str] = {
    "Organization": "ORG",
    "Person": "PERSON",
    "Location": "LOC",
    "Date": "DATETIME",
    "Event": "MISC",
    "Product": "MISC",
}
_TOKEN = re.compile(r"\[[^\[\]\n]{1,40}\]|\w+(?:['’]\w+)*|[^\w\s]")


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN.finditer(text))


def _classify(replacement: str, original: str, categories: Mapping[str, str]) -> tuple[str, str]:
    """(TAB entity type, identifier type) of an original span replaced by ``replacement``."""
    if COMPANY_PLACEHOLDER in replacement:
        return "ORG", "DIRECT"
    if "[Executive" in replacement or "[Analyst" in replacement:
        return "PERSON", "DIRECT"
    if URL_PLACEHOLDER in replacement:
        return "MISC", "DIRECT"
    for category, tab_type in TAB_TYPES.items():
        if f"[{category}]" in replacement:
            return tab_type, "QUASI"
    found = categories.get(original) or categories.get(replacement)
    return TAB_TYPES.get(found or "", "MISC"), "QUASI"


def changed_mentions(
    original: str, released: str, categories: Mapping[str, str] | None = None, prefix: str = "e"
) -> list[dict[str, Any]]:
    """TAB entity mentions (offsets into ``original``) of every span that differs in ``released``.

    ``categories``: entity text → neswap category, to type swapped entities.
    """
    categories = categories or {}
    a, b = _tokens(original), _tokens(released)
    mentions: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    for op, i1, i2, j1, j2 in opcodes([m.group(0) for m in a], [m.group(0) for m in b]):
        if op not in ("replace", "delete") or i1 == i2:
            continue
        start, end = a[i1].start(), a[i2 - 1].end()
        span = original[start:end]
        replacement = released[b[j1].start() : b[j2 - 1].end()] if j2 > j1 else ""
        entity_type, identifier_type = _classify(replacement, span, categories)
        entity_id = ids.setdefault(span.lower(), f"{prefix}{len(ids) + 1}")
        mentions.append({
            "entity_type": entity_type,
            "entity_mention_id": f"{entity_id}_m{len(mentions) + 1}",
            "start_offset": start,
            "end_offset": end,
            "span_text": span,
            "edit_type": "check",
            "identifier_type": identifier_type,
            "entity_id": entity_id,
            "confidential_status": "NOT_CONFIDENTIAL",
            "replaced_by": replacement,
        })
    return mentions


#: Documents' total length (characters) from which ``tab_documents`` diffs them on every core:
#: the spawned workers' start-up (about a second each) is then a few per cent of the diffs
#: (10,000 passages: 6 M characters, 10 s of diffs on one core; 100k: about 100 s).
PARALLEL_CHARS = 4_000_000


def tab_documents(
    originals: Mapping[str, str],
    released: Mapping[str, str],
    pseudonyms: Mapping[str, str],
    categories: Mapping[str, Mapping[str, str]] | None = None,
    processes: int | None = None,
) -> list[dict[str, Any]]:
    """One TAB record per document (``doc_id`` = pseudonym, ``original_doc_id`` beside it).

    Documents of ``PARALLEL_CHARS`` characters or more in all are diffed in ``processes``
    spawned workers (None: one per CPU), each a share of the documents: each document's record
    is the same wherever it is made, and the records are sorted by pseudonym either way."""
    categories = categories or {}
    total = sum(map(len, originals.values()))
    n = fit_processes(total, len(originals), processes, min_texts=PARALLEL_CHARS)
    if n < 2:
        return sorted(_records(originals, released, pseudonyms, categories), key=lambda r: r["doc_id"])
    shares: list[list[str]] = [[] for _ in range(n)]
    for i, doc_id in enumerate(sorted(originals, key=lambda d: -len(originals[d]))):
        shares[i % n].append(doc_id)  # the longest first, dealt round: about equal shares
    calls = [partial(_records, {d: originals[d] for d in share},
                     {d: released[d] for d in share if d in released},
                     {d: pseudonyms[d] for d in share if d in pseudonyms},
                     {d: categories[d] for d in share if d in categories})
             for share in shares]  # fmt: skip
    out = [record for part in run_in_processes(calls, n) for record in part]
    return sorted(out, key=lambda r: r["doc_id"])


def _records(originals: Mapping[str, str], released: Mapping[str, str], pseudonyms: Mapping[str, str],
             categories: Mapping[str, Mapping[str, str]]) -> list[dict[str, Any]]:
    out = []
    for doc_id, text in originals.items():
        pseudo = pseudonyms.get(doc_id, doc_id)
        mentions = changed_mentions(text, released.get(doc_id, ""), categories.get(doc_id),
                                    prefix=f"{pseudo}_e")
        out.append({
            "doc_id": pseudo,
            "original_doc_id": doc_id,
            "dataset_type": "release",
            "text": text,
            "annotations": {ANNOTATOR: {"entity_mentions": mentions}},
        })
    return out
