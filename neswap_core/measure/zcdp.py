"""(ε, δ) from a Rényi divergence curve via concentrated DP (SPEC §9; Bun & Steinke 2016, Lemma 3.5).

A mechanism whose divergences satisfy D_α ≤ ξ + ρ·α for every α > 1 is (ξ, ρ)-zCDP, hence
(ε, δ)-DP with ε = ξ + ρ + 2√(ρ·log(1/δ)). Over the lines lying above every estimated point,
ξ(ρ) = max(0, maxᵢ Dᵢ − ρ·αᵢ) is convex and piecewise linear, and ε(ρ) = ξ(ρ) + ρ + 2√(ρ·log 1/δ)
is concave on each of its pieces, so the minimum is at a breakpoint: ρ = 0, a crossing of two
constraints (Dᵢ − Dⱼ)/(αᵢ − αⱼ), or a constraint reaching ξ = 0 (Dᵢ/αᵢ). All are enumerated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import FitError


@dataclass(frozen=True)
class ZcdpLine:
    """The line D = ξ + ρ·α above the curve that minimises ε at δ, and that ε."""

    xi: float
    rho: float
    delta: float
    epsilon: float

    def at(self, alphas: Sequence[float]) -> np.ndarray:
        return self.xi + self.rho * np.asarray(alphas, dtype=float)


def zcdp_epsilon(xi: float, rho: float, delta: float) -> float:
    """ε = ξ + ρ + 2√(ρ·log(1/δ)) of (ξ, ρ)-zCDP at δ (Bun & Steinke, Lemma 3.5)."""
    return float(xi + rho + 2.0 * np.sqrt(rho * np.log(1.0 / delta)))


def zcdp_line(alphas: Sequence[float], divergences: Sequence[float], delta: float) -> ZcdpLine:
    """The optimal (ξ, ρ) line over the points with α > 1 (zCDP bounds orders above 1 only)."""
    a = np.asarray(alphas, dtype=float)
    d = np.asarray(divergences, dtype=float)
    if a.shape != d.shape:
        raise FitError(f"{a.size} orders α but {d.size} divergences.")
    if not 0.0 < delta < 1.0:
        raise FitError(f"δ must lie in (0, 1); got {delta}.")
    keep = a > 1.0
    a, d = a[keep], d[keep]
    if a.size == 0:
        raise FitError("The zCDP line needs divergences at orders α > 1.")
    if not np.isfinite(d).all():
        raise FitError(
            "A divergence estimate is not finite; the (ε, δ) conversion needs finite values."
        )
    da, dd = a[:, None] - a[None, :], d[:, None] - d[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        crossings = np.where(da != 0, dd / da, np.nan)
    candidates = np.concatenate([[0.0], crossings.ravel(), d / a])
    candidates = np.unique(candidates[np.isfinite(candidates) & (candidates >= 0.0)])
    xi = np.maximum(0.0, (d[None, :] - candidates[:, None] * a[None, :]).max(axis=1))
    eps = xi + candidates + 2.0 * np.sqrt(candidates * np.log(1.0 / delta))
    best = int(np.argmin(eps))
    return ZcdpLine(float(xi[best]), float(candidates[best]), float(delta), float(eps[best]))
