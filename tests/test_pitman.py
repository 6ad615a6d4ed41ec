"""The Ewens–Pitman estimator and the population uniques (SPEC §5), checked against math."""

from __future__ import annotations

import json
import math
import warnings
from collections import Counter
from pathlib import Path

import mpmath
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln

from neswap_core.errors import FitError
from neswap_core.models.pitman import (
    PitmanEstimator,
    PitmanWarning,
    _digamma_diff,
    _rising_log_sum,
    _rising_log_value,
    _sum_inverse,
    as_frequency_counts,
    asymptotic_population_uniques,
    expected_population_uniques,
    log_gamma_ratio,
    pitman_gradient,
    pitman_hessian,
    pitman_log_pmf,
    pitman_loglik,
)

# ARX's 'adult' sample over 9 quasi-identifiers (arx-deidentifier/arx, TestRiskMetrics): its
# frequency of frequencies and the Pitman population-unique shares U/N ARX asserts.
ARX_ADULT_FOF = {
    1: 15512,
    2: 2098,
    3: 754,
    4: 375,
    5: 189,
    6: 155,
    7: 97,
    8: 73,
    9: 39,
    10: 37,
    11: 29,
    12: 18,
    13: 23,
    14: 14,
    15: 15,
    16: 9,
    17: 11,
    18: 10,
    19: 10,
    20: 5,
    21: 3,
    22: 4,
    23: 3,
    24: 2,
    25: 1,
    26: 3,
    27: 5,
    29: 1,
    30: 2,
    32: 1,
    34: 1,
    35: 1,
    36: 1,
    45: 1,
}
ARX_ADULT_N = 30162
ARX_ADULT_SHARES = {0.1: 0.27684993883653597, 0.01: 0.1446083531167384}  # sampling fraction: U/N
ANCHOR = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "pitman_arx_adult.json"
mpmath.mp.dps = 50


def crp_partition(theta: float, alpha: float, n: int, rng: np.random.Generator) -> dict[int, int]:
    """Frequency of frequencies of a Pitman–Yor Chinese restaurant process with n customers.

    Customer m + 1 opens a table w.p. (θ + Kα)/(θ + m); otherwise joins table t w.p. ∝ c_t − α,
    drawn by proposing the table of a uniform earlier customer (∝ c_t), accepted w.p. 1 − α/c_t.
    """
    sizes: list[int] = []
    table_of = np.empty(n, dtype=np.int64)
    buf, pos = rng.random(4 * n + 64), 0
    for m in range(n):
        if pos > len(buf) - 4:
            buf, pos = rng.random(4 * n + 64), 0
        pos += 1
        if m == 0 or buf[pos - 1] * (theta + m) < theta + len(sizes) * alpha:
            table_of[m] = len(sizes)
            sizes.append(1)
            continue
        while True:
            if pos > len(buf) - 4:
                buf, pos = rng.random(4 * n + 64), 0
            t = table_of[int(buf[pos] * m)]
            pos += 2
            if buf[pos - 1] * sizes[t] >= alpha:
                break
        table_of[m] = t
        sizes[t] += 1
    return dict(Counter(sizes))


def integer_partitions(n: int, largest: int | None = None):
    largest = n if largest is None else largest
    if n == 0:
        yield []
        return
    for part in range(min(n, largest), 0, -1):
        for rest in integer_partitions(n - part, part):
            yield [part, *rest]


def direct_kernel(theta: float, alpha: float, fof: dict[int, int]) -> float:
    """L(θ, α) by its definition, summed term by term (math.fsum)."""
    n = sum(j * s for j, s in fof.items())
    k = sum(fof.values())
    terms = [math.log(theta + i * alpha) for i in range(1, k)]
    terms += [-math.log(theta + i) for i in range(1, n)]
    terms += [s * math.log(i - alpha) for j, s in fof.items() for i in range(1, j)]
    return math.fsum(terms)


