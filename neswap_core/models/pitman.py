"""The Ewens–Pitman model of cell frequencies and the expected population uniques (SPEC §5).

A table with s_j cells of size j (k = Σ s_j cells, n = Σ j s_j records) has, under Pitman's
sampling formula with discount α ∈ [0, 1) and strength θ > −α, the log-likelihood kernel

    L(θ, α) = Σ_{i=1}^{k−1} log(θ + iα) − Σ_{i=1}^{n−1} log(θ + i) + Σ_j s_j [lnΓ(j−α) − lnΓ(1−α)].

Everything here is closed form in log-gamma / digamma / trigamma; the only sums over i are
numpy sums used where the closed forms cancel (θ/α ≫ k, see ``_rising_log_sum``).
``PitmanEstimator`` finds the MLE by safeguarded Newton–Raphson and names every degenerate case.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from ..errors import FitError


def _special():
    """``scipy.special``, imported when an estimate is computed, not when a page that shows
    kept figures imports the risk module (0.12 s of each page's first draw, issue 21)."""
    import scipy.special

    return scipy.special


def digamma(x):
    return _special().digamma(x)


def gammaln(x):
    return _special().gammaln(x)


def zeta(x, q=None):
    return _special().zeta(x, q)


FitStatus = Literal[
    "ok",  # interior MLE, Newton converged
    "ewens",  # the MLE lies on the boundary α = 0 (Ewens); p̂ ≈ 0 for large N
    "all_unique",  # every cell has one record: the likelihood grows without bound as θ → ∞
    "single_cell",  # all records in one cell: supremum as θ → −α, for every α
    "no_uniques",  # s₁ = 0: the fit may be fine but p̂ = Ŝ₁/s₁ and DR are undefined
    "too_few",  # one record: the likelihood is flat, nothing to estimate
    "empty",  # no records at all
    "not_converged",  # Newton stopped without meeting the tolerance; values are the last iterate
]
FrequencyInput = Mapping[int, int] | np.ndarray | list | tuple

_EPS = np.finfo(float).eps
_STIRLING_MIN = 10.0  # log_gamma_ratio switches to the Stirling form above this argument
_DIRECT_RATIO = 4.0  # θ/α > 4·m: closed-form α-derivatives cancel, sum the m terms directly
# Stirling tail of lnΓ: Σ B_2k / (2k(2k−1) x^(2k−1)), k = 1..7 (error < 1e-17 for x ≥ 10).
_STIRLING_COEFS = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)
# ψ(x) = ln x − 1/(2x) − Σ B_2k / (2k x^2k), k = 1..7: the coefficients B_2k / (2k).
_DIGAMMA_COEFS = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


class PitmanWarning(UserWarning):
    """A Pitman fit or a p̂ needs the analyst's attention (no convergence, p̂ > 1)."""


@dataclass(frozen=True)
class FrequencyCounts:
    """A frequency-of-frequencies table: ``counts[i]`` cells hold exactly ``sizes[i]`` records."""

    sizes: np.ndarray  # distinct cell sizes j ≥ 1, ascending (int64)
    counts: np.ndarray  # s_j > 0 for each size (int64)

    @cached_property
    def n(self) -> int:
        """Number of records n = Σ j s_j."""
        return int(np.dot(self.sizes, self.counts))

    @cached_property
    def k(self) -> int:
        """Number of non-empty cells k = Σ s_j."""
        return int(self.counts.sum())

    @cached_property
    def s1(self) -> int:
        """Number of sample uniques s₁ (cells of size 1)."""
        return int(self.counts[self.sizes == 1].sum())


