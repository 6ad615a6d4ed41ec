"""Exact samplers for the PKB and spherical Cauchy distributions on S^{d-1} (SPEC §4).

Used by the tests of the mixture EM and by ``SphericalMixture.sample``.

* Spherical Cauchy: the Möbius image of a uniform point u,
  x = (1 − ρ²)(u + ρμ)/‖u + ρμ‖² + ρμ, has density ((1 − ρ²)/‖x − ρμ‖²)^{d−1} w.r.t. the
  normalised uniform measure (Kato & McCullagh 2020).
* PKB: write x = tμ + √(1 − t²) v with v uniform on the sphere orthogonal to μ. Under the
  uniform measure t has density ∝ (1 − t²)^{(d−3)/2}, so under PKB
  p(t) ∝ (1 + t)^{(d−3)/2} (1 − t)^{(d−3)/2} q(t)^{−d/2}, q(t) = 1 + ρ² − 2ρt.
  Envelope: t = 2s − 1 with s ~ Beta(a, b), a = (d − 1)/2, b = a − β, 0 ≤ β < a. Then
  p/e ∝ h(t) = (1 − t)^β q(t)^{−d/2}. log h has derivative −β/(1 − t) + dρ/q(t), which
  vanishes at the single point t* = (β(1 + ρ²) − dρ) / (ρ(2β − d)); as log h → −∞ at t → 1
  (β > 0) the supremum is log h(t*) if t* ∈ (−1, 1), else log h(−1) (β = 0: h is increasing
  and the supremum is h(1)). Accepting t with probability h(t)/sup h is exact; β is chosen
  numerically to minimise the expected number of proposals M (below 2 for the d and ρ we use).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import betaln

from ..errors import FitError

FAMILIES: tuple[str, ...] = ("pkb", "scauchy")


def sample_uniform(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """n points drawn uniformly on S^{d-1}, as an (n, d) float64 array."""
    g = rng.standard_normal((n, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def _tangent_directions(mean: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n unit vectors uniform on the great sphere orthogonal to the unit vector ``mean``."""
    g = rng.standard_normal((n, mean.shape[0]))
    g -= np.outer(g @ mean, mean)
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def sample_scauchy(mean: np.ndarray, rho: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n draws from the spherical Cauchy distribution with centre ``mean`` and ρ in [0, 1)."""
    mean = _unit_vector(mean)
    _check_rho(rho)
    u = sample_uniform(n, mean.shape[0], rng)
    y = u + rho * mean[None, :]
    x = (1.0 - rho * rho) * y / np.sum(y * y, axis=1, keepdims=True) + rho * mean[None, :]
    return x / np.linalg.norm(x, axis=1, keepdims=True)  # exact up to rounding


def _log_h(t: np.ndarray | float, beta: float, rho: float, d: int) -> np.ndarray:
    """log of the PKB/Beta-envelope ratio up to a constant: β log(1 − t) − (d/2) log q(t)."""
    t = np.asarray(t, dtype=float)
    q = (1.0 - rho) ** 2 + 2.0 * rho * (1.0 - t)
    log_q = -0.5 * d * np.log(q)
    if beta <= 0.0:
        return log_q
    with np.errstate(divide="ignore"):
        return beta * np.log1p(-t) + log_q


def _log_h_sup(beta: float, rho: float, d: int) -> float:
    """Exact supremum of ``_log_h`` over t in [−1, 1] (see the module docstring)."""
    if beta <= 0.0:
        return float(_log_h(1.0, 0.0, rho, d))
    best = float(_log_h(-1.0, beta, rho, d))
    t_star = (beta * (1.0 + rho * rho) - d * rho) / (rho * (2.0 * beta - d))
    if -1.0 < t_star < 1.0:
        best = max(best, float(_log_h(t_star, beta, rho, d)))
    return best


def pkb_envelope(rho: float, d: int) -> tuple[float, float, float]:
    """Beta(a, b) envelope for t = μᵀx under PKB: returns (a, b, log M), M = mean proposals."""
    a = (d - 1) / 2.0
    base = math.log1p(-rho * rho) - (d - 2) * math.log(2.0) - betaln(a, a)

    def log_m(beta: float) -> float:
        b = a - beta
        return base + (a + b - 1.0) * math.log(2.0) + betaln(a, b) + _log_h_sup(beta, rho, d)

    res = minimize_scalar(log_m, bounds=(0.0, a * (1.0 - 1e-9)), method="bounded",
                          options={"xatol": 1e-6 * max(a, 1.0)})
    beta = float(res.x)
    if log_m(0.0) <= res.fun:
        beta = 0.0
    return a, a - beta, float(log_m(beta))


def _sample_pkb_t(rho: float, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n exact draws of t = μᵀx under PKB by acceptance–rejection from the Beta envelope."""
    a, b, log_m = pkb_envelope(rho, d)
    beta = a - b
    log_sup = _log_h_sup(beta, rho, d)
    out = np.empty(0)
    while out.size < n:
        need = n - out.size
        m = int(need * min(math.exp(log_m), 50.0) * 1.1) + 16
        t = 2.0 * rng.beta(a, b, size=m) - 1.0
        accept = np.log(rng.random(m)) <= _log_h(t, beta, rho, d) - log_sup
        out = np.concatenate([out, t[accept][:need]])
    return out


def sample_pkb(mean: np.ndarray, rho: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n exact draws from the PKB distribution with centre ``mean`` and ρ in [0, 1)."""
    mean = _unit_vector(mean)
    _check_rho(rho)
    d = mean.shape[0]
    if rho == 0.0:
        return sample_uniform(n, d, rng)
    t = _sample_pkb_t(float(rho), d, n, rng)
    v = _tangent_directions(mean, n, rng)
    x = t[:, None] * mean[None, :] + np.sqrt(np.clip(1.0 - t * t, 0.0, None))[:, None] * v
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def sample_mixture(weights: np.ndarray, means: np.ndarray, concentrations: np.ndarray,
                   family: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n draws from a PKB or spherical Cauchy mixture: (X, labels), rows in random order."""
    if family not in FAMILIES:
        raise FitError(f"family must be one of {FAMILIES}, got {family!r}.")
    if n < 0:
        raise FitError(f"the number of samples must be >= 0, got {n}.")
    weights = np.asarray(weights, dtype=float)
    means = np.atleast_2d(np.asarray(means, dtype=float))
    concentrations = np.asarray(concentrations, dtype=float).ravel()
    if not (weights.shape[0] == means.shape[0] == concentrations.shape[0]):
        raise FitError("weights, means and concentrations must have one entry per component.")
    if np.any(weights < 0) or not np.isclose(weights.sum(), 1.0):
        raise FitError("mixture weights must be non-negative and sum to 1.")
    labels = rng.choice(weights.shape[0], size=n, p=weights / weights.sum())
    X = np.empty((n, means.shape[1]))
    draw = sample_pkb if family == "pkb" else sample_scauchy
    for k in range(weights.shape[0]):
        rows = np.flatnonzero(labels == k)
        if rows.size:
            X[rows] = draw(means[k], float(concentrations[k]), rows.size, rng)
    return X, labels


def _unit_vector(mean: np.ndarray) -> np.ndarray:
    mean = np.asarray(mean, dtype=float).ravel()
    norm = np.linalg.norm(mean)
    if mean.shape[0] < 2 or not np.isfinite(norm) or norm == 0.0:
        raise FitError("the centre μ must be a finite non-zero vector of dimension >= 2.")
    return mean / norm


def _check_rho(rho: float) -> None:
    if not (0.0 <= rho < 1.0):
        raise FitError(f"the concentration ρ must lie in [0, 1), got {rho}.")