# --- special functions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "m"),
    [
        (a, m)
        for a in (0.3, 1.0, 9.99, 10.0, 12.5, 1e3, 1e10, 1e20, 1e30)
        for m in (-0.95, -0.28, 0.5, 1.0, 37.0, 1e4)
        if a + m > 0
    ],
)
def test_log_gamma_ratio_matches_mpmath(a, m):
    exact = float(mpmath.loggamma(mpmath.mpf(a) + mpmath.mpf(m)) - mpmath.loggamma(mpmath.mpf(a)))
    assert log_gamma_ratio(a, m) == pytest.approx(exact, rel=1e-13, abs=1e-14)
    assert log_gamma_ratio(np.array([a]), m)[0] == pytest.approx(exact, rel=1e-13, abs=1e-14)


def test_naive_lgamma_difference_fails_at_1e30_and_ours_does_not():
    a, m = 1e30 + 12.3, 0.72 - 1.0
    naive = gammaln(a + m) - gammaln(a)
    exact = float(
        mpmath.loggamma(mpmath.mpf(10) ** 30 + mpmath.mpf("12.02"))
        - mpmath.loggamma(mpmath.mpf(10) ** 30 + mpmath.mpf("12.3"))
    )
    assert abs(naive - exact) > 1.0  # the trap SPEC §5 warns about
    assert log_gamma_ratio(a, m) == pytest.approx(exact, rel=1e-14)


@pytest.mark.parametrize(
    ("theta", "alpha", "m"),
    [
        (5.0, 0.5, 100),
        (-0.4, 0.5, 200),
        (1e-3, 0.9, 50),
        (100.0, 1e-3, 50),
        (10.0, 0.1, 5000),
        (3000.0, 0.7, 2000),
        (7.0, 0.0, 100),
        (0.02 * 399.9, 0.02, 100),
        (0.02 * 400.1, 0.02, 100),
        (25.0, 1.0, 1500),
        (1e5, 1.0, 40),
        (0.5, 0.999, 3),
        (5e6, 0.3, 3000),
        (2e7, 1.0, 50),
    ],
)
def test_rising_log_sum_and_derivatives_equal_term_by_term_sums(theta, alpha, m):
    i = np.arange(1, m, dtype=float)
    d = theta + i * alpha
    expected = [
        math.fsum(np.log(d)),
        math.fsum(1 / d),
        math.fsum(i / d),
        -math.fsum(1 / d**2),
        -math.fsum(i / d**2),
        -math.fsum(i * i / d**2),
    ]
    np.testing.assert_allclose(_rising_log_sum(theta, alpha, m), expected, rtol=1e-10)
    assert _rising_log_value(theta, alpha, m) == pytest.approx(expected[0], rel=1e-12)
    assert _sum_inverse(theta, alpha, m) == pytest.approx(expected[1], rel=1e-12)


@pytest.mark.parametrize(
    ("a", "m"),
    [(0.01, 5.0), (9.5, 1.0), (10.0, 3.0), (1e3, 2e4), (1e8, 7.0), (1e15, 1e3), (50.0, -0.5)],
)
def test_digamma_difference_matches_mpmath(a, m):
    exact = float(mpmath.digamma(mpmath.mpf(a) + mpmath.mpf(m)) - mpmath.digamma(mpmath.mpf(a)))
    assert _digamma_diff(a, m) == pytest.approx(exact, rel=1e-13)


# --- likelihood, gradient, Hessian, pmf ------------------------------------------------------

TABLES = [
    {1: 3, 2: 1},
    {1: 20, 2: 7, 3: 2, 9: 1},
    {1: 400, 2: 60, 3: 21, 4: 9, 6: 3, 11: 2, 40: 1},
    {1: 5, 30: 2},
]
POINTS = [(2.0, 0.5), (-0.3, 0.6), (40.0, 0.85), (3.0, 1e-4), (0.7, 0.97), (150.0, 0.2)]


