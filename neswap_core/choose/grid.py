"""Hyperparameter robustness grid N × f × K × ε (SPEC §8, paper §3.2: 3 × 2 × 2 × 2 = 24).

The mixture is fitted once per (f, K, ε); N only changes p̂ and hence DR, so it costs a table,
not a fit. Per setting we report convergence, the combination J holding most frontier points,
and the J of the release chosen for the trade-off line (a, c).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config import PAPER_FAMILIES, PAPER_KS, PAPER_MIN_WEIGHTS, PAPER_POPULATIONS
from ..corpus import Chunk
from ..generate.releases import ReleaseContext, Sweep, sweep_releases
from ..models.mixture import SphericalMixture
from .frontier import choose_release, frontier_winner

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class GridSetting:
    family: str
    n_components: int
    min_weight: float


def hyperparameter_grid(
    chunks: Sequence[Chunk],
    embeddings: np.ndarray,
    embed,
    swap_categories: Sequence[str],
    *,
    families: Sequence[str] = PAPER_FAMILIES,
    n_components: Sequence[int] = PAPER_KS,
    min_weights: Sequence[float] = PAPER_MIN_WEIGHTS,
    populations: Sequence[float] = PAPER_POPULATIONS,
    trade_off: tuple[float, float] = (0.0, 0.97),
    mixture_seed: int = 0,
    n_init: int = 4,
    progress: Progress | None = None,
    **sweep_kwargs,
) -> tuple[pd.DataFrame, dict[GridSetting, Sweep]]:
    """Fit each (f, K, ε), sweep the releases, and summarise every N: one row per setting."""
    settings = [GridSetting(f, k, e) for f in families for k in n_components for e in min_weights]
    rows, sweeps = [], {}
    for i, s in enumerate(settings):
        if progress:
            progress(i / len(settings), f"{s.family}, K={s.n_components}, ε={s.min_weight:g}")
        k = min(s.n_components, len(chunks))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mix = SphericalMixture(
                family=s.family,
                n_components=k,
                min_weight=s.min_weight,
                n_init=n_init,
                random_state=mixture_seed,
            ).fit(embeddings)
        sweep = sweep_releases(
            ReleaseContext(list(chunks), embeddings, mix, embed), swap_categories, **sweep_kwargs
        )
        sweeps[s] = sweep
        for N in populations:
            table = sweep.table(N)
            winner, counts = frontier_winner(table)
            choice = choose_release(table, *trade_off)
            chosen = table.loc[choice.index, "combination"] if choice.index is not None else ""
            rows.append(
                {
                    "N": N,
                    "family": s.family,
                    "K": s.n_components,
                    "min_weight": s.min_weight,
                    "components_kept": mix.n_components_,
                    "converged": bool(mix.converged_),
                    "fit_warnings": "; ".join(str(w.message) for w in caught),
                    "frontier_winner": winner,
                    "frontier_counts": counts,
                    "chosen_combination": chosen,
                    "line_reached": choice.line_reached,
                }
            )
    if progress:
        progress(1.0, "done")
    return pd.DataFrame(rows), sweeps