def _as_count(value: object, what: str) -> int:
    """A non-negative integer from an int-like value; FitError otherwise."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = float("nan")
    if not np.isfinite(number) or number < 0 or number != int(number):
        raise FitError(
            f"Frequency-of-frequencies {what} must be non-negative integers, got {value!r}; "
            "pass {class size j: number of cells s_j} or an array whose entry j is s_j."
        )
    return int(number)


def as_frequency_counts(fof: FrequencyInput | FrequencyCounts) -> FrequencyCounts:
    """Validate {j: s_j} or an array with entry j = s_j (entry 0 must be 0) into FrequencyCounts."""
    if isinstance(fof, FrequencyCounts):
        return fof
    if isinstance(fof, Mapping):
        pairs = [(_as_count(j, "class sizes"), _as_count(s, "cell counts")) for j, s in fof.items()]
    else:
        arr = np.asarray(fof)
        if arr.ndim != 1:
            raise FitError(
                "A frequency-of-frequencies array must be one-dimensional (entry j = s_j)."
            )
        pairs = [(j, _as_count(s, "cell counts")) for j, s in enumerate(arr.tolist())]
        if pairs and pairs[0][1] != 0:
            raise FitError(
                "Entry 0 of a frequency-of-frequencies array (cells of size 0) must be 0."
            )
    if any(j == 0 and s > 0 for j, s in pairs):
        raise FitError("Class size 0 is meaningless: every cell holds at least one record.")
    merged: dict[int, int] = {}
    for j, s in pairs:
        if j > 0 and s > 0:
            merged[j] = merged.get(j, 0) + s
    sizes = np.array(sorted(merged), dtype=np.int64)
    return FrequencyCounts(sizes, np.array([merged[j] for j in sizes.tolist()], dtype=np.int64))


def _stirling_tail(x):
    """lnΓ(x) − [(x−½) ln x − x + ½ ln 2π] for x ≥ 10 (asymptotic series, Horner in 1/x²).

    Works on floats and on numpy arrays alike.
    """
    inv = 1.0 / x
    inv2 = inv * inv
    acc = 0.0
    for coef in reversed(_STIRLING_COEFS):
        acc = acc * inv2 + coef
    return acc * inv


def log_gamma_ratio(a: np.ndarray | float, m: np.ndarray | float) -> np.ndarray | float:
    """lnΓ(a + m) − lnΓ(a) for a > 0, a + m > 0, accurate even when a ≫ |m| (a up to 1e300).

    A naive gammaln difference loses everything at a = 1e30 (both terms ≈ 7e31); for
    min(a, a+m) ≥ 10 we use the Stirling difference
    (a − ½) log1p(m/a) + m ln(a+m) − m + tail(a+m) − tail(a), which has no cancellation.
    """
    if isinstance(a, float | int) and isinstance(m, float | int):
        return _log_gamma_ratio_scalar(float(a), float(m))
    a_arr, m_arr = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(m, dtype=float))
    b_arr = a_arr + m_arr
    big = np.minimum(a_arr, b_arr) >= _STIRLING_MIN
    out = np.where(
        big, 0.0, gammaln(np.where(big, 1.0, b_arr)) - gammaln(np.where(big, 1.0, a_arr))
    )
    if big.any():
        ab, mb, bb = a_arr[big], m_arr[big], b_arr[big]
        out[big] = (
            (ab - 0.5) * np.log1p(mb / ab)
            + mb * np.log(bb)
            - mb
            + (_stirling_tail(bb) - _stirling_tail(ab))
        )
    return out if out.ndim else float(out)


def _log_gamma_ratio_scalar(a: float, m: float) -> float:
    b = a + m
    if min(a, b) < _STIRLING_MIN:
        return math.lgamma(b) - math.lgamma(a)
    tail = _stirling_tail(b) - _stirling_tail(a)
    return (a - 0.5) * math.log1p(m / a) + m * math.log(b) - m + tail


def _digamma_diff(a: float, m: float) -> float:
    """ψ(a + m) − ψ(a) for a > 0, a + m > 0, to full relative accuracy even when a ≫ m.

    For a, a + m ≥ 10 the asymptotic series is differenced term by term:
    log1p(m/a) + m/(2a(a+m)) − [T(a+m) − T(a)], T(x) = Σ B_2k / (2k x^2k).
    """
    b = a + m
    if min(a, b) < _STIRLING_MIN:
        return float(digamma(b) - digamma(a))
    tail = 0.0
    for x, sign in ((b, 1.0), (a, -1.0)):
        inv2, acc = 1.0 / (x * x), 0.0
        for coef in reversed(_DIGAMMA_COEFS):
            acc = acc * inv2 + coef
        tail += sign * acc * inv2
    return math.log1p(m / a) + m / (2.0 * a * b) - tail


def _trigamma(x: np.ndarray | float) -> np.ndarray | float:
    return zeta(2.0, x)  # ψ₁(x) = ζ(2, x), the Hurwitz zeta function (x > 0)


def _sum_inverse(theta: float, alpha: float, m: int) -> float:
    """Σ_{i=1}^{m−1} 1/(θ + iα), the θ-derivative of ``_rising_log_sum`` (cheap, for root finding)."""
    if m <= 1:
        return 0.0
    if alpha == 0.0:
        return (m - 1) / theta
    return _digamma_diff(theta / alpha + 1.0, m - 1.0) / alpha


def _rising_log_value(theta: float, alpha: float, m: int) -> float:
    """S = Σ_{i=1}^{m−1} log(θ + iα) alone, always in closed form (cheap, for line searches)."""
    if m <= 1:
        return 0.0
    if alpha == 0.0:
        return (m - 1) * math.log(theta)
    return (m - 1) * math.log(alpha) + _log_gamma_ratio_scalar(theta / alpha + 1.0, m - 1.0)


def _rising_log_sum(theta: float, alpha: float, m: int) -> np.ndarray:
    """S = Σ_{i=1}^{m−1} log(θ + iα) and [S, ∂θ, ∂α, ∂θθ, ∂θα, ∂αα] (θ + α > 0, α ≥ 0).

    With x = θ/α: S = (m−1) ln α + lnΓ(x+m) − lnΓ(x+1) and the derivatives are digamma /
    trigamma differences. For x ≫ m the i-weighted forms such as (m−1) − 2xΔψ + x²Δψ₁ cancel
    (relative error ~3ε·(x/m)³·ln x), so beyond x > 4m the m−1 terms are summed directly with
    numpy instead: exact, and affordable because only Newton steps need these entries.
    """
    j = m - 1
    if j <= 0:
        return np.zeros(6)
    if alpha == 0.0:
        p1, p2 = j * (j + 1) / 2.0, j * (j + 1) * (2 * j + 1) / 6.0
        t2 = theta * theta
        return np.array([j * np.log(theta), j / theta, p1 / theta, -j / t2, -p1 / t2, -p2 / t2])
    x = theta / alpha
    if x > _DIRECT_RATIO * m:
        i = np.arange(1, m, dtype=float)
        inv = 1.0 / (theta + i * alpha)
        inv2 = inv * inv
        return np.array(
            [
                np.sum(np.log(theta + i * alpha)),
                inv.sum(),
                (i * inv).sum(),
                -inv2.sum(),
                -(i * inv2).sum(),
                -(i * i * inv2).sum(),
            ]
        )
    d0 = _digamma_diff(x + 1.0, m - 1.0)
    d1 = float(_trigamma(x + 1.0) - _trigamma(x + m))
    a2 = alpha * alpha
    return np.array(
        [
            j * np.log(alpha) + log_gamma_ratio(x + 1.0, float(j)),
            d0 / alpha,
            (j - x * d0) / alpha,
            -d1 / a2,
            -(d0 - x * d1) / a2,
            -(j - 2.0 * x * d0 + x * x * d1) / a2,
        ]
    )


def in_domain(theta: float, alpha: float) -> bool:
    """Whether (θ, α) is a valid Pitman parameter: 0 ≤ α < 1, θ > −α (θ > 0 when α = 0)."""
    ok = np.isfinite(theta) and 0.0 <= alpha < 1.0 and theta + alpha > 0.0
    return bool(ok and (alpha > 0.0 or theta > 0.0))


def _check_domain(theta: float, alpha: float) -> None:
    if not in_domain(theta, alpha):
        raise FitError(
            f"(theta={theta}, alpha={alpha}) is outside the Pitman domain 0 <= alpha < 1, "
            "theta > -alpha (theta > 0 when alpha = 0)."
        )


def pitman_loglik(theta: float, alpha: float, fof: FrequencyInput | FrequencyCounts) -> float:
    """The log-likelihood kernel L(θ, α) of SPEC §5; −inf outside the parameter domain."""
    fc = as_frequency_counts(fof)
    if not in_domain(theta, alpha):
        return -np.inf
    a_term = _rising_log_value(theta, alpha, fc.k)
    b_term = _rising_log_value(theta, 1.0, fc.n)
    c_term = np.dot(fc.counts, log_gamma_ratio(1.0 - alpha, fc.sizes - 1.0))
    return float(a_term - b_term + c_term)


def pitman_gradient(
    theta: float, alpha: float, fof: FrequencyInput | FrequencyCounts
) -> np.ndarray:
    """Analytic gradient [∂L/∂θ, ∂L/∂α] of the kernel."""
    fc = as_frequency_counts(fof)
    _check_domain(theta, alpha)
    a = _rising_log_sum(theta, alpha, fc.k)
    b = _rising_log_sum(theta, 1.0, fc.n)
    c_alpha = np.dot(fc.counts, digamma(1.0 - alpha) - digamma(fc.sizes - alpha))
    return np.array([a[1] - b[1], a[2] + c_alpha])


def pitman_hessian(theta: float, alpha: float, fof: FrequencyInput | FrequencyCounts) -> np.ndarray:
    """Analytic Hessian of the kernel, rows/columns ordered (θ, α)."""
    fc = as_frequency_counts(fof)
    _check_domain(theta, alpha)
    a = _rising_log_sum(theta, alpha, fc.k)
    b = _rising_log_sum(theta, 1.0, fc.n)
    c_aa = np.dot(fc.counts, _trigamma(fc.sizes - alpha) - _trigamma(1.0 - alpha))
    return np.array([[a[3] - b[3], a[4]], [a[4], a[5] + c_aa]])


def pitman_log_pmf(theta: float, alpha: float, fof: FrequencyInput | FrequencyCounts) -> float:
    """Log of the full Ewens–Pitman sampling formula P(s), with n!/(Π s_j! (j!)^{s_j})."""
    fc = as_frequency_counts(fof)
    combinatorial = (
        gammaln(fc.n + 1.0)
        - np.sum(gammaln(fc.counts + 1.0))
        - np.dot(fc.counts, gammaln(fc.sizes + 1.0))
    )
    return float(pitman_loglik(theta, alpha, fc) + combinatorial)


def expected_population_uniques(theta: float, alpha: float, population: np.ndarray | float):
    """Exact E S₁(N) = N Γ(θ+1)/Γ(θ+α) · Γ(N+θ+α−1)/Γ(N+θ) (≤ N), accurate for N up to 1e300."""
    _check_domain(theta, alpha)
    big_n = np.asarray(population, dtype=float)
    if np.any(~np.isfinite(big_n)) or np.any(big_n < 1):
        raise FitError(f"The population size N must be a finite number >= 1, got {population}.")
    log_s1 = (
        np.log(big_n)
        + log_gamma_ratio(theta + alpha, 1.0 - alpha)
        + log_gamma_ratio(big_n + theta, alpha - 1.0)
    )
    out = np.minimum(np.exp(log_s1), big_n)  # ≤ N exactly; rounding may add an ulp at N = 1
    return out if out.ndim else float(out)


def asymptotic_population_uniques(theta: float, alpha: float, population: np.ndarray | float):
    """Ŝ₁ ≈ Γ(θ+1)/Γ(θ+α) · N^α, the large-N form of the paper's (2.14) (used by ARX)."""
    _check_domain(theta, alpha)
    big_n = np.asarray(population, dtype=float)
    out = np.exp(log_gamma_ratio(theta + alpha, 1.0 - alpha) + alpha * np.log(big_n))
    return out if out.ndim else float(out)