@pytest.mark.parametrize("fof", TABLES)
@pytest.mark.parametrize(("theta", "alpha"), POINTS)
def test_loglik_equals_its_definition(fof, theta, alpha):
    assert pitman_loglik(theta, alpha, fof) == pytest.approx(
        direct_kernel(theta, alpha, fof), rel=1e-12
    )


@pytest.mark.parametrize("fof", TABLES)
@pytest.mark.parametrize(("theta", "alpha"), POINTS)
def test_gradient_and_hessian_match_central_differences(fof, theta, alpha):
    h = np.array([1e-5 * max(1.0, abs(theta)), min(1e-6, alpha / 2, (1 - alpha) / 2)])
    h[0] = min(h[0], 1e-3 * (theta + alpha))
    fd_grad, fd_hess = np.empty(2), np.empty((2, 2))
    for c in range(2):
        e = np.zeros(2)
        e[c] = h[c]
        plus, minus = (theta, alpha) + e, (theta, alpha) - e
        fd_grad[c] = (pitman_loglik(*plus, fof) - pitman_loglik(*minus, fof)) / (2 * h[c])
        fd_hess[:, c] = (pitman_gradient(*plus, fof) - pitman_gradient(*minus, fof)) / (2 * h[c])
    grad, hess = pitman_gradient(theta, alpha, fof), pitman_hessian(theta, alpha, fof)
    scale = np.abs(grad) + np.sqrt(np.abs(np.diag(hess))) * np.abs([theta, alpha]).clip(1e-3)
    np.testing.assert_allclose(grad, fd_grad, rtol=1e-6, atol=1e-6 * scale.max())
    np.testing.assert_allclose(hess, fd_hess, rtol=1e-5, atol=1e-6 * np.abs(hess).max())
    np.testing.assert_array_equal(hess, hess.T)


@pytest.mark.parametrize("fof", TABLES)
def test_ewens_boundary_alpha_zero_is_the_continuous_limit(fof):
    for f in (pitman_loglik, pitman_gradient, pitman_hessian):
        np.testing.assert_allclose(f(4.0, 0.0, fof), f(4.0, 1e-11, fof), rtol=1e-8)


@pytest.mark.parametrize(
    ("theta", "alpha"),
    [
        (1.0, 0.0),
        (0.3, 0.0),
        (2.5, 0.5),
        (-0.3, 0.5),
        (-0.05, 0.1),
        (10.0, 0.9),
        (-0.99, 0.995),
    ],
)
def test_pmf_sums_to_one_over_all_partitions(theta, alpha):
    for n in range(1, 9):
        logs = [pitman_log_pmf(theta, alpha, dict(Counter(p))) for p in integer_partitions(n)]
        assert math.fsum(np.exp(logs)) == pytest.approx(1.0, abs=1e-13), n


def test_pmf_closed_forms_for_three_records():
    theta, alpha = 1.7, 0.35
    p21 = 3 * (theta + alpha) * (1 - alpha) / ((theta + 1) * (theta + 2))
    p3 = (1 - alpha) * (2 - alpha) / ((theta + 1) * (theta + 2))
    assert math.exp(pitman_log_pmf(theta, alpha, {1: 1, 2: 1})) == pytest.approx(p21, rel=1e-14)
    assert math.exp(pitman_log_pmf(theta, alpha, {3: 1})) == pytest.approx(p3, rel=1e-14)


# --- maximum likelihood ----------------------------------------------------------------------


