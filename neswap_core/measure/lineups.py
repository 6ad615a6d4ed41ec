"""Line-ups: each passage and document named among its own company's line-up (SPEC §8, issue 21).

A multinomial linear attacker over k companies costs about passages × k per iteration, and on a
growing corpus k grows with it: every linear attacker (and the document defence's defender) is
about quadratic in the corpus (``benchmarks/fit_scaling.py``: slopes 1.7–2.1). With line-ups
the companies are dealt at random (seeded) into ``ceil(k / L)`` line-ups of at most ``L``
companies, sizes differing by at most one; one model is fitted per line-up on that line-up's
passages only (cost passages × L: linear in the corpus), and an attacker names a text among
the companies of its **true company's line-up** — the other columns of its score row are set
to ``MASKED`` by ``mask_rows``, so ranks, top-5, document sums, ties and margins are all
within the line-up without another code path.

Naming among fewer companies is the easier task, so line-up accuracies bound the whole-corpus
ones from above: a release judged by them is conservative. A corpus of at most ``L`` companies
(the dev corpus's 35 against the default 50) has one line-up and is scored exactly as before.

``assign_lineups(classes, size, random_state)`` deals the line-ups; ``LineupFamily`` (a panel
family) and ``LineupTextAttacker`` (the reading and in-corpus attackers' model) put the line-up
models' scores side by side in one ``(n, k)`` matrix in ``classes_`` order; every fitted
attacker with line-ups carries ``lineup_`` (the line-up of each of its ``classes_``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config.defaults import LINEUP_SEED

#: Score of a company outside a row's line-up: far below any real log-probability or summed
#: document score (|score| < 1e7), finite so a document's sum and a release's difference of
#: two masked rows (0) stay exact.
MASKED = -1e12
#: Passages scored at once where a passages × companies matrix would otherwise be made whole
#: (a scorer's pre-release scores, the in-corpus attacker's out-of-fold scores): each block's
#: rows are kept by line-up (``LineupRows``) before the next is scored.
SCORE_BLOCK = 4096


def assign_lineups(classes: Sequence[str] | np.ndarray, size: int | None,
                   random_state: int | None = LINEUP_SEED) -> np.ndarray:
    """Line-up (0..m−1) of each of ``classes`` (sorted companies): a seeded shuffle dealt into
    ``m = ceil(k / size)`` line-ups of sizes differing by at most one. ``size`` None or 0, or
    ``k <= size``: every company in line-up 0 (the whole corpus). The attackers and the
    defender all deal with ``config.defaults.LINEUP_SEED``, not their own seeds: one dealing."""
    k = len(classes)
    if size is not None and size != 0 and size < 2:
        raise ValueError(f"a line-up holds at least 2 companies, got {size}")
    if not size or k <= size:
        return np.zeros(k, dtype=np.int64)
    m = -(-k // size)
    order = np.random.default_rng(random_state).permutation(k)
    out = np.empty(k, dtype=np.int64)
    out[order] = np.arange(k) % m
    return out


def effective_size(n_companies: int, size: int | None) -> int | None:
    """``size`` when ``n_companies`` need more than one line-up, else None (the whole corpus):
    what a cache key names, so a corpus that fits one line-up keeps its keys."""
    return size if size and n_companies > size else None


def lineup_key(size: int | None) -> tuple[int, int] | None:
    """What a cache key names for line-ups of at most ``size`` companies (``effective_size``'s
    value; None: one line-up, no entry): the size and the dealing's seed, so a model fitted under
    another dealing is never read back."""
    return None if size is None else (int(size), LINEUP_SEED)


def lineup_statement(n_companies: int, size: int | None) -> str | None:
    """What a release's notes say when its attackers named texts within line-ups (else None)."""
    size = effective_size(n_companies, size)
    if size is None:
        return None
    m = -(-n_companies // size)
    return (f"The attackers named each passage and document among the companies of its own "
            f"company's line-up: the corpus's {n_companies:,} companies were dealt at random into "
            f"{m} line-ups of at most {size} (one model per line-up keeps their training linear in "
            "the corpus). Naming among fewer companies is easier, so these figures bound the "
            "whole-corpus ones from above; chance is 1 / the line-up's size.")


def lineup_count(lineup: np.ndarray | None) -> int:
    return 1 if lineup is None or len(lineup) == 0 else int(lineup.max()) + 1


def mask_rows(scores: np.ndarray, y: np.ndarray, lineup: np.ndarray | None) -> np.ndarray:
    """``scores`` (n, k) with every column outside row i's line-up (that of class ``y[i]``) set
    to ``MASKED``; rows of unknown labels (y < 0) and a single line-up are left as they are.
    Setting (not adding) makes it idempotent: a memo of masked scores masks to itself."""
    if lineup is None or lineup_count(lineup) == 1 or len(scores) == 0:
        return scores
    y = np.asarray(y, dtype=np.int64)
    known = y >= 0
    row_lineup = np.where(known, lineup[np.maximum(y, 0)], -1)
    outside = (lineup[None, :] != row_lineup[:, None]) & known[:, None]
    return np.where(outside, MASKED, scores)


@dataclass(frozen=True, eq=False)
class LineupRows:
    """An (n, k) score matrix kept as each row's line-up block: row i's scores of the companies
    of its own line-up (``block``, n × the largest line-up) and the one value every other entry
    of the row holds (``outside``: ``MASKED`` after ``mask_rows``; ``LOG_FLOOR`` for a row no
    fold model scored). A row of an unknown class, or whose other entries differ, is kept whole.
    ``rows`` gives back exactly the rows it was made from. A dense matrix grows as passages ×
    companies, both proportional to the corpus (issue 21: 1.3 GB per attacker at 100,000
    passages and 1,580 companies)."""

    shape: tuple[int, int]
    slots: np.ndarray  # (line-ups, L): class of each line-up slot, -1 past a line-up's end
    row_lineup: np.ndarray  # (n,): line-up of each row kept by block, -1 for a row kept whole
    block: np.ndarray  # (n, L): the row's scores at its line-up's slots (MASKED past the end)
    outside: np.ndarray  # (n,): the value of the row's entries outside its line-up
    whole: np.ndarray  # (u, k): the rows kept whole
    whole_at: np.ndarray  # (n,): row of ``whole`` holding row i, -1 for a row kept by block

    @classmethod
    def of(cls, scores: np.ndarray, y: np.ndarray, lineup: np.ndarray | None) -> LineupRows | np.ndarray:
        """``scores`` (rows of classes ``y``) kept compactly; itself when there is one line-up."""
        if lineup is None or lineup_count(lineup) == 1:
            return scores
        lineup = np.asarray(lineup, dtype=np.int64)
        y = np.asarray(y, dtype=np.int64)
        sizes = np.bincount(lineup, minlength=lineup_count(lineup))
        slots = np.full((len(sizes), int(sizes.max())), -1, dtype=np.int64)
        for g in range(len(sizes)):
            members = np.flatnonzero(lineup == g)
            slots[g, : len(members)] = members
        row_lineup = np.where(y >= 0, lineup[np.maximum(y, 0)], -1)
        inside = lineup[None, :] == row_lineup[:, None]
        first_out = np.argmin(inside, axis=1)  # a column outside the row's line-up
        outside = scores[np.arange(len(y)), first_out]
        same = np.where(inside, True, (scores == outside[:, None]) & (np.signbit(scores) == np.signbit(outside)[:, None]))
        by_block = (row_lineup >= 0) & same.all(axis=1)
        row_lineup = np.where(by_block, row_lineup, -1)
        cols = slots[np.maximum(row_lineup, 0)]
        block = np.where(cols >= 0, np.take_along_axis(scores, np.maximum(cols, 0), axis=1), MASKED)
        block[~by_block] = MASKED
        whole_at = np.full(len(y), -1, dtype=np.int64)
        whole_at[~by_block] = np.arange(int((~by_block).sum()))
        return cls(tuple(scores.shape), slots, row_lineup, block, np.where(by_block, outside, MASKED),
                   scores[~by_block].copy(), whole_at)  # fmt: skip

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The rows at ``positions``, whole (len(positions), k)."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty((len(positions), self.shape[1]))
        out[:] = self.outside[positions][:, None]
        g = self.row_lineup[positions]
        by_block = g >= 0
        cols = self.slots[np.maximum(g, 0)]
        r, c = np.nonzero((cols >= 0) & by_block[:, None])
        out[r, cols[r, c]] = self.block[positions[r], c]
        if (~by_block).any():
            out[~by_block] = self.whole[self.whole_at[positions][~by_block]]
        return out

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.block, self.outside, self.whole, self.row_lineup, self.whole_at)))