# --- maximum likelihood ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Fit:
    theta: float
    alpha: float
    loglik: float
    converged: bool
    n_iter: int = 0


def _theta_score(fc: FrequencyCounts, theta: float, alpha: float) -> float:
    return _sum_inverse(theta, alpha, fc.k) - _sum_inverse(theta, 1.0, fc.n)


def _profile_theta(fc: FrequencyCounts, alpha: float) -> float:
    """θ̂(α) = argmax_θ L(θ, α): the root of ∂L/∂θ, bracketed and solved in u = ln(θ + α).

    ∂L/∂θ → +∞ as θ → −α (k ≥ 2) and ≈ (k − n)/θ < 0 as θ → ∞ (n > k), so a root exists.
    """

    from scipy.optimize import brentq  # here: SciPy's optimizers cost 0.2 s to import (issue 21)

    def score(u: float) -> float:
        return _theta_score(fc, float(np.exp(u)) - alpha, alpha)

    u_lo = float(np.log(max(alpha, 1.0) * 1e-8))
    u_hi = float(np.log(alpha + max(10.0, float(fc.n))))
    while score(u_hi) > 0.0:
        if u_hi > np.log(1e15):
            return float(np.exp(u_hi)) - alpha
        u_hi += np.log(4.0)
    u = brentq(score, u_lo, u_hi, xtol=1e-14, rtol=4 * _EPS, maxiter=500)
    return float(np.exp(u)) - alpha


