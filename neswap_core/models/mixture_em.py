"""The EM of ``SphericalMixture`` (SPEC §4): densities, the M-step, annealing, batched runs.

Densities w.r.t. the normalised uniform measure, with q = ‖x − ρμ‖² = 1 + ρ² − 2ρμᵀx (its
absolute error, ≈ 1e-16, is that of μᵀx itself; small q is recomputed directly, see Numerics):

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
other two are < 0 and > 1). It is taken in closed (trigonometric) form and polished by one
Newton step. Q_k(new) ≥ G_k(new) ≥ G_k(old) = Q_k(old): a generalised EM, so the
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
the two products (entries below ``FLUSH_BELOW`` flushed to 0 in its copy of X) and repairs
what they cannot resolve: q < ``Q_DIRECT_MIXED`` is recomputed
directly in float64, the sums v_k of tight components (1 − r < ``TIGHT``, where ρ hangs on
1 − r) are redone in float64, and the returned parameters are evaluated in float64 (loglik_,
labels_, every public method). Its trace is monotone up to ≈ 1e-7 relative, below the stopping
tolerance; final log-likelihoods equal float64 runs to ≈ 1e-4 nats on the benchmark data, at
1.3–2× less time per iteration. ``precision="float64"`` is exact throughout. The float32
products run through torch (MKL) when it is installed, as it is for the embedding step
(1.3–1.9× faster than OpenBLAS on these skinny shapes, one thread), else through numpy with
the component rows zero-padded to a multiple of ``PAD``; posteriors and sums stay float64.

Annealing: see ``anneal``; the choice of starts: see ``mixture``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..errors import ConfigError
from .mixture_init import Starts
from .mixture_sampling import FAMILIES


@functools.lru_cache(maxsize=1)
def _torch():
    """torch for MKL's float32 products (installed for the embedding step, see EMData), or None
    (numpy's BLAS then). Imported on the first mixed-precision fit, not with this module: the
    import costs ~1 s that a warm app restart, which fits nothing, should not pay."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return None
    return torch


RHO_MAX = 1.0 - 1e-6
TIGHT = 1e-3
Q_DIRECT = 1e-6
Q_DIRECT_MIXED = 0.05
LOG_POSTERIOR_FLOOR = -60.0
ANNEAL_START = 20.0  # annealing starts at γ = ANNEAL_START / β
SEPARATED = 0.9  # share of unambiguous points (max posterior ≥ 0.999) of separated clusters
#: float32 entries below this are set to 0: products with them give subnormal numbers, which
#: slow the float32 products (measured: 10–15% of their time on the dev corpus, whose MiniLM
#: embeddings have two dimensions ≈ 1e-33 in every row); the change, < 1e-8 per entry, is
#: below float32's own rounding of a cosine (≈ 1e-7)
FLUSH_BELOW = 1e-8
TRANSPOSED_BYTES = 5 << 19  # X (float32) is also kept transposed up to 2.5 MB (see EMData)
PAD = 16  # float32 products run faster with the component count padded to a multiple of this


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
    reductions over K run along contiguous rows. q = 1 + ρ² − 2ρ μᵀx, except where
    q < ``q_direct``: there the rounding of μᵀx would be a visible share of q, so
    q = ‖x − ρμ‖² is computed directly in float64.
    """
    a, b = family_exponents(family, X.shape[1])
    rho_ = np.asarray(rho)[..., None]
    q = cos.astype(np.float64, order="C")  # a transposed cos is gathered here, once
    q *= -2.0 * rho_
    q += 1.0 + rho_ * rho_  # errs by ≈ 1e-16 absolute, as 1 − μᵀx itself does
    # q ≥ (1 − ρ)², so only components with (1 − ρ)² < q_direct can have such points
    hot = np.asarray(rho) > 1.0 - np.sqrt(q_direct)
    if hot.any() and q[hot].min() < q_direct:
        near = np.nonzero(q < q_direct)
        comp, rows = near[:-1], near[-1]
        diff = X[rows] - np.asarray(rho)[comp][:, None] * means[comp]
        q[near] = np.einsum("ij,ij->i", diff, diff)
    logp = np.log(q)
    logp *= -b
    logp += (a * (np.log1p(-rho) + np.log1p(rho)) + log_weights)[..., None]
    return logp, q


def solve_concentration(r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The root in [0, 1) of (1 − ρ²)(r − ρ) = cρ (the M-step for ρ), clipped to RHO_MAX."""
    r = np.minimum(np.maximum(np.asarray(r, dtype=np.float64), 0.0), 1.0)
    c1 = 1.0 + np.asarray(c, dtype=np.float64)
    # ρ³ − rρ² − (1 + c)ρ + r = 0; depressed by ρ = y + r/3: y³ + p y + t = 0, p < 0.
    r2 = r * r
    p = -c1 - r2 / 3.0
    t = r * (1.0 - c1 / 3.0 - r2 * (2.0 / 27.0))
    amp = 2.0 * np.sqrt(p / -3.0)
    angle = np.arccos(np.minimum(np.maximum(3.0 * t / (p * amp), -1.0), 1.0)) / 3.0
    rho = amp * np.cos(angle - 2.0 * np.pi / 3.0) + r / 3.0  # the middle of the three roots
    rr, gap = rho * rho, r - rho  # one Newton step: roots agree with brentq to ≈ 1e-11
    h = (1.0 - rr) * gap - (c1 - 1.0) * rho
    rho -= h / (rr - c1 - 2.0 * rho * gap)
    return np.minimum(np.maximum(rho, 0.0), RHO_MAX)


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
        out = np.empty(self.weights.shape)
        out.fill(-np.inf)
        return np.log(self.weights, out=out, where=self.active)

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
    """The embeddings in float64 and the copy that enters the EM's matrix products.

    With precision="mixed" the two float32 products go through torch (MKL) when it is
    installed: 1.3–1.9× faster than OpenBLAS for these skinny shapes (measured, one thread).
    """

    def __init__(self, X: np.ndarray, precision: str) -> None:
        self.X = X
        self.Xp = X.astype(np.float32) if precision == "mixed" else X
        if self.Xp is not X:  # flushed: see FLUSH_BELOW
            self.Xp[np.abs(self.Xp) < FLUSH_BELOW] = 0.0
        # a transposed copy (d, n) gives the cosines component-major, as the E-step uses them
        # (3% of an iteration on the dev corpus, 1.9 MB); for larger X streaming a second copy
        # costs more than transposing the (n, K) product (measured at 3.1 MB and above)
        self.XTp = (np.ascontiguousarray(self.Xp.T)
                    if self.Xp is not X and self.Xp.nbytes <= TRANSPOSED_BYTES else None)
        self.q_direct = Q_DIRECT if self.Xp is X else Q_DIRECT_MIXED
        torch = _torch() if self.Xp is not X else None
        self._xt = torch.from_numpy(self.Xp) if torch is not None else None
        self._xtt = torch.from_numpy(self.XTp) if torch is not None and self.XTp is not None else None

    def operand_rows(self, m: int) -> int:
        """Rows of the float32 operand that holds m component rows (zero padding)."""
        return m if self._xt is not None else -(-m // PAD) * PAD

    def cosines(self, rows: np.ndarray) -> np.ndarray:
        """rows · Xpᵀ in the products' precision, (≥ m, n) for rows (m, d), component-major
        (a transposed view when X has no transposed copy)."""
        if self._xtt is not None:
            return (_torch().from_numpy(rows.astype(np.float32)) @ self._xtt).numpy()
        if self._xt is not None:
            r = _torch().from_numpy(np.ascontiguousarray(rows.T, dtype=np.float32))  # (d, m):
            return (self._xt @ r).numpy().T  # faster than a transposed view (measured)
        if self.XTp is not None:
            return padded_rows(rows, self.Xp.dtype) @ self.XTp
        return (self.Xp @ padded_rows(rows, self.Xp.dtype).T).T

    def sums(self, s: np.ndarray) -> np.ndarray:
        """s · Xp for float32 s (operand_rows(m), n), in float64, (operand_rows(m), d)."""
        if self._xt is not None:
            return (_torch().from_numpy(s) @ self._xt).numpy().astype(np.float64)
        # this operand order is the faster one for OpenBLAS float32 (measured)
        return (self.Xp.T @ s.T).T.astype(np.float64)


def e_step(data: EMData, state: EMState, family: str, cos: np.ndarray | None = None,
           exact: bool = False, temper: float = 1.0):
    """Per-point log-likelihood (B, n), posteriors (B, K, n) and q (B, K, n) of the state.

    ``cos`` = M·Xᵀ (≥ B·K, n) when already computed; ``exact`` forces the float64 product;
    ``temper`` = γ < 1 gives the annealed posteriors ∝ (π f)^γ (the log-likelihood stays the
    true one).
    """
    X = data.X if exact else data.Xp
    n, d = X.shape
    B, K, _ = state.means.shape
    if cos is None:
        rows = state.means.reshape(B * K, d)
        cos = rows @ X.T if exact or data.Xp is data.X else data.cosines(rows)
    logp, q = log_density_from_cos(data.X, state.means, cos[:B * K].reshape(B, K, n), state.rho,
                                   family, state.log_weights(),
                                   Q_DIRECT if exact else data.q_direct)
    true_lse = _logsumexp(logp) if temper != 1.0 else None
    if temper != 1.0:
        logp *= temper
    top = logp.max(axis=1)
    logp -= top[:, None]
    post = _floored_exp(logp)  # floored: subnormal numbers would slow the next product
    total = post.sum(axis=1)
    post *= (1.0 / total)[:, None]
    lse = top + np.log(total) if true_lse is None else true_lse
    return lse, post, q


def _floored_exp(logp: np.ndarray) -> np.ndarray:
    """exp(max(logp, LOG_POSTERIOR_FLOOR)) in place (torch's kernels: 2–4× faster here)."""
    torch = _torch()
    if torch is not None and logp.flags.c_contiguous:
        torch.from_numpy(logp).clamp_min_(LOG_POSTERIOR_FLOOR).exp_()
        return logp
    np.maximum(logp, LOG_POSTERIOR_FLOOR, out=logp)
    return np.exp(logp, out=logp)


def padded_rows(rows: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """rows (m, ·) as ``dtype``; in float32 with zero rows up to a multiple of ``PAD``
    (OpenBLAS's float32 kernels take K = 16 faster than K = 10, 32 than 30: measured)."""
    if dtype != np.float32 or rows.shape[0] % PAD == 0:
        return rows.astype(dtype)
    out = np.zeros((-(-rows.shape[0] // PAD) * PAD, rows.shape[1]), dtype=dtype)
    out[:rows.shape[0]] = rows
    return out


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
    if data.Xp is data.X:
        v = (s.reshape(B * K, n) @ data.X).reshape(B, K, d)
    else:  # the float32 operand, zero-padded where that makes the product faster
        s_p = s.reshape(B * K, n).astype(np.float32)
        if data.operand_rows(B * K) > B * K:
            s_p = np.vstack([s_p, np.zeros((data.operand_rows(B * K) - B * K, n), np.float32)])
        v = data.sums(s_p)[:B * K].reshape(B, K, d)
    norm_v = np.sqrt(np.square(v).sum(axis=2))
    tight = norm_v > (1.0 - TIGHT) * w
    if data.Xp is not data.X and tight.any():
        for run, k in np.argwhere(tight):
            v[run, k] = s[run, k] @ data.X
            norm_v[run, k] = np.linalg.norm(v[run, k])
    update = state.active & (mass > 0) & (norm_v > 0)
    if update.all():  # the usual case, without the guards (small arrays: overhead counts)
        state.means = v / norm_v[..., None]
        state.rho = solve_concentration(norm_v / w, (a / b) * mass / w)
    else:
        safe_norm, safe_w = np.where(update, norm_v, 1.0), np.where(update, w, 1.0)
        means = v / safe_norm[..., None]
        rho = solve_concentration(norm_v / safe_w, a * mass / (b * safe_w))
        state.means = np.where(update[..., None], means, state.means)
        state.rho = np.where(update, rho, state.rho)
    weights = mass / n  # inactive components keep weight 0 through ``active``
    state.active = state.active & (weights > 0) & (weights >= min_weight)
    if state.drop_collapsed and state.rho.max() >= RHO_MAX:
        collapsed = state.active & (state.rho >= RHO_MAX)
        state.n_collapsed += collapsed.sum(axis=1)
        state.active &= ~collapsed
    weights[~state.active] = 0.0
    weights /= weights.sum(axis=1, keepdims=True)
    state.weights = weights


def run_em(data: EMData, state: EMState, family: str, *, max_steps: int, tol: float,
           min_weight: float, first: tuple,
           on_step: Callable[[int, float], None] | None = None) -> tuple:
    """EM steps until the leading run's relative log-likelihood change is at most ``tol``
    (a single run: until it converges), at most ``max_steps``.

    ``first`` is the E-step of the current state (already in the trace). Returns the E-step of
    the final parameters. ``on_step(n_iter, change)`` is called after each step with the
    leading run's relative change (progress display, ``fit_progress``).
    """
    estep = first
    for _ in range(max_steps):
        m_step(data, estep[1], estep[2], state, family, min_weight)
        state.n_iter += 1
        estep = e_step(data, state, family)
        state.trace.append(estep[0].sum(axis=1))
        prev, last = state.trace[-2], state.trace[-1]
        change = np.abs(last - prev)
        state.converged = change <= tol * np.abs(last)
        lead = int(np.argmax(last))
        if on_step is not None:
            on_step(state.n_iter, float(change[lead] / max(abs(last[lead]), 1e-300)))
        if state.converged[lead]:
            break
    return estep


def take_estep(estep: tuple, runs: np.ndarray) -> tuple:
    """The E-step arrays of the runs ``runs`` (the run axis is the first of each)."""
    return tuple(part[runs] for part in estep)


def anneal(data: EMData, state: EMState, family: str, *, steps: int, min_weight: float,
           first: tuple, on_step: Callable[[int, float], None] | None = None) -> tuple:
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
        if on_step is not None:
            on_step(state.n_iter, float("nan"))
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
    rows = seeds.reshape(B * K, d)
    cos = rows @ data.X.T if data.Xp is data.X else data.cosines(rows)  # (≥ B·K, n)
    counts, resultant = starts.sizes.copy(), starts.resultants.copy()
    for run in np.flatnonzero(np.isnan(counts[:, 0])):
        block = cos[run * K:(run + 1) * K]
        labels = block.argmax(axis=0)
        counts[run] = np.bincount(labels, minlength=K)
        nearest = block[labels, np.arange(n)].astype(np.float64)
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


