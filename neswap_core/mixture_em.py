"""The EM of ``SphericalMixture`` (SPEC §4): densities, the M-step, annealing, batched runs.

Densities w.r.t. the normalised uniform measure, with q = ‖x − ρμ‖² = (1 − ρ)² + 2ρ(1 − μᵀx)
(this form has no cancellation near x = ρμ):

    log f(x | μ, ρ) = α log(1 − ρ²) − β log q,   PKB: α = 1, β = d/2;  sC: α = β = d − 1.

M-step (derivation). With posteriors r_ik, π_k = N_k / n, N_k = Σ_i r_ik, and (μ_k, ρ_k)
maximise Q_k = Σ_i r_ik [α log(1 − ρ²) − β log q_i]. No closed form exists, but log is
concave, so log q ≤ log q⁰ + q/q⁰ − 1 with q⁰ at the current parameters, and

    Q_k ≥ G_k(μ, ρ) = N_k α log(1 − ρ²) − β (1 + ρ²) W_k + 2βρ μᵀv_k + const,
    s_ik = r_ik / q⁰_ik,  W_k = Σ_i s_ik,  v_k = Σ_i s_ik x_i,

with equality at the current parameters (a minorise–maximise step). G_k is maximised by
μ = v_k / ‖v_k‖ for any ρ > 0, and then by the ρ that maximises the strictly concave
N α log(1 − ρ²) − βW(1 + ρ²) + 2βρ‖v‖; setting its derivative to zero gives

    (1 − ρ²)(r − ρ) = c ρ,   r = ‖v_k‖ / W_k ∈ [0, 1],   c = α N_k / (β W_k) > 0,

a cubic that is r ≥ 0 at ρ = 0 and −c < 0 at ρ = 1, so exactly one root lies in [0, 1) (the
other two are < 0 and > 1). It is taken in closed (trigonometric) form and polished by two
Newton steps. Q_k(new) ≥ G_k(new) ≥ G_k(old) = Q_k(old): a generalised EM, so the
log-likelihood never decreases except when a component is dropped or while annealing (the
tests check this).
An iteration costs two (n × d)(d × K) products: C = X Mᵀ gives the E-step, q⁰ and the
log-likelihood of the current parameters, and V = Sᵀ X gives all v_k; the rest is O(nK).

Numerics. Everything is in log space. ρ is kept at most ``RHO_MAX`` = 1 − 1e-6: a component
with ρ → 1 has collapsed onto duplicated points, where the likelihood is unbounded. At the
ceiling q ≥ 1e-12, and q below ``Q_DIRECT`` is computed directly as ‖x − ρμ‖² (the rounding of
1 − μᵀx, ≈ 1e-16, would otherwise move log f of a duplicated point by β·1e-4), so densities
stay finite, smooth and deterministic. A component that reaches the ceiling is dropped
(``collapse="drop"``, default: its spike of ≈ 27β nats per duplicated point would dominate the
utility measure) or kept clamped (``collapse="keep"``); either way it is counted in
``n_collapsed_`` and announced by a ``MixtureWarning``. A ``min_weight`` above 1/n prevents
single-point collapse. Posteriors below e^-60 are floored there (their mass, ≈ 1e-26, is
negligible): subnormal numbers would slow the next product ten-fold.

Float32. A float32 dot product errs by ≈ 1e-7 in μᵀx, which the log density multiplies by
2βρ/q ≈ d/q: harmless for the posteriors of ordinary points (≈ 1e-4 nats for d = 384,
q ≈ 0.5), fatal near a collapse (measured: the EM then stalls ρ near 1 − 1e-4 and the
log-likelihood goes down). ``precision="mixed"`` (default) therefore uses float32 only inside
the two products and repairs what they cannot resolve: q < ``Q_DIRECT_MIXED`` is recomputed
directly in float64, the sums v_k of tight components (1 − r < ``TIGHT``, where ρ hangs on
1 − r) are redone in float64, and the returned parameters are evaluated in float64 (loglik_,
labels_, every public method). Its trace is monotone up to ≈ 1e-7 relative, below the stopping
tolerance; final log-likelihoods equal float64 runs to ≈ 1e-4 nats on the benchmark data, at
1.3–2× less time per iteration. ``precision="float64"`` is exact throughout.

Annealing: see ``anneal``; the choice of starts: see ``mixture``.
"""

from __future__ import annotations