def scipy_optimum(fof) -> tuple[float, float, float]:
    """Brute force: the best of a 40 × 40 grid in (ln(θ + α), α), polished by Nelder–Mead."""
    fc = as_frequency_counts(fof)

    def negative(p):
        alpha = 1 / (1 + math.exp(-p[1]))
        return -pitman_loglik(math.exp(p[0]) - alpha, alpha, fc)

    grid = [
        (u, math.log(a / (1 - a)))
        for u in np.linspace(-6, 10, 40)
        for a in np.linspace(0.005, 0.995, 40)
    ]
    start = min(grid, key=negative)
    best = minimize(
        negative,
        start,
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 4000},
    )
    alpha = 1 / (1 + math.exp(-best.x[1]))
    return math.exp(best.x[0]) - alpha, alpha, -best.fun


@pytest.mark.parametrize(
    "fof",
    [
        {1: 20, 2: 7, 3: 2, 9: 1},
        {1: 400, 2: 60, 3: 21, 4: 9, 6: 3, 11: 2, 40: 1},
        {1: 5, 30: 2},
        {1: 900, 2: 120, 3: 35, 5: 10, 8: 4, 20: 1},  # s1/n ≈ 0.7, a realistic chunk table
        {1: 3, 8: 1},
    ],
)
def test_mle_equals_scipy_brute_force_optimum(fof):
    est = PitmanEstimator().fit(fof)
    theta, alpha, loglik = scipy_optimum(fof)
    assert est.status_ == "ok" and est.converged_
    assert est.loglik_ >= loglik - 1e-9
    assert est.theta_ == pytest.approx(theta, rel=1e-4, abs=1e-4)
    assert est.alpha_ == pytest.approx(alpha, abs=1e-5)
    np.testing.assert_allclose(pitman_gradient(est.theta_, est.alpha_, fof), 0.0, atol=1e-7)


def test_ewens_branch_has_the_closed_form_mle_for_three_records():
    # {1: 1, 2: 1}: at α = 0, (k−1)/θ = 1/(θ+1) + 1/(θ+2) gives θ̂ = √2, and ∂L/∂α < 0 there.
    est = PitmanEstimator().fit({1: 1, 2: 1})
    assert est.status_ == "ewens" and est.converged_ and est.alpha_ == 0.0
    assert est.theta_ == pytest.approx(math.sqrt(2), rel=1e-13)
    info = 1 / 2 - 1 / (math.sqrt(2) + 1) ** 2 - 1 / (math.sqrt(2) + 2) ** 2
    assert est.theta_se_ == pytest.approx(1 / math.sqrt(info), rel=1e-10)
    assert math.isnan(est.alpha_se_)
    _, _, brute = scipy_optimum({1: 1, 2: 1})
    assert est.loglik_ >= brute - 1e-12


@pytest.mark.parametrize(
    ("theta", "alpha", "seed"), [(10.0, 0.5, 1), (60.0, 0.85, 2), (-0.25, 0.6, 3)]
)
def test_recovers_parameters_of_simulated_pitman_yor_partitions(theta, alpha, seed):
    """Within 4 standard errors at n = 2000 and 20,000; the α error bar shrinks with n."""
    rng = np.random.default_rng(seed)
    ses = []
    for n in (2000, 20000):
        est = PitmanEstimator().fit(crp_partition(theta, alpha, n, rng))
        assert est.status_ == "ok" and est.converged_
        assert abs(est.theta_ - theta) <= 4 * est.theta_se_, (n, est.theta_, est.theta_se_)
        assert abs(est.alpha_ - alpha) <= 4 * est.alpha_se_, (n, est.alpha_, est.alpha_se_)
        ses.append(est.alpha_se_)
    assert ses[1] < ses[0]


def test_standard_errors_are_calibrated():
    """Across 40 replicates at n = 500, |α̂ − α| ≤ 2 SE in at least 80% (nominal 95%)."""
    rng = np.random.default_rng(7)
    z = []
    for _ in range(40):
        est = PitmanEstimator().fit(crp_partition(20.0, 0.7, 500, rng))
        z.append((est.alpha_ - 0.7) / est.alpha_se_)
    assert np.mean(np.abs(z) <= 2) >= 0.8
    assert 0.6 < np.std(z) < 1.5


