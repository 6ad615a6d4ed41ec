"""Frontier dominance and the trade-off choice on hand-made point sets (SPEC §7)."""

import itertools

import numpy as np
import pandas as pd
import pytest

from neswap_core.choose.frontier import choose_release, describe_release, frontier_mask
from neswap_core.errors import ConfigError


def brute_force_frontier(du, dr):
    n = len(du)
    out = np.ones(n, dtype=bool)
    for i, j in itertools.product(range(n), range(n)):
        if i != j and dr[j] <= dr[i] and du[j] >= du[i] and (dr[j] < dr[i] or du[j] > du[i]):
            out[i] = False
    return out


def table(points, swaps=None):
    du, dr = zip(*points, strict=True)
    return pd.DataFrame({
        "du": du, "dr": dr, "combination": [f"J{i}" for i in range(len(points))],
        "swaps": swaps or list(range(1, len(points) + 1)),
        "swap_rate": [0.01] * len(points),
    }, index=[f"r{i}" for i in range(len(points))])


def test_frontier_matches_brute_force_on_random_sets_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        du = rng.integers(0, 6, n) / 5.0  # coarse grid: many ties
        dr = rng.integers(0, 6, n) / 5.0
        np.testing.assert_array_equal(frontier_mask(du, dr), brute_force_frontier(du, dr))


def test_frontier_keeps_identical_points_and_drops_dominated():
    du = np.array([0.99, 0.99, 0.98, 0.995])
    dr = np.array([0.95, 0.95, 0.96, 0.97])
    # (0.98, 0.96) is dominated by (0.99, 0.95); the two identical points both stay.
    np.testing.assert_array_equal(frontier_mask(du, dr), [True, True, False, True])


def test_equal_utility_lower_risk_dominates():
    np.testing.assert_array_equal(frontier_mask(np.array([1.0, 1.0]), np.array([0.9, 0.8])), [False, True])


def test_empty_and_single():
    assert frontier_mask(np.array([]), np.array([])).size == 0
    assert frontier_mask(np.array([0.5]), np.array([0.5])).tolist() == [True]
    assert choose_release(table([(0.999, 0.98)]), a=0, c=0.99).index == "r0"
    empty = choose_release(pd.DataFrame(columns=["du", "dr", "swaps"]), 0, 0.9)
    assert empty.index is None and not empty.line_reached and "no candidate" in empty.message.lower()


def test_choice_is_highest_utility_acceptable_frontier_release():
    t = table([(0.999, 0.99), (0.998, 0.97), (0.995, 0.95), (0.990, 0.96)])
    assert choose_release(t, a=0, c=0.975).index == "r1"  # DR <= 0.975: r1, r2 (r3 dominated)
    assert choose_release(t, a=0, c=0.99).index == "r0"  # boundary DR == c is acceptable
    assert choose_release(t, a=0, c=0.951).index == "r2"


def test_slope_tilts_the_line():
    t = table([(0.999, 0.99), (0.995, 0.95)])
    # DR <= c + a*DU with a = 1, c = -0.02: r0 needs 0.99 <= 0.979 (no), r1 0.95 <= 0.975 (yes)
    assert choose_release(t, a=1.0, c=-0.02).index == "r1"
    assert choose_release(t, a=1.0, c=-0.005).index == "r0"  # 0.99 <= 0.994


def test_line_not_reached_picks_lowest_risk_and_says_so():
    t = table([(0.999, 0.99), (0.995, 0.95)])
    choice = choose_release(t, a=0, c=0.5)
    assert choice.index == "r1" and not choice.line_reached
    assert "no release reaches the line" in choice.message.lower()


def test_ties_prefer_lower_risk_then_fewer_swaps():
    t = table([(0.99, 0.95), (0.99, 0.95)], swaps=[7, 3])
    assert choose_release(t, a=0, c=1).index == "r1"


def test_negative_slope_is_refused():
    with pytest.raises(ConfigError):
        choose_release(table([(1, 1)]), a=-1, c=0)


def test_describe_release_sentence():
    row = pd.Series({"combination": "Organization + Product", "swaps": 28, "swap_rate": 56 / 1819,
                     "dr": 0.96213, "du": 0.998111})
    assert describe_release(row) == "Organization + Product, 28 swaps, r = 3.1%: DR 0.962, DU 0.9981"


def test_rows_not_reached_by_every_draw_are_never_chosen():
    import pandas as pd

    from neswap_core.choose.frontier import choose_release

    table = pd.DataFrame({"du": [0.99, 1.0], "dr": [0.9, 0.95], "swaps": [1, 2],
                          "all_draws": [True, False]}, index=["a", "b"])
    assert choose_release(table, 0.0, 1.0).index == "a"  # "b" is better but averaged over fewer
    none = choose_release(table.assign(all_draws=False), 0.0, 1.0)
    assert none.index is None and "every Monte Carlo draw" in none.message


def test_default_offset_is_reached_when_every_frontier_release_has_the_same_risk():
    """Rounding c to the nearest 1e-6 put the default line just below a lone frontier release
    (DR 0.9973454 → c = 0.997345): "line not reached" on opening (issue 13)."""
    from neswap_core.choose.frontier import default_offset

    table = pd.DataFrame({"du": [1.0002, 0.9999], "dr": [0.9973454, 0.9973454], "swaps": [1, 2]},
                         index=["a", "b"])
    c = default_offset(table)
    assert choose_release(table, 0.0, c).line_reached
    assert c - 0.9973454 < 1e-6
    assert default_offset(pd.DataFrame({"du": [1.0, 0.99], "dr": [1.0, 0.998]})) == 0.999
