"""The word-reading attackers' pre-release scores of a large corpus, on two cores (SPEC §8, issue 21).

Before any release is measured, every passage of the corpus is scored under each attacker
(``choose.scorers.build_scorers``). At 100,000 passages that was about two minutes of one
process after the attackers' fits (counting each passage's n-grams under each model), with the
other core idle. A passage's scores depend on its text and its line-up only (``ReleaseScorer``
scores blocks of ``SCORE_BLOCK`` passages and says so), so the passages are shared out: one
spawned worker scores those of three line-ups in five (of blocks, when an attacker has one
line-up) with a copy of the models of those line-ups only, while this process scores the rest
and then builds the scorers. Each row is the bits it would be in one process (the same calls on the same texts, one
BLAS thread in both: ``models.blas_threads``); the rows come back kept by line-up
(``LineupRows``), and the scorers are built from them as a warm run builds them from its memo.

``text_pre_scores(models, texts, labels)``: {attacker: {"log_proba": rows, "counts": a
whole-document family's word counts}}, the ``pre`` that ``ReleaseScorer`` and
``panel_scorers.family_scorers`` take. Models: a reading attacker (``log_proba_at``), a
per-chunk family that reads words (``FamilyAttacker`` of it), a whole-document family.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import sparse

from ..models.blas_threads import one_blas_thread
from ..models.fit_processes import InBackground, fit_processes
from .lineups import (
    SCORE_BLOCK,
    LineupModels,
    LineupRows,
    mask_rows,
    row_lineups,
    stack_rows,
    take_rows,
)
from .panel import Family
from .panel_scorers import FamilyAttacker

#: Passages from which the scores are shared with a worker: below it the worker's start
#: (importing scikit-learn, unpickling the models: seconds) costs more than it saves (the dev
#: corpus's 1,122 passages are scored in about a second).
TWO_CORES_MIN_TEXTS = 20_000


#: The share of the line-ups (of the blocks, with one line-up) whose rows the worker scores,
#: dealt in turn: it starts a few seconds late (a new interpreter, the models unpickled), and at
#: 100,000 passages it finished well before this process with half and well after with three
#: quarters (`benchmarks/cpu_timeline.py`).
WORKER_SHARE = 0.6


def _to_worker(index: np.ndarray) -> np.ndarray:
    """Whether each line-up (or block) ``index`` goes to the worker: ``WORKER_SHARE`` of them,
    dealt in turn (3 in 5: 1, 3, 4, 6, 8, 9, ...)."""
    index = np.asarray(index, dtype=np.int64)
    return np.floor((index + 1) * WORKER_SHARE) > np.floor(index * WORKER_SHARE)


def text_pre_scores(models: Mapping[str, Any], texts: Sequence[str], labels: Sequence[str], *,
                    min_texts: int = TWO_CORES_MIN_TEXTS) -> dict[str, dict]:
    """Each attacker's masked pre-release scores of ``texts`` (of companies ``labels``), kept
    by line-up, and a whole-document family's word counts (module docstring): shared with a
    worker from ``min_texts`` texts on a machine of two cores or more, else all here."""
    texts = [str(t) for t in texts]
    labels = [str(v) for v in labels]
    shares = {name: _Share.of(model, texts, labels) for name, model in models.items()}
    worker = None
    if fit_processes(len(texts), 2, min_texts=min_texts) >= 2:
        worker = InBackground(functools.partial(_score_all, {name: s.part(texts, s.there, restrict=True)
                                                             for name, s in shares.items()}))  # fmt: skip
    here = {name: _scored(*s.part(texts, ~s.there if worker is not None else np.ones_like(s.there)))
            for name, s in shares.items()}  # fmt: skip
    done = worker.result() if worker is not None else {}
    return {name: s.merged(here[name], done.get(name)) for name, s in shares.items()}


class _Share:
    """One attacker's passages: its rows' classes and line-ups, and which rows the worker scores
    (``WORKER_SHARE``)."""

    def __init__(self, model, y: np.ndarray, lineup: np.ndarray | None, there: np.ndarray) -> None:
        self.model, self.y, self.lineup, self.there = model, y, lineup, there

    @classmethod
    def of(cls, model, texts: list[str], labels: list[str]) -> _Share:
        where = {c: i for i, c in enumerate(model.classes_)}
        y = np.array([where.get(v, -1) for v in labels], dtype=np.int64)
        lineup = getattr(model, "lineup_", None)
        rows = row_lineups(y, lineup)
        if rows is None:
            there = _to_worker(np.arange(len(texts)) // SCORE_BLOCK)
        else:
            there = (rows >= 0) & _to_worker(rows)  # an unknown company's row (−1) is scored here
        return cls(model, y, lineup, there)

    def part(self, texts: list[str], chosen: np.ndarray, restrict: bool = False) -> tuple:
        """What ``_scored`` needs for the ``chosen`` rows; ``restrict``: with a copy of the model
        holding only those rows' line-up models (what the worker is sent)."""
        at = np.flatnonzero(chosen)
        rows = row_lineups(self.y[at], self.lineup)
        model = self.model
        if restrict and rows is not None:
            model = _only_lineups(model, set(np.unique(rows).tolist()))
        return model, at, [texts[i] for i in at], rows, self.y[at], self.lineup

    def merged(self, here: tuple, there: tuple | None) -> dict:
        """The rows here and the worker's as one (every passage in corpus order)."""
        parts = [here] if there is None else [here, there]
        n, k = len(self.y), len(self.model.classes_)
        owner = np.full(n, -1, dtype=np.int64)
        local = np.zeros(n, dtype=np.int64)
        for i, (at, _, _) in enumerate(parts):
            owner[at], local[at] = i, np.arange(len(at))
        kept = []
        for block in np.array_split(np.arange(n), -(-n // SCORE_BLOCK)) if n else []:
            out = np.empty((len(block), k))
            for i, (_, rows, _) in enumerate(parts):
                mine = np.flatnonzero(owner[block] == i)
                if len(mine):
                    out[mine] = take_rows(rows, local[block[mine]])
            kept.append(LineupRows.of(out, self.y[block], self.lineup))
        result: dict[str, Any] = {"log_proba": stack_rows(kept, k)}
        if parts[0][2] is not None:
            order = np.concatenate([at for at, _, _ in parts])
            counts = sparse.vstack([c for _, _, c in parts], format="csr")
            result["counts"] = sparse.csr_matrix(counts[np.argsort(order, kind="stable")])
        return result


def _only_lineups(model, keep: set[int]):
    """A shallow copy of ``model`` with the line-up models of ``keep`` only (what the worker
    is sent: about half the models' bytes)."""
    inner: Any = model.family if isinstance(model, FamilyAttacker) else model
    if isinstance(inner, LineupModels):
        lineup = np.asarray(inner.lineup_)
        inner = copy.copy(inner)
        inner.parts_ = [p for p in inner.parts_
                        if int(lineup[np.searchsorted(inner.classes_, p.classes_[0])]) in keep]  # fmt: skip
    if isinstance(model, FamilyAttacker):
        return FamilyAttacker(inner, [])  # a family that reads words: no vectors, no texts kept
    return inner


def _score_all(parts: Mapping[str, tuple]) -> dict[str, tuple]:
    return {name: _scored(*part) for name, part in parts.items()}


def _scored(model, at: np.ndarray, texts: list[str], rows: np.ndarray | None, y: np.ndarray,
            lineup: np.ndarray | None) -> tuple:
    """(positions, masked scores kept by line-up, word counts or None) of ``texts`` at corpus
    positions ``at``: as ``ReleaseScorer`` scores them, by blocks of ``SCORE_BLOCK``. A
    whole-document family's passage is scored from its word counts, kept too."""
    document = isinstance(model, Family) and model.whole_document
    kept, counted = [], []
    with one_blas_thread():
        for block in np.array_split(np.arange(len(at)), -(-len(at) // SCORE_BLOCK)) if len(at) else []:
            some = [texts[i] for i in block]
            lineups = None if rows is None else rows[block]
            if document:
                counts = model.counts(some).tocsr()
                counted.append(counts)
                scores = model.doc_scores(counts, lineups=lineups)
            elif lineups is None:
                scores = model.log_proba_at(at[block], some)
            else:
                scores = model.log_proba_at(at[block], some, lineups=lineups)
            scores = mask_rows(np.asarray(scores, dtype=np.float64), y[block], lineup)
            kept.append(LineupRows.of(scores, y[block], lineup))
    counts_all = None
    if document:
        counts_all = sparse.vstack(counted, format="csr") if counted else sparse.csr_matrix(model.counts([]))
    return at, stack_rows(kept, len(model.classes_)), counts_all