import numpy as np

from .errors import ConfigError
from .mixture_init import Starts
from .mixture_sampling import FAMILIES

RHO_MAX = 1.0 - 1e-6
TIGHT = 1e-3
Q_DIRECT = 1e-6
Q_DIRECT_MIXED = 0.05
LOG_POSTERIOR_FLOOR = -60.0
ANNEAL_START = 20.0  # annealing starts at γ = ANNEAL_START / β
SEPARATED = 0.9  # share of unambiguous points (max posterior ≥ 0.999) of separated clusters


def family_exponents(family: str, d: int) -> tuple[float, float]:
    """(α, β) of log f = α log(1 − ρ²) − β log q for a family in dimension d."""
    if family == "pkb":
        return 1.0, d / 2.0
    if family == "scauchy":
        return d - 1.0, d - 1.0
    raise ConfigError(f"family must be one of {FAMILIES}, got {family!r}.")


def log_density_from_cos(X: np.ndarray, means: np.ndarray, cos: np.ndarray, rho: np.ndarray,
                          family: str, log_weights: np.ndarray | float = 0.0,
                          q_direct: float = Q_DIRECT) -> tuple[np.ndarray, np.ndarray]:
    """(log f + log π, q), shape (..., K, n), from the cosines ``cos`` = μᵀx of that shape.

    rho, means and log_weights have the leading shape (..., K). Components are rows, so that
    reductions over K run along contiguous rows. q = (1 − ρ)² + 2ρ(1 − μᵀx), except where
    q < ``q_direct``: there the rounding of μᵀx would be a visible share of q, so
    q = ‖x − ρμ‖² is computed directly in float64.
    """
    a, b = family_exponents(family, X.shape[1])
    rho_ = np.asarray(rho)[..., None]
    q = np.subtract(1.0, cos, dtype=np.float64, order="C")
    q *= 2.0 * rho_
    q += (1.0 - rho_) ** 2
    near = np.nonzero(q < q_direct) if q.min() < q_direct else (np.empty(0, dtype=int),)
    if near[0].size:
        comp, rows = near[:-1], near[-1]
        diff = X[rows] - np.asarray(rho)[comp][:, None] * means[comp]
        q[near] = np.einsum("ij,ij->i", diff, diff)
    logp = np.log(q)
    logp *= -b
    logp += (a * (np.log1p(-rho) + np.log1p(rho)) + log_weights)[..., None]
    return logp, q