def test_realistic_chunk_tables_all_converge():
    """25 tables with n_J 300–1800 and s1/n_J 0.5–0.9: every fit converges to a maximum."""
    rng = np.random.default_rng(11)
    fitted = 0
    while fitted < 25:
        n = int(rng.integers(300, 1800))
        fof = crp_partition(float(rng.uniform(60, 600)), float(rng.uniform(0.75, 0.93)), n, rng)
        if not 0.5 <= fof.get(1, 0) / n <= 0.9:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            est = PitmanEstimator().fit(fof)
        assert est.converged_ and est.status_ in ("ok", "ewens")
        grad = pitman_gradient(est.theta_, est.alpha_, fof)
        assert abs(grad[0]) * est.theta_se_ < 1e-6
        if est.status_ == "ok":
            assert abs(grad[1]) * est.alpha_se_ < 1e-6
            assert np.all(np.linalg.eigvalsh(-pitman_hessian(est.theta_, est.alpha_, fof)) > 0)
        else:  # few doubles, e.g. {1: 434, 2: 28, 4: 1}: a flat profile, maximal at α = 0
            assert grad[1] <= 0 and est.alpha_ == 0.0
        fitted += 1


def test_array_and_mapping_inputs_agree():
    fof = {1: 20, 2: 7, 3: 2, 9: 1}
    arr = np.zeros(10, dtype=int)
    for j, s in fof.items():
        arr[j] = s
    a, b = PitmanEstimator().fit(fof), PitmanEstimator().fit(arr)
    assert (a.theta_, a.alpha_, a.n_, a.k_, a.s1_) == (b.theta_, b.alpha_, 49, 30, 20)


# --- degenerate tables -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fof", "status"),
    [
        ({}, "empty"),
        ({1: 1}, "too_few"),
        ({5: 1}, "single_cell"),
        ({1: 7}, "all_unique"),
        ({2: 3, 3: 1}, "no_uniques"),
        ({1: 1, 2: 1}, "ewens"),
    ],
)
def test_every_degenerate_case_has_a_named_status(fof, status):
    est = PitmanEstimator().fit(fof)
    assert est.status_ == status
    assert est.messages_ or status == "ewens"


def test_all_unique_and_single_cell_report_their_limits():
    all_unique = PitmanEstimator().fit({1: 7})
    assert all_unique.theta_ == math.inf and not all_unique.converged_
    assert all_unique.loglik_ == 0.0
    # the supremum: L(θ, α) → 0 as θ → ∞ for every α
    assert pitman_loglik(1e9, 0.5, {1: 7}) == pytest.approx(0.0, abs=1e-7)
    single = PitmanEstimator().fit({5: 1})
    assert single.loglik_ == 0.0  # the supremum, reached along θ → −α for every α
    for alpha in (0.0, 0.3, 0.9):
        assert pitman_loglik(1e-12 - alpha, alpha, {5: 1}) == pytest.approx(0.0, abs=1e-9)


def test_not_converged_is_flagged_and_warned():
    with pytest.warns(PitmanWarning, match="did not converge"):
        est = PitmanEstimator(max_iter=1).fit({1: 400, 2: 60, 3: 21, 4: 9, 6: 3, 11: 2, 40: 1})
    assert est.status_ == "not_converged" and not est.converged_


@pytest.mark.parametrize(
    "bad",
    [
        {1: -1},
        {1: 2.5},
        {0: 3},
        {"a": 1},
        np.array([[0, 1]]),
        np.array([1, 2]),
        {1: float("nan")},
    ],
)
def test_bad_frequency_tables_raise_fit_error(bad):
    with pytest.raises(FitError):
        PitmanEstimator().fit(bad)