def stack_rows(parts: Sequence[np.ndarray | LineupRows], k: int) -> np.ndarray | LineupRows:
    """Blocks of consecutive rows (dense, or ``LineupRows`` of one line-up dealing) as one."""
    compact = [p for p in parts if isinstance(p, LineupRows)]
    if not compact:
        return np.vstack([np.asarray(p) for p in parts]) if parts else np.zeros((0, k))
    if len(compact) != len(parts):
        raise ValueError("stack_rows: dense and line-up blocks mixed")
    whole_at = []
    seen = 0
    for part in compact:
        at = part.whole_at.copy()
        at[at >= 0] += seen
        seen += len(part.whole)
        whole_at.append(at)
    return LineupRows((sum(p.shape[0] for p in compact), k), compact[0].slots,
                      np.concatenate([p.row_lineup for p in compact]),
                      np.vstack([p.block for p in compact]), np.concatenate([p.outside for p in compact]),
                      np.vstack([p.whole for p in compact]), np.concatenate(whole_at))  # fmt: skip


def take_rows(scores: np.ndarray | LineupRows, positions: np.ndarray) -> np.ndarray:
    """Rows ``positions`` of a dense score matrix or a ``LineupRows``."""
    return scores.rows(positions) if isinstance(scores, LineupRows) else scores[positions]


