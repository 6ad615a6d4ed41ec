"""The mixture fit's progress (issue 13: "the clustering bar sits at 10 % and jumps to done"):
a fraction that rises through the fit, per EM iteration, never back, and ends at 1."""

from __future__ import annotations

import numpy as np
import pytest

from neswap_core.models.fit_progress import FitProgress
from neswap_core.models.mixture import SphericalMixture


def _diffuse(n: int = 400, d: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(6, d))
    x = centres[rng.integers(0, 6, n)] * 0.6 + rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("family", ["pkb", "scauchy"])
def test_fit_reports_rising_progress_per_iteration(family):
    reports: list[tuple[float, str]] = []
    fitted = SphericalMixture(family=family, n_components=5, n_init=4, max_iter=300,
                              random_state=0).fit(_diffuse(), progress=lambda f, m: reports.append((f, m)))
    fractions = np.array([f for f, _ in reports])
    assert fitted.n_iter_ >= 10
    assert len(reports) >= fitted.n_iter_  # one report per EM iteration at least
    assert fractions[-1] == 1.0 and (fractions[:-1] < 1.0).all()
    assert (np.diff(fractions) >= 0).all(), "the bar never goes back"
    # Against max_iter = 300 the old bar stayed below 10 % and then jumped to done.
    assert np.diff(fractions).max() <= 0.4, fractions
    assert fractions[-2] >= 0.6, fractions
    assert all("EM iteration" in m for _, m in reports[1:-1])


def test_convergence_phase_moves_with_the_log_of_the_change():
    seen: list[float] = []
    progress = FitProgress(lambda f, m: seen.append(f), tol=1e-6)
    progress.start("refining", 1, 1000, converges=True)
    progress.enter("refining", 0)
    for i, change in enumerate([1e-2, 1e-3, 1e-4, 1e-5], start=1):
        progress.step(i, change)
    # From 1e-2 to the tolerance 1e-6 is four decades: 1e-4 is half way.
    assert seen[2] == pytest.approx(0.5, abs=0.02)
    assert seen[3] == pytest.approx(0.75, abs=0.02)
