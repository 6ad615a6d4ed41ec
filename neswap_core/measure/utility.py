"""Data utility DU of a release (SPEC §6, paper §2.5).

The mixture is fitted once on the pre-swap embeddings x and gives MAP labels l. After swapping,
only the changed chunks are re-embedded (x̃), and

    L0 = Σ_i log f(x_i | φ_{l_i}),   Δ = Σ_{swapped i} [log f(x̃_i | φ_{l_i}) − log f(x_i | φ_{l_i})],
    DU = 1 + Δ / |L0|,

which equals the paper's ratio log f(x̃|l) / log f(x|l) when L0 > 0 and stays meaningful when
it is not. DU > 1 (the swapped text fits its cluster better) is possible and reported as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..errors import FitError


class FittedMixture(Protocol):
    def component_log_density(self, X: np.ndarray) -> np.ndarray: ...
    def predict(self, X: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class UtilityBaseline:
    """What DU is measured against: MAP labels, per-chunk log f(x_i | φ_{l_i}) and L0."""

    labels: np.ndarray  # (n,) int, MAP cluster of each pre-swap chunk
    log_density: np.ndarray  # (n,) float64, log f(x_i | φ_{l_i})

    @property
    def total(self) -> float:
        """L0, the label-conditional log-likelihood of the pre-swap embeddings."""
        return float(self.log_density.sum())


def labelled_log_density(mixture: FittedMixture, X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """log f(x_i | φ_{l_i}) for each row of X with its given label (no mixture weights)."""
    X = np.asarray(X)
    labels = np.asarray(labels, dtype=np.intp)
    if X.shape[0] != labels.shape[0]:
        raise FitError(f"{X.shape[0]} embeddings but {labels.shape[0]} labels.")
    if X.shape[0] == 0:
        return np.zeros(0)
    dens = mixture.component_log_density(X)
    return dens[np.arange(X.shape[0]), labels].astype(np.float64)


def utility_baseline(mixture: FittedMixture, X: np.ndarray) -> UtilityBaseline:
    """Fix the labels and per-chunk log densities of the pre-swap data (SPEC §6)."""
    labels = np.asarray(mixture.predict(X), dtype=np.intp)
    return UtilityBaseline(labels=labels, log_density=labelled_log_density(mixture, X, labels))


def utility_deltas(
    mixture: FittedMixture,
    baseline: UtilityBaseline,
    indices: Sequence[int],
    new_embeddings: np.ndarray,
) -> np.ndarray:
    """Per changed chunk, log f(x̃_i | φ_{l_i}) − log f(x_i | φ_{l_i})."""
    idx = np.asarray(indices, dtype=np.intp)
    if idx.size == 0:
        return np.zeros(0)
    new = labelled_log_density(mixture, new_embeddings, baseline.labels[idx])
    return new - baseline.log_density[idx]


def data_utility(baseline: UtilityBaseline, total_delta: float | np.ndarray) -> float | np.ndarray:
    """DU = 1 + Δ / |L0|; DU = 1 when nothing changed (Δ = 0)."""
    scale = abs(baseline.total)
    if scale == 0.0:
        raise FitError("The pre-swap log-likelihood L0 is exactly 0: DU is undefined.")
    return (
        1.0 + np.asarray(total_delta, dtype=np.float64) / scale
        if np.ndim(total_delta)
        else 1.0 + float(total_delta) / scale
    )