def solve_concentration(r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The root in [0, 1) of (1 − ρ²)(r − ρ) = cρ (the M-step for ρ), clipped to RHO_MAX."""
    r = np.clip(np.asarray(r, dtype=np.float64), 0.0, 1.0)
    c = np.asarray(c, dtype=np.float64)
    # ρ³ − rρ² − (1 + c)ρ + r = 0; depressed by ρ = y + r/3: y³ + p y + t = 0, p < 0.
    p = -(1.0 + c) - r * r / 3.0
    t = -2.0 * r**3 / 27.0 - r * (1.0 + c) / 3.0 + r
    amp = 2.0 * np.sqrt(-p / 3.0)
    angle = np.arccos(np.clip(3.0 * t / (p * amp), -1.0, 1.0)) / 3.0
    rho = amp * np.cos(angle - 2.0 * np.pi / 3.0) + r / 3.0  # the middle of the three roots
    for _ in range(2):
        h = (1.0 - rho * rho) * (r - rho) - c * rho
        slope = -2.0 * rho * (r - rho) - (1.0 - rho * rho) - c
        rho = np.clip(rho - h / slope, 0.0, 1.0)
    return np.minimum(rho, RHO_MAX)


class EMState:
    """Parameters of B EM runs at once: weights (B, K), means (B, K, d), rho (B, K)."""

    def __init__(self, weights: np.ndarray, means: np.ndarray, rho: np.ndarray) -> None:
        self.weights, self.means, self.rho = weights, means, rho
        self.active = weights > 0
        self.trace: list[np.ndarray] = []
        self.n_iter = 0
        self.converged = np.zeros(weights.shape[0], dtype=bool)
        self.drop_collapsed = True
        self.n_collapsed = np.zeros(weights.shape[0], dtype=int)  # collapsed and dropped

    def log_weights(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(self.active, np.log(self.weights), -np.inf)

    def take(self, runs: np.ndarray) -> EMState:
        """The runs ``runs`` (indices) as a state of their own."""
        out = EMState(self.weights[runs], self.means[runs], self.rho[runs])
        out.active = self.active[runs]
        out.trace = [t[runs] for t in self.trace]
        out.n_iter = self.n_iter
        out.converged = self.converged[runs]
        out.drop_collapsed = self.drop_collapsed
        out.n_collapsed = self.n_collapsed[runs]
        return out


class EMData:
    """The embeddings in float64 and the copy that enters the EM's matrix products."""

    def __init__(self, X: np.ndarray, precision: str) -> None:
        self.X = X
        self.Xp = X.astype(np.float32) if precision == "mixed" else X
        self.q_direct = Q_DIRECT if self.Xp is X else Q_DIRECT_MIXED


def e_step(data: EMData, state: EMState, family: str, cos: np.ndarray | None = None,
           exact: bool = False, temper: float = 1.0):
    """Per-point log-likelihood (B, n), posteriors (B, K, n) and q (B, K, n) of the state.

    ``cos`` = X·Mᵀ (n, B·K) when already computed; ``exact`` forces the float64 product;
    ``temper`` = γ < 1 gives the annealed posteriors ∝ (π f)^γ (the log-likelihood stays the
    true one).
    """
    X = data.X if exact else data.Xp
    n, d = X.shape
    B, K, _ = state.means.shape
    if cos is None:
        cos = X @ state.means.reshape(B * K, d).T.astype(X.dtype)
    logp, q = log_density_from_cos(data.X, state.means, cos.T.reshape(B, K, n), state.rho,
                                   family, state.log_weights(),
                                   Q_DIRECT if exact else data.q_direct)
    true_lse = _logsumexp(logp) if temper != 1.0 else None
    if temper != 1.0:
        logp *= temper
    top = logp.max(axis=1)
    logp -= top[:, None]
    np.maximum(logp, LOG_POSTERIOR_FLOOR, out=logp)  # no subnormal numbers: they would slow
    post = np.exp(logp, out=logp)  # the next product ten-fold; the floor's mass is ≈ 1e-26
    total = post.sum(axis=1)
    post /= total[:, None]
    lse = top + np.log(total) if true_lse is None else true_lse
    return lse, post, q


def _logsumexp(logp: np.ndarray) -> np.ndarray:
    """log Σ_k exp(logp) over the component axis of (B, K, n)."""
    top = logp.max(axis=1)
    return top + np.log(np.exp(logp - top[:, None]).sum(axis=1))


def m_step(data: EMData, post: np.ndarray, q: np.ndarray, state: EMState, family: str,
            min_weight: float) -> None:
    """One minorise–maximise M-step for every run of the batch (module docstring).

    With precision="mixed" the sums of tight components (1 − r < ``TIGHT``), whose ρ hangs
    on 1 − r, are redone in float64.
    """
    n, d = data.X.shape
    B, K, _ = state.means.shape
    a, b = family_exponents(family, d)
    mass = post.sum(axis=2)  # N_k, (B, K)
    s = np.divide(post, q, out=q)
    w = s.sum(axis=2)
    s_p = s.reshape(B * K, n).astype(data.Xp.dtype)
    if data.Xp is data.X:
        v = (s_p @ data.X).reshape(B, K, d)
    else:  # this operand order is the faster one for float32 (measured)
        v = (data.Xp.T @ s_p.T).T.reshape(B, K, d).astype(np.float64)
    norm_v = np.linalg.norm(v, axis=2)
    if data.Xp is not data.X:
        for run, k in np.argwhere(norm_v > (1.0 - TIGHT) * w):
            v[run, k] = s[run, k] @ data.X
            norm_v[run, k] = np.linalg.norm(v[run, k])
    update = state.active & (mass > 0) & (norm_v > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = v / norm_v[..., None]
        rho = solve_concentration(norm_v / w, a * mass / (b * w))
    state.means = np.where(update[..., None], means, state.means)
    state.rho = np.where(update, rho, state.rho)
    weights = np.where(state.active, mass / n, 0.0)
    state.active = state.active & (weights > 0) & (weights >= min_weight)
    if state.drop_collapsed:
        collapsed = state.active & (state.rho >= RHO_MAX)
        state.n_collapsed += collapsed.sum(axis=1)
        state.active &= ~collapsed
    weights = np.where(state.active, weights, 0.0)
    state.weights = weights / weights.sum(axis=1, keepdims=True)


def run_em(data: EMData, state: EMState, family: str, *, max_steps: int, tol: float,
           min_weight: float, first: tuple) -> tuple:
    """EM steps until the leading run's relative log-likelihood change is at most ``tol``
    (a single run: until it converges), at most ``max_steps``.

    ``first`` is the E-step of the current state (already in the trace). Returns the E-step of
    the final parameters.
    """
    estep = first
    for _ in range(max_steps):
        m_step(data, estep[1], estep[2], state, family, min_weight)
        state.n_iter += 1
        estep = e_step(data, state, family)
        state.trace.append(estep[0].sum(axis=1))
        prev, last = state.trace[-2], state.trace[-1]
        state.converged = np.abs(last - prev) <= tol * np.abs(last)
        if state.converged[np.argmax(last)]:
            break
    return estep


def take_estep(estep: tuple, runs: np.ndarray) -> tuple:
    """The E-step arrays of the runs ``runs`` (the run axis is the first of each)."""
    return tuple(part[runs] for part in estep)


def anneal(data: EMData, state: EMState, family: str, *, steps: int, min_weight: float,
           first: tuple) -> tuple:
    """Deterministic annealing (Ueda & Nakano 1998): ``steps`` EM steps whose posteriors are
    ∝ (π_k f_k)^γ, γ rising geometrically from ``ANNEAL_START``/β to 1. In high dimension
    f_k differ by hundreds of nats, so plain EM assigns points almost at once and keeps the
    first partition it sees; a small γ lets components move before they commit (measured on
    the dev-corpus embeddings: spherical Cauchy K = 30 from random partitions, mean
    log-likelihood 137,257 → 138,585 over 5 starts). Returns the E-step after annealing.
    The trace goes on recording the true log-likelihood, which may fall while γ < 1."""
    _, beta = family_exponents(family, data.X.shape[1])
    gamma = min(1.0, ANNEAL_START / beta)
    if gamma >= 1.0 or steps <= 0:
        return first
    growth = (1.0 / gamma) ** (1.0 / steps)
    for i in range(steps):
        estep = e_step(data, state, family, temper=gamma)  # and the true log-likelihood
        if i:
            state.trace.append(estep[0].sum(axis=1))
        m_step(data, estep[1], estep[2], state, family, min_weight)
        state.n_iter += 1
        gamma = min(1.0, gamma * growth)
    estep = e_step(data, state, family)
    state.trace.append(estep[0].sum(axis=1))
    return estep


def unambiguous_share(post: np.ndarray) -> np.ndarray:
    """Per run, the share of points whose largest posterior is at least 0.999 (B, K, n)."""
    return (post.max(axis=1) >= 0.999).mean(axis=1)


def initial_state(data: EMData, starts: Starts, family: str):
    """State of B runs from their starts, and its first E-step (reusing X·seedsᵀ).

    Random partitions give weights and ρ from their parts (ρ solves the M-step equation from
    ρ = 0 with the part's mean resultant length); the other starts assign every point to its
    nearest centre and take weights and ρ from those groups (mean cosine to the centre).
    """
    n, d = data.X.shape
    seeds = starts.means
    B, K, _ = seeds.shape
    cos = data.Xp @ seeds.reshape(B * K, d).T.astype(data.Xp.dtype)  # (n, B·K)
    counts, resultant = starts.sizes.copy(), starts.resultants.copy()
    for run in np.flatnonzero(np.isnan(counts[:, 0])):
        block = cos[:, run * K:(run + 1) * K]
        labels = block.argmax(axis=1)
        counts[run] = np.bincount(labels, minlength=K)
        nearest = block[np.arange(n), labels].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            resultant[run] = np.bincount(labels, weights=nearest, minlength=K) / counts[run]
    a, beta = family_exponents(family, d)
    rho = solve_concentration(np.nan_to_num(resultant), np.full((B, K), a / beta))
    empty = counts == 0  # a seed nearest to no point: a typical ρ and weight 1/n
    if empty.any():
        rho[empty] = np.median(rho[~empty]) if (~empty).any() else 0.5
    weights = np.where(empty, 1.0, counts) / n
    state = EMState(weights / weights.sum(axis=1, keepdims=True), seeds.copy(), rho)
    estep = e_step(data, state, family, cos)
    state.trace.append(estep[0].sum(axis=1))
    return state, estep


