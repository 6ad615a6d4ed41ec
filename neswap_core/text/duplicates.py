"""Documents that repeat each other, and whether any number of clusters can still fit (SPEC §4).

Copies (the same call uploaded twice, a template filled in for several companies) make the
mixture's clusters collapse onto duplicated passages (ρ → 1). The analyst needs to know which
documents repeat each other and what to do, in a few short lines, not a paragraph; and a smaller
K is advised only where one can work.

Decisions: two documents repeat each other when at least ``SHARED`` of the passages of the
shorter one are passages of the other (exact text after suppression; documents of one company
with different names therefore count). A number of clusters can fit only when at least half of
the passages are distinct (measured: with a third or fewer distinct, every K from 1 to 5 collapsed
on the degenerate fixture and on random unit vectors; with half, K = 1 fitted); then K is
advised at most the number of distinct passages, about half of it as an example.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

SHARED = 0.8  # share of a document's passages found in another document, in [0, 1]
MIN_DISTINCT_SHARE = 0.5  # distinct passages / passages from which some K can fit
SHOWN = 5  # groups listed in a message


def repeated_documents(passages: Mapping[str, Sequence[str]]) -> list[tuple[str, ...]]:
    """Groups of documents (ids in corpus order) whose passages repeat each other (``SHARED``)."""
    owners: dict[str, list[str]] = {}
    for doc, texts in passages.items():
        for text in dict.fromkeys(" ".join(t.split()) for t in texts):
            owners.setdefault(text, []).append(doc)
    shared: dict[tuple[str, str], int] = {}
    for docs in owners.values():
        if 1 < len(docs) <= 50:  # a passage in every document is boilerplate, not a copy
            for i, a in enumerate(docs):
                for b in docs[i + 1 :]:
                    shared[(a, b)] = shared.get((a, b), 0) + 1
    sizes = {d: max(len(set(t)), 1) for d, t in passages.items()}
    parent = {d: d for d in passages}

    def root(d: str) -> str:
        while parent[d] != d:
            parent[d] = parent[parent[d]]
            d = parent[d]
        return d

    for (a, b), count in shared.items():
        if count >= SHARED * min(sizes[a], sizes[b]):
            parent[root(b)] = root(a)
    groups: dict[str, list[str]] = {}
    for doc in passages:
        groups.setdefault(root(doc), []).append(doc)
    return [tuple(g) for g in groups.values() if len(g) > 1]


def cluster_count_advice(n_passages: int, n_distinct: int, k: int) -> str:
    """What to do about K after K clusters failed on ``n_distinct`` distinct passages of
    ``n_passages``: a smaller K that can fit, or — when most passages are copies, or K = 1
    failed — that no K fits until the copies go or the text varies more."""
    largest = min(n_distinct, k - 1)
    if largest >= 1 and n_distinct >= MIN_DISTINCT_SHARE * n_passages:
        return f"choose a smaller K, at most {largest} (e.g. K = {max(1, largest // 2)})"
    if n_distinct < n_passages:
        return (
            f"no number of clusters fits while {n_passages - n_distinct} of the {n_passages} "
            "passages are copies: remove the duplicate documents first"
        )
    return "no number of clusters fits passages this few or this alike: add more varied text"


def duplicates_message(passages: Mapping[str, Sequence[str]], k: int) -> str | None:
    """A short structured message when documents repeat each other: how many passages are
    distinct, which documents repeat which (at most ``SHOWN`` groups), what to do. None when
    no two documents repeat each other."""
    groups = repeated_documents(passages)
    if not groups:
        return None
    texts = [" ".join(t.split()) for ts in passages.values() for t in ts]
    n, distinct = len(texts), len(set(texts))
    lines = [f"Documents repeat each other: only {distinct} of the {n} passages are distinct."]
    for group in groups[:SHOWN]:
        lines.append(f"  - {', '.join(group[:6])}{' …' if len(group) > 6 else ''}: "
                     f"the same passages")
    if len(groups) > SHOWN:
        lines.append(f"  - and {len(groups) - SHOWN} more group(s)")
    lines.append("What to do: keep one document of each group and remove the others, or add "
                 "more varied transcripts.")
    lines.append(f"Clusters: {cluster_count_advice(n, distinct, k)}.")
    return "\n".join(lines)