def lineup_chance(y: np.ndarray, lineup: np.ndarray | None, n_companies: int) -> float:
    """The share a guess at random names: mean over rows of 1 / their line-up's size."""
    if lineup is None or lineup_count(lineup) == 1:
        return 1.0 / max(n_companies, 1)
    y = np.asarray(y, dtype=np.int64)
    sizes = np.bincount(lineup)
    known = y[y >= 0]
    return float(np.mean(1.0 / sizes[lineup[known]])) if len(known) else 1.0 / max(n_companies, 1)


def row_lineups(y: np.ndarray, lineup: np.ndarray | None) -> np.ndarray | None:
    """The line-up of each row's true class (−1 for an unknown one), or None for one line-up."""
    if lineup is None or lineup_count(lineup) == 1:
        return None
    y = np.asarray(y, dtype=np.int64)
    return np.where(y >= 0, lineup[np.maximum(y, 0)], -1)


def lineup_rows(labels: Sequence[str] | np.ndarray, classes: np.ndarray, lineup: np.ndarray) -> list[np.ndarray]:
    """Per line-up, the positions of ``labels`` whose company is in it."""
    where = {c: g for c, g in zip(classes, lineup, strict=True)}
    of = np.array([where[str(v)] for v in labels], dtype=np.int64)
    return [np.flatnonzero(of == g) for g in range(lineup_count(lineup))]


class LineupModels:
    """Line-up models' scores in one (n, k) matrix: column c from the model of c's line-up.
    ``parts``: the fitted models (each with ``classes_``), ``classes``: every company (sorted),
    ``lineup``: the line-up of each."""

    lineup_: np.ndarray | None

    def __init__(self, parts: list, classes: Sequence[str] | np.ndarray, lineup: np.ndarray) -> None:
        self.parts_ = list(parts)
        self.classes_ = np.asarray(classes, dtype=object)
        self.lineup_ = np.asarray(lineup, dtype=np.int64)

    def _scores(self, score, n: int, lineups: np.ndarray | None) -> np.ndarray:
        """(n, k) scores, ``score(part, rows)`` giving a part's block for the rows it scores:
        every row (``lineups`` None) or only the rows of its own line-up (``lineups``: the
        line-up of each row, as the scorers know it from the true company; the other columns of
        a row are masked anyway), so scoring costs one model per text, not one per line-up."""
        out = np.full((n, len(self.classes_)), MASKED)
        lineup = np.asarray(self.lineup_)
        for part, cols in zip(self.parts_, self._part_columns(), strict=True):
            rows = np.arange(n) if lineups is None else np.flatnonzero(np.asarray(lineups) == lineup[cols[0]])
            if len(rows):
                out[np.ix_(rows, cols)] = score(part, rows)
        return out

    def _part_columns(self) -> list[np.ndarray]:
        """Each part's columns in ``classes_``, found once per process (a search of the
        companies' names per part and call: ~16 of the document defence's CPU-seconds at 100k
        passages, where every document is scored alone; issue 21). Never pickled."""
        kept = self.__dict__.get("_columns")
        if kept is None or kept[0] is not self.parts_:
            kept = self._columns = (self.parts_, [np.searchsorted(self.classes_, p.classes_) for p in self.parts_])
        return kept[1]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_columns", None)
        return state

    def part_of(self, label: str):
        """The line-up model that knows ``label`` (None if no line-up does)."""
        for part in self.parts_:
            if label in set(part.classes_):
                return part
        return None


class LineupTextAttacker(LineupModels):
    """``TextAttacker``s fitted one per line-up, scored as one (module docstring): the
    interface of ``measure.attack.TextAttacker`` the scorers and the explain view use."""

    def predict_log_proba(self, texts: Sequence[str], lineups: np.ndarray | None = None) -> np.ndarray:
        texts = [str(t) for t in texts]
        return self._scores(lambda p, rows: p.predict_log_proba([texts[i] for i in rows]), len(texts), lineups)

    def log_proba_at(self, positions: Sequence[int], texts: Sequence[str],
                     lineups: np.ndarray | None = None) -> np.ndarray:
        return self.predict_log_proba(texts, lineups)

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.classes_[self.predict_log_proba(texts).argmax(axis=1)]

    def term_weights(self, texts: Sequence[str], label: str, top: int | None = None) -> pd.Series:
        part = self.part_of(label)
        return pd.Series(dtype=float) if part is None else part.term_weights(texts, label, top)
