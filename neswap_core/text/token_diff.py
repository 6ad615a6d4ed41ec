"""Token diffs that stay linear on long documents (issue 23 item 10).

``difflib.SequenceMatcher`` without its junk heuristic is quadratic and worse on long token
lists with frequent tokens ("the", ","): 10,000 tokens take about 1 s, 20,000 about 4 s, a
5.8 MB document hours. Releases diff whole documents (the TAB spans of ``key/``) and chunks (the
share of words unchanged), so:

* up to ``DIRECT`` tokens (both sides together) the result **is** difflib's (``autojunk=False``):
  every chunk and an ordinary transcript diff exactly as before;
* longer: tokens that occur exactly once on each side and in the same order (the longest
  increasing subsequence of their positions, patience-diff style) anchor the alignment in
  O(n log n); each gap between anchors is diffed by difflib when it is shorter than a window
  and otherwise by a window of ``WINDOW`` tokens moving along both sides, committing the matches
  that start in its first half (O(n · WINDOW)). A release changes words in place and never moves text, so the
  local window finds the matches a global diff would.

``matching_blocks`` and ``opcodes`` have difflib's meaning and shape (a final ``(len(a), len(b),
0)`` sentinel; opcodes ``equal``/``replace``/``delete``/``insert``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Sequence
from difflib import SequenceMatcher

DIRECT = 12000  # tokens, both sides together: below, exactly difflib (about 0.4 s at most)
WINDOW = 500  # tokens per side of the moving window

Block = tuple[int, int, int]  # (start in a, start in b, size)


def _difflib(a: Sequence[Hashable], b: Sequence[Hashable], i: int, j: int) -> list[Block]:
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return [(i + x, j + y, s) for x, y, s in matcher.get_matching_blocks() if s]


def _anchors(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int]]:
    """(i, j) of tokens unique on both sides, in the longest order-preserving chain."""
    ca, cb = Counter(a), Counter(b)
    where_b = {t: j for j, t in enumerate(b) if cb[t] == 1 and ca[t] == 1}
    pairs = [(i, where_b[t]) for i, t in enumerate(a) if t in where_b]
    tails: list[int] = []  # patience sorting on the b positions
    tail_at: list[int] = []
    back = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[pos], tail_at[pos] = j, k
        back[k] = tail_at[pos - 1] if pos else -1
    chain, k = [], tail_at[-1] if tail_at else -1
    while k >= 0:
        chain.append(pairs[k])
        k = back[k]
    return chain[::-1]


def _windowed(a: Sequence[Hashable], b: Sequence[Hashable], i0: int, j0: int) -> list[Block]:
    """Greedy alignment by a window moving along both sides (module docstring)."""
    n, m, half = len(a), len(b), WINDOW // 2
    out: list[Block] = []
    i = j = 0
    while i < n and j < m:
        last = i + WINDOW >= n and j + WINDOW >= m
        blocks = _difflib(a[i : i + WINDOW], b[j : j + WINDOW], 0, 0)
        if last:
            out += [(i0 + i + x, j0 + j + y, s) for x, y, s in blocks]
            break
        taken = [blk for blk in blocks if blk[0] < half and blk[1] < half] or blocks[:1]
        if not taken:  # nothing in common in a whole window: it was replaced
            i, j = i + half, j + half
            continue
        out += [(i0 + i + x, j0 + j + y, s) for x, y, s in taken]
        x, y, s = taken[-1]
        i, j = i + x + s, j + y + s
    return out


def _gap(a: Sequence[Hashable], b: Sequence[Hashable], i0: int, j0: int) -> list[Block]:
    if not a or not b:
        return []
    if len(a) + len(b) <= WINDOW:
        return _difflib(a, b, i0, j0)
    return _windowed(a, b, i0, j0)


def _merge(blocks: list[Block]) -> list[Block]:
    out: list[Block] = []
    for i, j, s in blocks:
        if out and out[-1][0] + out[-1][2] == i and out[-1][1] + out[-1][2] == j:
            pi, pj, ps = out[-1]
            out[-1] = (pi, pj, ps + s)
        else:
            out.append((i, j, s))
    return out


def matching_blocks(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Block]:
    """Matching blocks of ``a`` and ``b`` as difflib gives them, with its final sentinel."""
    if len(a) + len(b) <= DIRECT:
        blocks = _difflib(a, b, 0, 0)
    else:
        blocks, i, j = [], 0, 0
        for ai, bj in _anchors(a, b):
            blocks += _gap(a[i:ai], b[j:bj], i, j)
            blocks.append((ai, bj, 1))
            i, j = ai + 1, bj + 1
        blocks += _gap(a[i:], b[j:], i, j)
    return [*_merge(blocks), (len(a), len(b), 0)]


def opcodes(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[str, int, int, int, int]]:
    """How to turn ``a`` into ``b``: difflib's opcodes, from ``matching_blocks``."""
    i = j = 0
    out = []
    for ai, bj, size in matching_blocks(a, b):
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            out.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            out.append(("equal", ai, i, bj, j))
    return out
