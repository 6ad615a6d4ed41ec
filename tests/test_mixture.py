"""Spherical mixtures (SPEC §4): densities, the M-step, EM, samplers and input checks.

Every number is checked against mathematics derived independently of the code under test:
1-D quadrature of the density of t = μᵀx, the Poisson-kernel mean E[x] = ρμ of PKB (the mean
of the harmonic function μᵀx), a direct ‖x − ρμ‖ formula, brentq roots, Monte Carlo.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, optimize, stats
from scipy.special import betaln, logsumexp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import adjusted_rand_score

from neswap_core.errors import ConfigError, FitError
from neswap_core.models.mixture import (
    ANNEAL_STEPS,
    RHO_MAX,
    MixtureWarning,
    NotFittedMixtureError,
    SphericalMixture,
    log_density,
    solve_concentration,
)
from neswap_core.models.mixture_sampling import (
    pkb_envelope,
    sample_mixture,
    sample_pkb,
    sample_scauchy,
    sample_uniform,
)

FAMILIES = ("pkb", "scauchy")


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def log_f_t(t: float, rho: float, d: int, family: str) -> float:
    """log f at μᵀx = t, written from SPEC §4 (‖x − ρμ‖² = 1 − 2ρt + ρ²)."""
    q = 1.0 - 2.0 * rho * t + rho * rho
    if family == "pkb":
        return math.log(1.0 - rho * rho) - 0.5 * d * math.log(q)
    return (d - 1.0) * (math.log(1.0 - rho * rho) - math.log(q))


def t_moment(rho: float, d: int, family: str, power: int) -> float:
    """E[tᵖ] under f, by quadrature of the density of t under the uniform measure."""
    log_c = -(d - 2) * math.log(2.0) - betaln((d - 1) / 2.0, (d - 1) / 2.0)

    def integrand(t: float) -> float:
        return t**power * math.exp(log_c + (d - 3) / 2.0 * math.log1p(-t * t)
                                   + log_f_t(t, rho, d, family))

    peaks = [rho, 2 * rho / (1 + rho * rho)]
    return integrate.quad(integrand, -1, 1, points=peaks, limit=400, epsabs=1e-12)[0]


def centres(k: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Well spread centres: a Fibonacci lattice on S², random (near-orthogonal) ones above."""
    if d == 3:
        i = np.arange(k) + 0.5
        phi, theta = np.arccos(1 - 2 * i / k), np.pi * (1 + 5**0.5) * i
        return np.c_[np.cos(theta) * np.sin(phi), np.sin(theta) * np.sin(phi), np.cos(phi)]
    return unit(rng.standard_normal((k, d)))


# --- densities --------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("d, rhos", [(3, (0.2, 0.5, 0.8)), (10, (0.1, 0.3))])
def test_density_integrates_to_one_monte_carlo(family, d, rhos):
    rng = np.random.default_rng(d)
    u = sample_uniform(200_000, d, rng)
    mu = unit(rng.standard_normal(d))
    for rho in rhos:
        f = np.exp(log_density(u, mu[None], [rho], family)[:, 0])
        se = f.std() / math.sqrt(f.size)
        assert se < 0.03  # the check below is informative
        assert abs(f.mean() - 1.0) < 5 * se


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("d, rho", [(3, 0.99), (10, 0.9), (384, 0.5), (1536, 0.9)])
def test_density_integrates_to_one_quadrature(family, d, rho):
    assert t_moment(rho, d, family, 0) == pytest.approx(1.0, abs=1e-7)


