"""Disclosure risk of a release from the Pitman fit of z_J (SPEC §5)."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from neswap_core.config import CATEGORIES
from neswap_core.errors import ConfigError, FitError
from neswap_core.measure.risk import (
    RiskProfile,
    disclosure_risk,
    disclosure_risk_path,
    fit_risk,
    frequency_of_frequencies,
    p_hat_by_population,
    pitman_table,
    sample_unique_mask,
)
from neswap_core.models.pitman import PitmanEstimator, PitmanWarning, expected_population_uniques
from neswap_core.text.contingency import cell_keys

J = ("Organization", "Person")


def make_z(**columns: list[str]) -> pd.DataFrame:
    """A contingency table z: the given category columns, every other category empty."""
    n = len(next(iter(columns.values())))
    data = {c: columns.get(c, [""] * n) for c in CATEGORIES}
    return pd.DataFrame(
        data, index=pd.Index([f"doc{i // 7}-{i}" for i in range(n)], name="chunk_id")
    )


def zipf_z(n: int = 700, seed: int = 0) -> pd.DataFrame:
    """A realistic z: heavy-tailed entity strings, some chunks empty in both categories of J."""
    rng = np.random.default_rng(seed)
    org = [f"Org {v}" if rng.random() > 0.25 else "" for v in rng.zipf(1.5, n) % 500]
    per = [f"Person {v}" if rng.random() > 0.5 else "" for v in rng.zipf(1.7, n) % 300]
    return make_z(Organization=org, Person=per, Date=["2021"] * n)


def z_from_fof(fof: dict[int, int]) -> pd.DataFrame:
    """A z whose z_J for J = (Organization,) has exactly this frequency of frequencies."""
    values = [f"cell {j}-{c}" for j, s in fof.items() for c in range(s) for _ in range(j)]
    return make_z(Organization=values + [""] * 3)  # three chunks empty in J: left out


# --- frequency of frequencies and sample uniques ---------------------------------------------


def test_frequency_of_frequencies_and_sample_uniques_of_hand_made_keys():
    keys = [("a", ""), ("a", ""), ("b", "x"), ("c", ""), ("c", ""), ("c", ""), ("d", "y")]
    assert frequency_of_frequencies(keys) == {1: 2, 2: 1, 3: 1}
    np.testing.assert_array_equal(sample_unique_mask(keys), [0, 0, 1, 0, 0, 0, 1])
    assert frequency_of_frequencies([]) == {}
    with pytest.raises(FitError, match="hashable"):
        frequency_of_frequencies([["a"], ["a"]])
    with pytest.raises(FitError, match="hashable"):
        sample_unique_mask([["a"]])


def test_profile_counts_only_chunks_with_an_entity_in_j():
    z = zipf_z()
    keys = cell_keys(z, J)
    profile = fit_risk(z, J, 1e10)
    nonempty = (z[list(J)] != "").any(axis=1)
    assert profile.n_J == int(nonempty.sum()) < len(z)
    counts = Counter(map(tuple, z.loc[nonempty, list(J)].to_numpy()))
    assert profile.k == len(counts) and profile.s1 == sum(c == 1 for c in counts.values())
    brute = {cid for cid, key in keys.items() if counts[key] == 1}
    assert profile.sample_unique_ids == brute and len(brute) == profile.s1


def test_profile_numbers_follow_spec_formulas():
    z = zipf_z()
    big_n = 1e20
    profile = fit_risk(z, J, big_n)
    est = PitmanEstimator().fit(frequency_of_frequencies(cell_keys(z, J)))
    assert profile.status == "ok" and profile.converged
    assert (profile.theta, profile.alpha, profile.theta_se, profile.alpha_se) == (
        est.theta_,
        est.alpha_,
        est.theta_se_,
        est.alpha_se_,
    )
    s1_hat = expected_population_uniques(est.theta_, est.alpha_, big_n)
    assert profile.population_uniques == s1_hat
    assert profile.p_hat == pytest.approx(s1_hat / profile.s1 * profile.n_J / big_n, rel=1e-15)
    assert profile.sample_unique_ratio == profile.s1 / profile.n_J
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.p_hat = 0.5  # type: ignore[misc]


# --- DR ----------------------------------------------------------------------------------------


def test_dr_is_one_without_swaps_and_falls_by_swapped_sample_uniques():
    z = zipf_z()
    profile = fit_risk(z, J, 1e10)
    uniques = sorted(profile.sample_unique_ids)
    others = [c for c in z.index if c not in profile.sample_unique_ids]
    assert disclosure_risk(profile, []) == 1.0
    assert disclosure_risk(profile, others[:10]) == 1.0  # not sample uniques, or not in z_J
    weight = min(profile.p_hat, 1.0)
    for u in (1, 2, 7, profile.s1):
        expected = 1.0 - u / profile.s1 * weight
        assert disclosure_risk(profile, uniques[:u] + others[:3]) == pytest.approx(
            expected, rel=1e-15
        )
    assert disclosure_risk(profile, uniques[:2] + uniques[:2]) == disclosure_risk(
        profile, uniques[:2]
    )


def test_dr_path_over_sequential_swaps():
    profile = fit_risk(zipf_z(), J, 1e10)
    uniques = sorted(profile.sample_unique_ids)
    others = [c for c in zipf_z().index if c not in profile.sample_unique_ids]
    swaps = [(uniques[0], others[0]), (others[1], others[2]), (uniques[1], uniques[2])]
    path = disclosure_risk_path(profile, swaps)
    assert path[0] == 1.0 and len(path) == 4 and np.all(np.diff(path) <= 0)
    for t in range(4):
        ids = [c for pair in swaps[:t] for c in pair]
        assert path[t] == pytest.approx(disclosure_risk(profile, ids), rel=1e-15)


def test_dr_reproduces_the_papers_worked_example():
    """Paper §2.4: s1 = 100, two swapped sample uniques: 0.98 simple, 0.99 with p̂ = 0.5."""
    base = fit_risk(zipf_z(), J, 1e10)
    ids = frozenset(f"u{i}" for i in range(100))
    half = dataclasses.replace(base, s1=100, p_hat=0.5, sample_unique_ids=ids)
    full = dataclasses.replace(half, p_hat=1.0)
    assert disclosure_risk(half, ["u3", "u7"]) == pytest.approx(0.99, abs=1e-15)
    assert disclosure_risk(full, ["u3", "u7"]) == pytest.approx(0.98, abs=1e-15)


def test_p_hat_above_one_is_kept_raw_warned_and_clipped_in_dr():
    z = z_from_fof({1: 3, 8: 1})  # at N = n_J the model expects ≈ 3.3 uniques for s1 = 3
    with pytest.warns(PitmanWarning, match="p_hat"):
        profile = fit_risk(z, ["Organization"], 11)
    assert profile.status == "p_hat_above_one" and profile.fit_status == "ok"
    assert profile.p_hat > 1.05 and profile.risk_weight == 1.0
    assert any("p_hat" in m for m in profile.messages)
    unique = sorted(profile.sample_unique_ids)[0]
    assert disclosure_risk(profile, [unique]) == pytest.approx(1 - 1 / 3, rel=1e-15)


# --- degenerate tables -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fof", "status", "dr_after_one_unique"),
    [
        ({1: 9}, "all_unique", 1 - 1 / 9),
        ({1: 1}, "too_few", 0.0),
        ({6: 1}, "single_cell", 1.0),
        ({2: 3, 5: 1}, "no_uniques", 1.0),
        ({1: 1, 2: 1}, "ewens", None),
    ],
)
def test_degenerate_tables_get_a_status_and_a_defined_dr(fof, status, dr_after_one_unique):
    z = z_from_fof(fof)
    profile = fit_risk(z, ["Organization"], 1e10)
    assert profile.status == status and profile.messages
    assert disclosure_risk(profile, []) == 1.0
    swapped = sorted(profile.sample_unique_ids)[:1] or [z.index[0]]
    dr = disclosure_risk(profile, swapped)
    if status == "ewens":  # p̂ ≈ θ̂ n / (s1 N) ≈ √2 · 3 / 1e10: swapping barely lowers DR
        assert profile.p_hat == pytest.approx(math.sqrt(2) * 3 / 1e10, rel=1e-6)
        assert 1 - 1e-9 < dr < 1.0
    else:
        assert dr == pytest.approx(dr_after_one_unique, abs=1e-15)
    if status == "all_unique":
        assert profile.p_hat == 1.0 and profile.population_uniques == 1e10
    if status in ("no_uniques", "single_cell"):
        assert profile.s1 == 0 and math.isnan(profile.p_hat)


def test_empty_combination_and_not_converged_fit():
    z = zipf_z()
    empty = fit_risk(z, ["Event", "Product"], 1e10)
    assert empty.status == "empty" and empty.n_J == 0
    assert disclosure_risk(empty, list(z.index[:5])) == 1.0
    with pytest.warns(PitmanWarning, match="converge"):
        profile = fit_risk(z, J, 1e10, estimator=PitmanEstimator(max_iter=1))
    assert profile.status == "not_converged" and not profile.converged
    assert math.isfinite(profile.p_hat)


@pytest.mark.parametrize(
    ("categories", "population", "match"),
    [
        (J, 10, "at least the sample size"),
        (J, float("nan"), "finite"),
        (J, "many", "number"),
        (("Organisation",), 1e10, "choose J"),
        ((), 1e10, "at least one category"),
    ],
)
def test_bad_inputs_raise_config_errors(categories, population, match):
    with pytest.raises(ConfigError, match=match):
        fit_risk(zipf_z(), categories, population)


# --- Table 1 and p̂ against N ---------------------------------------------------------------------


def test_pitman_table_has_one_row_per_combination():
    z = zipf_z()
    combos = [J, ("Organization",), "Person", ("Event",)]
    table = pitman_table(z, combos, 1e20)
    assert list(table["J"]) == ["Organization, Person", "Organization", "Person", "Event"]
    assert list(table.columns) == [
        "J",
        "n_J",
        "k",
        "s1",
        "s1/n_J",
        "theta",
        "theta_se",
        "alpha",
        "alpha_se",
        "N",
        "S1_hat",
        "p_hat",
        "status",
        "converged",
    ]
    first = fit_risk(z, J, 1e20)
    row = table.iloc[0]
    assert (row["theta"], row["alpha"], row["p_hat"], row["s1"]) == (
        first.theta,
        first.alpha,
        first.p_hat,
        first.s1,
    )
    assert table.iloc[3]["status"] == "empty"


def test_p_hat_scales_as_n_to_the_alpha_minus_one():
    profile = fit_risk(zipf_z(), J, 1e10)
    curve = p_hat_by_population(profile, [profile.n_J, 1e4, 1e10, 1e20, 1e30])
    assert np.all(np.diff(curve["p_hat"]) < 0)
    slope = np.diff(np.log(curve["p_hat_asymptotic"].to_numpy()[-2:])) / math.log(1e10)
    assert slope[0] == pytest.approx(profile.alpha - 1, rel=1e-9)
    np.testing.assert_allclose(
        curve["p_hat"].iloc[2:], curve["p_hat_asymptotic"].iloc[2:], rtol=1e-7
    )
    at_n = expected_population_uniques(profile.theta, profile.alpha, profile.n_J) / profile.s1
    assert curve["p_hat"].iloc[0] == pytest.approx(at_n, rel=1e-14)
    assert curve["p_hat"].iloc[2] == pytest.approx(profile.p_hat, rel=1e-14)


def test_at_population_equals_a_refit_at_that_population():
    z = zipf_z()
    moved = fit_risk(z, J, 1e10).at_population(1e30)
    refit = fit_risk(z, J, 1e30)
    assert isinstance(moved, RiskProfile) and moved == refit
