"""The word-level DP baseline as candidates (generate/dp_words.py; paper 001 §6): one per ε.

A ``DPWordsRelease`` is a candidate like the paper's rounds and the plans' stages (``row``,
``changed``, ``utility``, ``review``), sampler "dp_words", so the attacker panel, the goals and
the audit measure it. Nothing is reviewable: each word is its own noisy draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..corpus import Chunk
from ..generate.dp_words import privatise_chunks
from ..generate.releases import ReleaseContext
from .plan_grid import measure_row
from .review import ChosenRelease

DP_WORDS = "dp_words"


@dataclass(frozen=True, eq=False)
class DPWordsRelease:
    """Every chunk through the word-level DP mechanism at one ε (module docstring)."""

    ctx: ReleaseContext
    epsilon: float
    seed: int
    chunks: tuple[Chunk, ...]
    words_changed: int

    @property
    def release_id(self) -> str:
        return f"word-level DP, ε = {self.epsilon:g}"

    def changed(self) -> dict[int, Chunk]:
        base = self.ctx.chunks
        return {i: c for i, c in enumerate(self.chunks) if c.text != base[i].text}

    def row(self) -> dict:
        return {"release_id": self.release_id, "sampler": DP_WORDS, "combination": "",
                "swaps": 0, "rounds": 0, "description": f"word-level DP baseline (paper 001 "
                f"§6), every word through the multivariate Laplace mechanism at ε = "
                f"{self.epsilon:g}", "plan": "", "plan_index": -1, "stage_index": -1,
                "dr": np.nan, "dr_mean": np.nan, "dr_sd": 0.0, "du_sd": 0.0, "draws": 1,
                "draws_total": 1, "all_draws": True, "swap_rate": np.nan, "p_hat": np.nan,
                "risk_status": "", "epsilon": float(self.epsilon)}  # fmt: skip

    def utility(self, total_words: int | None = None) -> dict:
        row = measure_row(self.ctx, self.changed(), total_words)
        row["du_mean"] = row["du"]
        return row

    def identity(self) -> dict:
        return {"release": self.release_id}

    def review(self, decisions) -> ChosenRelease:
        changed = {i: c.text for i, c in self.changed().items()}
        log = pd.DataFrame({"chunk_id": [self.chunks[i].chunk_id for i in changed],
                            "before": [self.ctx.chunks[i].text for i in changed],
                            "after": list(changed.values())})  # fmt: skip
        return ChosenRelease(self.release_id, self.chunks, (), len(changed), 0, "changes.csv", log,
                             pd.DataFrame(), self.utility(), (changed,), self.identity(),
                             (self.seed,), "passages")


def dp_words_sources(ctx, epsilons: Sequence[float], seed: int = 0) -> dict[str, DPWordsRelease]:
    """One candidate per ε (each drawn with its own generator from ``seed``)."""
    out = {}
    for k, eps in enumerate(epsilons):
        chunks, changed = privatise_chunks(ctx.chunks, float(eps), seed, k)
        source = DPWordsRelease(ctx, float(eps), seed, chunks, changed)
        out[source.release_id] = source
    return out