def _ascent_direction(grad: np.ndarray, hess: np.ndarray) -> tuple[np.ndarray, bool]:
    """Newton direction (−H)⁻¹g, or an eigenvalue-modified one when −H is not positive definite.

    Works on the diagonally scaled system (θ and α differ by orders of magnitude).
    """
    neg = -hess
    scale = np.sqrt(np.maximum(np.abs(np.diag(neg)), 1e-300))
    neg_s, grad_s = neg / np.outer(scale, scale), grad / scale
    try:
        chol = np.linalg.cholesky(neg_s)
        step = np.linalg.solve(chol.T, np.linalg.solve(chol, grad_s))
        return step / scale, True
    except np.linalg.LinAlgError:
        w, v = np.linalg.eigh(neg_s)
        w = np.maximum(np.abs(w), max(1e-8 * np.abs(w).max(), 1e-12))
        return (v @ ((v.T @ grad_s) / w)) / scale, False


def _line_search(fc: FrequencyCounts, x: np.ndarray, f: float, step: np.ndarray, slope: float):
    """Backtracking (Armijo) search along ``step``; trial points with α < 0 are projected to 0.

    Returns (t, new point, new loglik); t = 0 when no acceptable point was found.
    """
    noise = 64 * _EPS * max(1.0, abs(f))  # L is only known to this absolute accuracy
    t = 1.0
    for _ in range(60):
        trial = x + t * step
        trial[1] = max(trial[1], 0.0)
        f_trial = pitman_loglik(trial[0], trial[1], fc)
        if f_trial >= f + 1e-4 * t * slope - noise:
            return t, trial, f_trial
        t *= 0.5
    return 0.0, x, f