def test_bad_parameters_and_domain():
    with pytest.raises(FitError, match="tol"):
        PitmanEstimator(tol=0).fit({1: 3, 2: 1})
    assert pitman_loglik(-0.6, 0.5, {1: 3, 2: 1}) == -math.inf
    assert pitman_loglik(0.0, 0.0, {1: 3, 2: 1}) == -math.inf
    with pytest.raises(FitError, match="domain"):
        pitman_gradient(1.0, 1.0, {1: 3, 2: 1})


# --- population uniques ----------------------------------------------------------------------


def mp_expected_uniques(theta, alpha, big_n):
    t, a, n = mpmath.mpf(theta), mpmath.mpf(alpha), mpmath.mpf(big_n)
    return float(
        n
        * mpmath.exp(
            mpmath.loggamma(t + 1)
            - mpmath.loggamma(t + a)
            + mpmath.loggamma(n + t + a - 1)
            - mpmath.loggamma(n + t)
        )
    )


@pytest.mark.parametrize(
    ("theta", "alpha"), [(15.774, 0.889), (3176.2, 0.718), (-0.3, 0.5), (8.0, 0.0)]
)
@pytest.mark.parametrize("big_n", [1.0, 2.0, 731.0, 1e4, 1e10, 1e20, 1e30])
def test_expected_population_uniques_matches_mpmath(theta, alpha, big_n):
    exact = mp_expected_uniques(theta, alpha, big_n)
    assert expected_population_uniques(theta, alpha, big_n) == pytest.approx(exact, rel=1e-12)


def test_population_uniques_invariants():
    """E S1(1) = 1; E S1(N) ≤ N; E S1(N)/N falls with N (so the population-unique share never
    exceeds the sample's, N ≥ n); the asymptotic form converges to the exact one."""
    big_n = np.array([1, 2, 10, 1e3, 1e6, 1e10, 1e20, 1e30])
    for theta, alpha in [(15.8, 0.889), (-0.4, 0.45), (3.0, 0.0), (500.0, 0.99)]:
        s1 = expected_population_uniques(theta, alpha, big_n)
        assert s1[0] == pytest.approx(1.0, rel=1e-14)
        assert np.all(s1 <= big_n * (1 + 1e-15))
        assert np.all(np.diff(s1 / big_n) < 0)
        asym = asymptotic_population_uniques(theta, alpha, big_n)
        assert asym[-1] == pytest.approx(s1[-1], rel=1e-12)


def test_arx_adult_reference_values():
    """ARX's TestRiskMetrics: U/N = Γ(θ+1)/Γ(θ+α)·N^α/N with N = n / sampling fraction."""
    est = PitmanEstimator().fit(ARX_ADULT_FOF)
    assert est.status_ == "ok" and est.n_ == ARX_ADULT_N
    assert est.theta_ == pytest.approx(3176.23, abs=0.01) and est.alpha_ == pytest.approx(
        0.71795, abs=1e-5
    )
    for fraction, reference in ARX_ADULT_SHARES.items():
        big_n = ARX_ADULT_N / fraction
        share = asymptotic_population_uniques(est.theta_, est.alpha_, big_n) / big_n
        assert share == pytest.approx(reference, rel=1e-9)
        exact = expected_population_uniques(est.theta_, est.alpha_, big_n) / big_n
        assert exact < share and exact == pytest.approx(share, rel=5e-3)  # finite-N form, beside it
        assert share <= est.s1_ / est.n_  # ARX's invariant: population share ≤ sample share


def test_embedded_arx_values_match_the_shared_anchor_file():
    if not ANCHOR.exists():  # the anchors live beside the repository in the project workspace
        pytest.skip(f"{ANCHOR} is not present in this checkout")
    anchor = json.loads(ANCHOR.read_text())
    assert {int(j): s for j, s in anchor["fof"].items()} == ARX_ADULT_FOF
    assert anchor["n"] == ARX_ADULT_N
    assert {
        e["sampling_fraction"]: e["population_unique_fraction"] for e in anchor["expected"]
    } == ARX_ADULT_SHARES
