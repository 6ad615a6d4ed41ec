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
    """A masked (n, k) score matrix (``mask_rows``) kept as each row's line-up block: row i's
    scores of the companies of its own line-up (``block``, n × the largest line-up), the rows of
    unknown classes whole. Every other entry of a known row is ``MASKED``, so ``rows`` gives
    back exactly the masked rows. A dense one grows as passages × companies, both proportional
    to the corpus (issue 21: 1.3 GB per attacker at 100,000 passages and 1,580 companies)."""

    shape: tuple[int, int]
    slots: np.ndarray  # (line-ups, L): class of each line-up slot, -1 past a line-up's end
    row_lineup: np.ndarray  # (n,): line-up of each row, -1 for an unknown class
    block: np.ndarray  # (n, L): a known row's scores at its line-up's slots (MASKED past the end)
    unknown: np.ndarray  # (u, k): the rows of unknown classes, whole
    unknown_at: np.ndarray  # (n,): row of ``unknown`` holding row i, -1 for a known row

    @classmethod
    def of(cls, masked: np.ndarray, y: np.ndarray, lineup: np.ndarray | None) -> LineupRows | np.ndarray:
        """``masked`` (``mask_rows(scores, y, lineup)``) kept compactly; itself when there is one
        line-up (nothing is masked)."""
        if lineup is None or lineup_count(lineup) == 1:
            return masked
        lineup = np.asarray(lineup, dtype=np.int64)
        y = np.asarray(y, dtype=np.int64)
        sizes = np.bincount(lineup, minlength=lineup_count(lineup))
        slots = np.full((len(sizes), int(sizes.max())), -1, dtype=np.int64)
        for g in range(len(sizes)):
            members = np.flatnonzero(lineup == g)
            slots[g, : len(members)] = members
        row_lineup = np.where(y >= 0, lineup[np.maximum(y, 0)], -1)
        known = row_lineup >= 0
        cols = slots[np.maximum(row_lineup, 0)]
        block = np.where(cols >= 0, np.take_along_axis(masked, np.maximum(cols, 0), axis=1), MASKED)
        block[~known] = MASKED
        unknown_at = np.full(len(y), -1, dtype=np.int64)
        unknown_at[~known] = np.arange(int((~known).sum()))
        return cls(tuple(masked.shape), slots, row_lineup, block, masked[~known].copy(), unknown_at)

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The masked rows at ``positions``, whole (len(positions), k)."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.full((len(positions), self.shape[1]), MASKED)
        g = self.row_lineup[positions]
        known = g >= 0
        cols = self.slots[np.maximum(g, 0)]
        r, c = np.nonzero((cols >= 0) & known[:, None])
        out[r, cols[r, c]] = self.block[positions[r], c]
        u = self.unknown_at[positions]
        if (~known).any():
            out[~known] = self.unknown[u[~known]]
        return out

    @property
    def nbytes(self) -> int:
        return int(self.block.nbytes + self.unknown.nbytes + self.row_lineup.nbytes + self.unknown_at.nbytes)


def stack_rows(parts: Sequence[np.ndarray | LineupRows], k: int) -> np.ndarray | LineupRows:
    """Blocks of consecutive rows (dense, or ``LineupRows`` of one line-up dealing) as one."""
    compact = [p for p in parts if isinstance(p, LineupRows)]
    if not compact:
        return np.vstack([np.asarray(p) for p in parts]) if parts else np.zeros((0, k))
    if len(compact) != len(parts):
        raise ValueError("stack_rows: dense and line-up blocks mixed")
    unknown_at = []
    seen = 0
    for part in compact:
        at = part.unknown_at.copy()
        at[at >= 0] += seen
        seen += len(part.unknown)
        unknown_at.append(at)
    return LineupRows((sum(p.shape[0] for p in compact), k), compact[0].slots,
                      np.concatenate([p.row_lineup for p in compact]),
                      np.vstack([p.block for p in compact]),
                      np.vstack([p.unknown for p in compact]), np.concatenate(unknown_at))  # fmt: skip


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
        for part in self.parts_:
            cols = np.searchsorted(self.classes_, part.classes_)
            rows = np.arange(n) if lineups is None else np.flatnonzero(np.asarray(lineups) == lineup[cols[0]])
            if len(rows):
                out[np.ix_(rows, cols)] = score(part, rows)
        return out

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

    def term_weights(self, texts: Sequence[str], label: str) -> pd.Series:
        part = self.part_of(label)
        return pd.Series(dtype=float) if part is None else part.term_weights(texts, label)