def _newton(fc: FrequencyCounts, theta: float, alpha: float, tol: float, max_iter: int) -> _Fit:
    """Safeguarded Newton–Raphson from (θ, α); stops on the Ewens face α = 0 (not converged).

    Converged when −H is positive definite and the Newton decrement gᵀ(−H)⁻¹g/2 (the predicted
    gain in L) is below ``tol``; that last full Newton step is still taken.
    """
    x = np.array([theta, alpha], dtype=float)
    f = pitman_loglik(x[0], x[1], fc)
    for it in range(1, max_iter + 1):
        grad = pitman_gradient(x[0], x[1], fc)
        step, is_newton = _ascent_direction(grad, pitman_hessian(x[0], x[1], fc))
        slope = float(grad @ step)
        t, x, f = _line_search(fc, x, f, step, slope)
        if x[1] == 0.0:
            return _Fit(x[0], 0.0, f, False, it)
        if is_newton and slope / 2 < tol and t > 0.0:
            return _Fit(x[0], x[1], f, True, it)
        if t == 0.0:
            return _Fit(x[0], x[1], f, bool(is_newton and slope / 2 < 1e3 * tol), it)
    return _Fit(x[0], x[1], f, False, max_iter)


def _degenerate_status(fc: FrequencyCounts) -> FitStatus | None:
    if fc.n == 0:
        return "empty"
    if fc.n == 1:
        return "too_few"
    if fc.k == 1:
        return "single_cell"
    if fc.k == fc.n:
        return "all_unique"
    return None


_DEGENERATE_TEXT = {
    "empty": "No records: nothing to fit.",
    "too_few": "A single record: the likelihood is flat, (theta, alpha) cannot be estimated.",
    "single_cell": "All records share one cell: the likelihood approaches its supremum as "
    "theta -> -alpha, for every alpha, so there is no finite MLE (the limit has no population "
    "uniques).",
    "all_unique": "Every record is a sample unique: the likelihood increases without bound as "
    "theta -> infinity, so there is no finite MLE (the limit gives p_hat = 1).",
}