def test_log_density_matches_direct_formula():
    rng = np.random.default_rng(0)
    X, M = unit(rng.standard_normal((50, 5))), unit(rng.standard_normal((3, 5)))
    rho = np.array([0.0, 0.4, 0.95])
    q = np.linalg.norm(X[:, None, :] - rho[None, :, None] * M[None], axis=2) ** 2
    pkb = np.log(1 - rho**2) - 2.5 * np.log(q)
    sc = 4 * (np.log(1 - rho**2) - np.log(q))
    np.testing.assert_allclose(log_density(X, M, rho, "pkb"), pkb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(log_density(X, M, rho, "scauchy"), sc, rtol=1e-12, atol=1e-12)


def test_pkb_and_scauchy_coincide_in_d2():
    rng = np.random.default_rng(1)
    X, M = unit(rng.standard_normal((200, 2))), unit(rng.standard_normal((4, 2)))
    rho = np.array([0.0, 0.3, 0.9, 0.999])
    np.testing.assert_allclose(log_density(X, M, rho, "pkb"), log_density(X, M, rho, "scauchy"),
                               rtol=1e-13, atol=1e-13)


def test_log_density_is_finite_at_the_mode_near_rho_max():
    mu = np.eye(384)[:1]
    value = log_density(mu, mu, [RHO_MAX], "pkb")[0, 0]
    expected = math.log1p(-RHO_MAX**2) - 192 * math.log((1 - RHO_MAX) ** 2)
    assert value == pytest.approx(expected, rel=1e-9)


# --- the M-step for ρ -------------------------------------------------------------------------
def test_solve_concentration_matches_brentq_and_maximises_the_bound():
    rng = np.random.default_rng(2)
    r = np.r_[rng.uniform(0, 1, 300), 1.0, 0.999999, 0.0]
    c = np.r_[10 ** rng.uniform(-10, 1, 300), 1e-12, 1e-3, 0.5]
    rho = solve_concentration(r, c)
    for ri, ci, got in zip(r, c, rho, strict=True):
        want = optimize.brentq(lambda p, ri=ri, ci=ci: (1 - p * p) * (ri - p) - ci * p, 0, 1,
                               xtol=1e-15) if ri > 0 else 0.0
        assert got == pytest.approx(min(want, RHO_MAX), abs=1e-9)
        # it maximises c log(1 − ρ²) − (1 + ρ²) + 2ρr, the ρ-part of the MM bound / (βW)
        g = lambda p, ri=ri, ci=ci: ci * math.log1p(-p * p) - p * p + 2 * p * ri  # noqa: E731
        grid = np.linspace(0, min(RHO_MAX, 1 - 1e-7), 2001)
        assert g(got) >= max(g(p) for p in grid) - 1e-9


# --- EM ---------------------------------------------------------------------------------------
def overlapping_data(family: str, seed: int = 3):
    rng = np.random.default_rng(seed)
    M = unit(rng.standard_normal((4, 5)))
    X, y = sample_mixture(np.array([0.4, 0.3, 0.2, 0.1]), M, np.array([0.7, 0.6, 0.8, 0.5]),
                          family, 600, rng)
    return X, y


@pytest.mark.parametrize("family", FAMILIES)
def test_em_never_decreases_the_log_likelihood(family):
    X, _ = overlapping_data(family)
    m = SphericalMixture(family, 4, min_weight=0.0, init="random", n_init=1, tol=0,
                         max_iter=60, precision="float64", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(X)
    trace = m.loglik_trace_
    assert trace.size >= 20 and trace[-1] > trace[0] + 10  # it really moved
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    # mixed precision: float32 products move the trace by far less than the tolerance
    mixed = SphericalMixture(family, 4, min_weight=0.0, init="random", n_init=1, tol=0,
                             max_iter=60, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mixed.fit(X)
    # mixed precision (float32 inside the products): monotone up to float32 noise, far below
    # the stopping tolerance, and the returned parameters are evaluated in float64
    assert np.all(np.diff(mixed.loglik_trace_) >= -1e-6 * np.abs(mixed.loglik_trace_[1:]))
    assert mixed.loglik_ == pytest.approx(m.loglik_, rel=1e-7)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("d, k", [(3, 3), (3, 10), (50, 3), (50, 10), (384, 3), (384, 10)])
def test_recovery_of_a_known_mixture(family, d, k):
    """ARI ≥ 0.95, |ρ̂ − ρ| ≤ 0.04 and μ̂ᵀμ ≥ 0.95 with 200 points per component.

    Observed errors are ≤ 0.016 for ρ; the Bayes classifier with the true parameters reaches
    ARI ≥ 0.955 on these draws, so the fitted ARI is limited by the overlap, not the EM.
    """
    rng = np.random.default_rng(d * 100 + k)
    M = centres(k, d, rng)
    rho0 = {"pkb": {3: 0.97 if k == 3 else 0.99, 50: 0.7, 384: 0.35},
            "scauchy": {3: 0.9 if k == 3 else 0.97, 50: 0.5, 384: 0.2}}[family][d]
    rho = rho0 * (1 - np.linspace(0, 0.15, k) * (1 - rho0))
    X, y = sample_mixture(np.full(k, 1 / k), M, rho, family, 200 * k, rng)
    m = SphericalMixture(family, k, random_state=0).fit(X)
    match = (m.means_ @ M.T).argmax(axis=1)
    assert m.n_components_ == k and len(set(match)) == k
    assert adjusted_rand_score(y, m.labels_) >= 0.95
    assert np.max(np.abs(m.concentrations_ - rho[match])) <= 0.04
    assert np.min(np.sum(m.means_ * M[match], axis=1)) >= 0.95
    np.testing.assert_allclose(np.linalg.norm(m.means_, axis=1), 1.0, rtol=1e-12)
    assert m.weights_.sum() == pytest.approx(1.0, abs=1e-12)
    assert m.converged_


def test_fitted_estimator_is_consistent_with_itself():
    X, _ = overlapping_data("pkb", seed=4)
    m = SphericalMixture("pkb", 4, random_state=1)
    assert m.fit(X) is m
    comp = m.component_log_density(X)
    mix = m.score_samples(X)
    np.testing.assert_allclose(logsumexp(comp + np.log(m.weights_), axis=1), mix, rtol=1e-12)
    assert m.loglik_ == pytest.approx(mix.sum(), rel=1e-10)  # exact at the returned parameters
    assert m.score(X) == pytest.approx(mix.mean()) and m.lower_bound_ == pytest.approx(mix.mean())
    proba = m.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert np.array_equal(m.predict(X), proba.argmax(axis=1))
    assert np.array_equal(m.labels_, m.predict(X))
    assert np.array_equal(m.fit_predict(X), m.labels_)
    assert clone(m).get_params() == m.get_params()
    Xs, ys = m.sample(50, random_state=0)
    assert Xs.shape == (50, 5) and ys.shape == (50,)
    np.testing.assert_allclose(np.linalg.norm(Xs, axis=1), 1.0, rtol=1e-12)


def test_fixed_random_state_reproduces_the_fit():
    X, _ = overlapping_data("scauchy", seed=5)
    a = SphericalMixture("scauchy", 4, max_iter=300, random_state=7).fit(X)
    b = SphericalMixture("scauchy", 4, max_iter=300, random_state=7).fit(X)
    c = SphericalMixture("scauchy", 4, max_iter=300, random_state=np.random.default_rng(7)).fit(X)
    for other in (b, c):
        np.testing.assert_array_equal(a.means_, other.means_)
        np.testing.assert_array_equal(a.concentrations_, other.concentrations_)
        np.testing.assert_array_equal(a.loglik_trace_, other.loglik_trace_)


@pytest.mark.parametrize("init", ["auto", "denoised-kmeans++", "kmeans++", "random"])
def test_every_init_strategy_fits(init):
    rng = np.random.default_rng(6)
    M = centres(3, 50, rng)
    X, y = sample_mixture(np.full(3, 1 / 3), M, np.full(3, 0.7), "pkb", 300, rng)
    m = SphericalMixture("pkb", 3, init=init, random_state=0).fit(X)
    assert adjusted_rand_score(y, m.labels_) >= 0.95


def test_auto_search_routes_separated_and_diffuse_data():
    """Separated clusters: the seeded starts, converging in a few steps; diffuse data (no
    clusters at all): random partitions, annealed for the spherical Cauchy family."""
    rng = np.random.default_rng(12)
    M = centres(5, 100, rng)
    X, y = sample_mixture(np.full(5, 0.2), M, np.full(5, 0.6), "scauchy", 500, rng)
    sep = SphericalMixture("scauchy", 5, random_state=0).fit(X)
    assert sep.n_iter_ < 10 and adjusted_rand_score(y, sep.labels_) == 1.0
    U = sample_uniform(300, 100, rng)
    diffuse = SphericalMixture("scauchy", 5, max_iter=300, random_state=0).fit(U)
    assert diffuse.n_iter_ >= ANNEAL_STEPS["scauchy"]
    trace = diffuse.loglik_trace_[ANNEAL_STEPS["scauchy"]:]  # monotone once γ = 1
    assert np.all(np.diff(trace) >= -1e-6 * np.abs(trace[1:]))
    plain = SphericalMixture("pkb", 5, max_iter=300, random_state=0).fit(U)  # no annealing:
    trace = plain.loglik_trace_  # monotone from the first step
    assert np.all(np.diff(trace) >= -1e-6 * np.abs(trace[1:])) and trace[-1] > trace[0]


def test_small_components_are_dropped_and_the_rest_renormalised():
    rng = np.random.default_rng(8)
    M = centres(3, 20, rng)
    X, y = sample_mixture(np.array([0.5, 0.495, 0.005]), M, np.full(3, 0.8), "pkb", 4000, rng)
    assert 10 <= np.sum(y == 2) <= 30
    empty = -unit(M.sum(axis=0))  # a direction away from every cluster
    init = np.vstack([M, empty])
    m = SphericalMixture("pkb", 4, min_weight=0.01, init=init, random_state=0).fit(X)
    assert m.n_components_ == 2 and m.n_dropped_ == 2
    assert m.weights_.sum() == pytest.approx(1.0) and np.all(m.weights_ >= 0.01)
    assert m.predict_proba(X).shape == (4000, 2) and np.all(np.isfinite(m.loglik_trace_))
    assert m.loglik_ == pytest.approx(m.score_samples(X).sum(), rel=1e-12)
    # min_weight above 1/n: the tiny cluster (weight 0.005) stays, the empty direction (which
    # can only ever hold a single point, 1/n = 2.5e-4) goes
    kept = SphericalMixture("pkb", 4, min_weight=1e-3, init=init, random_state=0).fit(X)
    assert kept.n_components_ == 3 and not kept.collapsed_.any()
    assert np.min(np.sum(kept.means_ * M, axis=1)) > 0.95


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("precision", ["mixed", "float64"])
def test_collapsed_component_is_dropped_or_clamped_never_nan(family, precision):
    """Five copies of one point: the likelihood is unbounded as ρ → 1 (the anchor's NaN case)."""
    rng = np.random.default_rng(9)
    M = centres(2, 30, rng)
    X, _ = sample_mixture(np.array([0.5, 0.5]), M, np.full(2, 0.6), "pkb", 300, rng)
    dup = unit(rng.standard_normal(30))
    X = np.vstack([X, np.repeat(dup[None], 5, axis=0)])
    kw = dict(min_weight=1e-10, init=np.vstack([M, dup]), precision=precision, random_state=0)
    with pytest.warns(MixtureWarning, match="collapsed onto duplicated points"):
        kept = SphericalMixture(family, 3, collapse="keep", **kw).fit(X)
    assert kept.n_collapsed_ == 1 and kept.collapsed_.sum() == 1
    assert kept.concentrations_.max() == RHO_MAX and kept.n_components_ == 3
    assert np.all(np.isfinite(kept.means_)) and np.all(np.isfinite(kept.score_samples(X)))
    trace = kept.loglik_trace_
    assert np.all(np.isfinite(trace)) and np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    with pytest.warns(MixtureWarning, match="were dropped"):
        dropped = SphericalMixture(family, 3, **kw).fit(X)
    assert dropped.n_collapsed_ == 1 and dropped.n_dropped_ == 1 and dropped.n_components_ == 2
    assert not dropped.collapsed_.any() and dropped.concentrations_.max() < 0.9
    assert dropped.loglik_ == pytest.approx(dropped.score_samples(X).sum(), rel=1e-12)


def test_convergence_warning_when_max_iter_is_too_small():
    X, _ = overlapping_data("pkb", seed=10)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        m = SphericalMixture("pkb", 4, max_iter=2, tol=1e-12, random_state=0).fit(X)
    assert not m.converged_ and m.n_iter_ == 2


# --- input checks -----------------------------------------------------------------------------
GOOD = sample_mixture(np.full(3, 1 / 3), np.eye(4)[:3], np.full(3, 0.8), "pkb", 60,
                      np.random.default_rng(11))[0]


@pytest.mark.parametrize("X, needle", [
    (np.where(np.arange(240).reshape(60, 4) == 5, np.nan, GOOD), "NaN or inf"),
    (np.where(np.arange(240).reshape(60, 4) == 7, -np.inf, GOOD), "NaN or inf"),
    (np.vstack([GOOD, np.zeros((1, 4))]), "zero vectors"),
    (GOOD[0], "2-D array"),
    (GOOD[None], "2-D array"),
    (np.empty((0, 4)), "empty"),
    (GOOD[:, :1], "dimension d >= 2"),
    (GOOD.astype(complex), "real numbers"),
    (np.array([["a", "b"], ["c", "d"]]), "real numbers"),
    (GOOD[:2], "cannot be split into 3"),
    (np.repeat(GOOD[:2], 10, axis=0), "only 2 distinct points"),
])
def test_bad_embeddings_are_refused_with_a_message(X, needle):
    with pytest.raises(FitError, match=needle):
        SphericalMixture("pkb", 3).fit(X)


@pytest.mark.parametrize("kwargs, needle", [
    ({"family": "vmf"}, "family"),
    ({"n_components": 0}, "n_components"),
    ({"n_components": 2.5}, "n_components"),
    ({"min_weight": 0.5}, "min_weight"),
    ({"min_weight": -1e-3}, "min_weight"),
    ({"tol": -1.0}, "tol"),
    ({"n_init": 0}, "n_init"),
    ({"max_iter": -1}, "max_iter"),
    ({"init": "farthest"}, "init"),
    ({"init": np.ones((2, 4))}, "init"),
    ({"precision": "float16"}, "precision"),
    ({"collapse": "merge"}, "collapse"),
])
def test_bad_hyperparameters_are_refused_with_a_message(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        SphericalMixture(**{"n_components": 3, **kwargs}).fit(GOOD)


def test_non_unit_rows_are_normalised_with_a_warning_and_float32_is_accepted():
    scaled = GOOD * np.linspace(0.5, 3.0, 60)[:, None]
    ref = SphericalMixture("pkb", 3, random_state=0, precision="float64").fit(GOOD)
    with pytest.warns(MixtureWarning, match="normalised"):
        got = SphericalMixture("pkb", 3, random_state=0, precision="float64").fit(scaled)
    np.testing.assert_allclose(got.means_, ref.means_, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixtureWarning)  # float32 rounding is below UNIT_TOL
        f32 = SphericalMixture("pkb", 3, random_state=0).fit(GOOD.astype(np.float32))
    assert f32.means_.dtype == np.float64
    assert f32.loglik_ == pytest.approx(ref.loglik_, rel=1e-5)


def test_duplicates_are_allowed_and_counted():
    X = np.vstack([GOOD, GOOD[:5]])
    m = SphericalMixture("pkb", 3, random_state=0).fit(X)
    assert m.n_distinct_ == 60


def test_using_an_unfitted_or_mismatched_mixture_is_refused():
    m = SphericalMixture("pkb", 3)
    with pytest.raises(NotFittedMixtureError, match="fit"):
        m.predict(GOOD)
    assert issubclass(NotFittedMixtureError, FitError)
    assert issubclass(NotFittedMixtureError, NotFittedError)
    m.fit(GOOD)
    with pytest.raises(FitError, match="dimension 5"):
        m.score_samples(unit(np.ones((3, 5))))
    with pytest.raises(FitError, match="concentrations"):
        log_density(GOOD, GOOD[:2], [0.5, 1.0], "pkb")


# --- samplers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("d, rho", [(2, 0.9), (3, 0.5), (3, 0.95), (10, 0.8), (384, 0.6)])
def test_pkb_sample_mean_is_rho_mu(d, rho):
    """The Poisson kernel reproduces harmonic functions, so E[x] = ρμ exactly."""
    rng = np.random.default_rng(d)
    mu = unit(rng.standard_normal(d))
    X = sample_pkb(mu, rho, 20_000, rng)
    t = X @ mu
    assert abs(t.mean() - rho) < 5 * t.std() / math.sqrt(t.size)
    assert t_moment(rho, d, "pkb", 1) == pytest.approx(rho, abs=1e-7)  # quadrature agrees
    tangent = X - np.outer(t, mu)  # no preferred direction orthogonal to μ
    assert np.linalg.norm(tangent.mean(axis=0)) < 5 * math.sqrt((1 - t @ t / t.size) / t.size)


@pytest.mark.parametrize("d, rho", [(3, 0.5), (3, 0.9), (10, 0.6), (50, 0.3)])
def test_scauchy_sample_mean_matches_quadrature(d, rho):
    rng = np.random.default_rng(100 + d)
    mu = unit(rng.standard_normal(d))
    t = sample_scauchy(mu, rho, 20_000, rng) @ mu
    assert abs(t.mean() - t_moment(rho, d, "scauchy", 1)) < 5 * t.std() / math.sqrt(t.size)


@pytest.mark.parametrize("family, d, rho", [("pkb", 3, 0.9), ("pkb", 50, 0.7),
                                            ("scauchy", 3, 0.8)])
def test_sampled_t_follows_the_density(family, d, rho):
    """Kolmogorov–Smirnov against the CDF of t = μᵀx obtained by quadrature of SPEC §4."""
    rng = np.random.default_rng(7)
    mu = np.eye(d)[0]
    draw = sample_pkb if family == "pkb" else sample_scauchy
    t = np.sort(draw(mu, rho, 4000, rng)[:, 0])
    log_c = -(d - 2) * math.log(2.0) - betaln((d - 1) / 2.0, (d - 1) / 2.0)
    grid = np.linspace(-1, 1, 4001)
    dens = np.array([math.exp(log_c + (d - 3) / 2 * math.log1p(-g * g) + log_f_t(g, rho, d, family))
                     if abs(g) < 1 else 0.0 for g in grid])
    cdf = integrate.cumulative_trapezoid(dens, grid, initial=0.0)
    cdf /= cdf[-1]
    assert stats.kstest(t, lambda s: np.interp(s, grid, cdf)).pvalue > 1e-3


@pytest.mark.parametrize("d", [2, 3, 50, 384, 1536])
def test_pkb_envelope_is_efficient(d):
    for rho in (0.1, 0.5, 0.9, 0.99):
        assert math.exp(pkb_envelope(rho, d)[2]) < 6.0  # expected proposals per draw


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("transposed", [True, False])
def test_numpy_products_fit_the_same_mixture_as_torch(family, transposed, monkeypatch):
    """Without torch the float32 products run through numpy (zero-padded component rows), with
    or without the transposed copy of X: the fit must match the torch one to float32 noise."""
    from neswap_core.models import mixture_em

    X, _ = overlapping_data(family)
    if not transposed:
        monkeypatch.setattr(mixture_em, "TRANSPOSED_BYTES", 0)
    kw = dict(min_weight=0.0, init="random", n_init=1, tol=0, max_iter=30, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with_torch = SphericalMixture(family, 4, **kw).fit(X)
        assert (mixture_em.EMData(X, "mixed").XTp is not None) == transposed
        monkeypatch.setattr(mixture_em, "_torch", lambda: None)
        plain = SphericalMixture(family, 4, **kw).fit(X)
    assert plain.loglik_ == pytest.approx(with_torch.loglik_, rel=1e-7)
    assert np.allclose(plain.means_, with_torch.means_, atol=1e-4)


def test_float32_copy_flushes_entries_below_its_resolution():
    """Entries ≈ 1e-33 (MiniLM has two such dimensions) would make the float32 products run on
    subnormal numbers: the float32 copy sets them to 0, the float64 data keeps them."""
    from neswap_core.models.mixture_em import FLUSH_BELOW, EMData

    rng = np.random.default_rng(3)
    X = unit(rng.standard_normal((50, 8)))
    X[:, 2] = 1e-33
    data = EMData(X, "mixed")
    assert np.all(data.Xp[:, 2] == 0) and np.all(data.X[:, 2] == 1e-33)
    assert np.all(np.abs(data.Xp - X) <= np.maximum(FLUSH_BELOW, 1e-7 * np.abs(X)))
    assert EMData(X, "float64").Xp is X
