"""DU (SPEC §6) against hand-computed PKB log densities."""

import numpy as np
import pytest

from neswap_core.errors import FitError
from neswap_core.measure.utility import data_utility, utility_baseline, utility_deltas


class KnownPKB:
    """A mixture with fixed parameters whose log densities we can write down by hand."""

    def __init__(self, means, rho):
        self.means, self.rho = np.asarray(means, float), np.asarray(rho, float)

    def component_log_density(self, X):
        d = X.shape[1]
        q = 1 - 2 * self.rho * (X @ self.means.T) + self.rho**2
        return np.log1p(-self.rho**2) - d / 2 * np.log(q)

    def predict(self, X):
        return self.component_log_density(X).argmax(axis=1)


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_baseline_and_deltas_match_closed_form():
    mix = KnownPKB(unit([[1, 0, 0], [0, 1, 0]]), [0.5, 0.7])
    X = unit([[1, 0.1, 0], [0.1, 1, 0.2], [0.9, 0.2, 0.1]])
    base = utility_baseline(mix, X)
    assert base.labels.tolist() == [0, 1, 0]
    # hand formula for chunk 1 under component 1: log(1 - .49) - 1.5 log(1 - 1.4 x_y + .49)
    x1 = X[1]
    expected = np.log(1 - 0.49) - 1.5 * np.log(1 - 1.4 * x1[1] + 0.49)
    assert base.log_density[1] == pytest.approx(expected, rel=1e-12)
    assert base.total == pytest.approx(base.log_density.sum())
    assert data_utility(base, 0.0) == 1.0  # DU = 1 with no swaps

    # swapping chunk 2's text so its embedding moves away from its cluster lowers DU
    new = unit([[0, 0, 1]])
    delta = utility_deltas(mix, base, [2], new)
    lf_new = np.log(1 - 0.25) - 1.5 * np.log(1 - 1.0 * new[0, 0] + 0.25)
    assert delta[0] == pytest.approx(lf_new - base.log_density[2], rel=1e-12)
    du = data_utility(base, delta.sum())
    assert du == pytest.approx(1 + delta.sum() / abs(base.total))
    assert du < 1


def test_du_above_one_is_reported_not_hidden():
    mix = KnownPKB(unit([[1, 0, 0]]), [0.8])
    X = unit([[0.6, 0.8, 0], [1, 0.05, 0]])
    base = utility_baseline(mix, X)
    delta = utility_deltas(mix, base, [0], unit([[1, 0, 0]]))  # moved onto the mean direction
    assert delta[0] > 0 and data_utility(base, delta.sum()) > 1


def test_zero_l0_and_mismatched_inputs_are_clear_errors():
    mix = KnownPKB(unit([[1, 0, 0]]), [0.0])  # ρ = 0: uniform density, log f = 0 everywhere
    base = utility_baseline(mix, unit([[1, 0, 0]]))
    with pytest.raises(FitError, match="undefined"):
        data_utility(base, 0.0)
    with pytest.raises(FitError, match="labels"):
        utility_deltas(mix, base, [0, 0], unit([[1, 0, 0]]))