class PitmanEstimator:
    """MLE (θ̂, α̂) of Pitman's sampling formula from a frequency-of-frequencies table (SPEC §5).

    scikit-learn style: ``fit({j: s_j})`` returns self with ``theta_``, ``alpha_``, ``theta_se_``,
    ``alpha_se_`` (inverse observed information), ``loglik_``, ``converged_``, ``n_iter_``,
    ``status_`` (a ``FitStatus``), ``messages_``, ``n_``, ``k_``, ``s1_`` and ``profile_`` (rows
    α, θ̂(α), L of the start scan). Start: profile likelihood over an α grid; then safeguarded
    Newton; the Ewens branch α = 0 is solved on its own and the two compared by likelihood.
    Degenerate tables get a named status and the limiting values (see ``_DEGENERATE_TEXT``).

    Parameters: ``tol`` — bound on the Newton decrement (predicted log-likelihood gain);
    ``max_iter`` — Newton iterations; ``grid_size`` — α points of the start scan in [0, 1).
    """

    def __init__(self, tol: float = 1e-10, max_iter: int = 100, grid_size: int = 40) -> None:
        self.tol = tol
        self.max_iter = max_iter
        self.grid_size = grid_size

    def fit(self, frequency_of_frequencies: FrequencyInput | FrequencyCounts) -> PitmanEstimator:
        """Fit (θ, α) to {class size j: number of cells s_j}; returns self."""
        if not (self.tol > 0 and self.max_iter >= 1 and self.grid_size >= 2):
            raise FitError("PitmanEstimator needs tol > 0, max_iter >= 1 and grid_size >= 2.")
        fc = as_frequency_counts(frequency_of_frequencies)
        self.n_, self.k_, self.s1_ = fc.n, fc.k, fc.s1
        self.theta_se_ = self.alpha_se_ = float("nan")
        self.profile_ = np.empty((0, 3))
        status = _degenerate_status(fc)
        if status is not None:
            return self._set_degenerate(status)
        fit, status = self._fit_regular(fc)
        self.theta_, self.alpha_, self.loglik_ = fit.theta, fit.alpha, fit.loglik
        self.converged_, self.n_iter_ = fit.converged, fit.n_iter
        self._set_standard_errors(fc, status)
        messages = []
        if status == "ewens":
            messages.append(
                "alpha_hat = 0 (Ewens): expected population uniques stay near theta, "
                "so p_hat is close to 0 for a large population N."
            )
        if status == "not_converged":
            messages.append(
                f"Newton did not converge in {self.max_iter} iterations; the values "
                "are the last iterate. Raise max_iter or check the table."
            )
            warnings.warn(messages[-1], PitmanWarning, stacklevel=2)
        if fc.s1 == 0:
            messages.append(
                f"No sample uniques (s1 = 0; fit status {status!r}): p_hat and the "
                "disclosure risk are undefined."
            )
            status = "no_uniques"
        self.status_: FitStatus = status
        self.messages_ = tuple(messages)
        return self

    def _fit_regular(self, fc: FrequencyCounts) -> tuple[_Fit, FitStatus]:
        alphas = np.linspace(0.0, 1.0, self.grid_size + 1)[:-1]
        thetas = np.array([_profile_theta(fc, a) for a in alphas])
        logliks = np.array([pitman_loglik(t, a, fc) for t, a in zip(thetas, alphas, strict=True)])
        self.profile_ = np.column_stack([alphas, thetas, logliks])
        best = 1 + int(np.argmax(logliks[1:]))
        interior = _newton(fc, thetas[best], alphas[best], self.tol, self.max_iter)
        ewens = _Fit(float(thetas[0]), 0.0, float(logliks[0]), True, interior.n_iter)
        noise = 64 * _EPS * max(1.0, abs(ewens.loglik))
        ewens_kkt = pitman_gradient(ewens.theta, 0.0, fc)[1] <= 1e-8 * fc.n
        if interior.converged and interior.alpha > 0 and interior.loglik >= ewens.loglik - noise:
            return interior, "ok"
        if ewens_kkt and ewens.loglik >= interior.loglik - noise:
            return ewens, "ewens"
        better = interior if interior.loglik >= ewens.loglik else ewens
        return _Fit(
            better.theta, better.alpha, better.loglik, False, interior.n_iter
        ), "not_converged"

    def _set_standard_errors(self, fc: FrequencyCounts, status: FitStatus) -> None:
        hess = pitman_hessian(self.theta_, self.alpha_, fc)
        if status == "ewens":
            if hess[0, 0] < 0:
                self.theta_se_ = float(1.0 / np.sqrt(-hess[0, 0]))
            return
        try:
            cov = np.linalg.inv(-hess)
        except np.linalg.LinAlgError:
            return
        if np.all(np.diag(cov) > 0) and np.linalg.det(-hess) > 0:
            self.theta_se_, self.alpha_se_ = (float(v) for v in np.sqrt(np.diag(cov)))

    def _set_degenerate(self, status: FitStatus) -> PitmanEstimator:
        self.theta_ = float("inf") if status == "all_unique" else float("nan")
        self.alpha_ = float("nan")
        self.loglik_ = 0.0  # the supremum: these partitions have probability → 1 in the limit
        self.converged_, self.n_iter_ = False, 0
        self.status_ = status
        self.messages_ = (_DEGENERATE_TEXT[status],)
        return self

    def __repr__(self) -> str:
        return (
            f"PitmanEstimator(tol={self.tol}, max_iter={self.max_iter}, grid_size={self.grid_size})"
        )
