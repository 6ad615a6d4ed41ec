"""Progress for every long step (issue 20: "a plans bar stuck at 0 %", "a blank page while the
frontier page silently refits clusters"). Every progress element the pages draw is recorded
(``DeltaGenerator.progress``), so the checks are about what was shown, never about time."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest

from tests.app_workspace import small_workspace

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
PLANS = {"plan_rounds": 2, "plan_terms": [True], "plan_redaction_levels": [0.0, 0.05]}


@pytest.fixture
def shown(monkeypatch) -> list[tuple[float, str]]:
    """(value, text) of every progress bar drawn while the test runs."""
    seen: list[tuple[float, str]] = []
    original = DeltaGenerator.progress

    def progress(self, value, text=None, **kwargs):
        percent = isinstance(value, int) and not isinstance(value, bool)  # 0–100
        seen.append((value / 100 if percent else float(value), str(text or "")))
        return original(self, value, text=text, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "progress", progress)
    return seen


def run(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_plans_bar_moves_within_each_plan(tmp_path, monkeypatch, shown):
    small_workspace(tmp_path, monkeypatch, n_components=4, **PLANS)  # a fit of its own
    run("4_swaps")
    plans = [(v, t) for v, t in shown if t.startswith("Building plan candidates")]
    assert plans, shown
    first = [(v, t) for v, t in plans if "plan 1 of" in t]
    # inside the first plan the bar moves past its start, naming the plan's step
    assert any(v > first[0][0] and "step 2 of" in t for v, t in first), first
    assert all(0.0 <= v <= 1.0 for v, _ in plans)
    values = [v for v, _ in plans]
    assert values == sorted(values)  # never backwards


def test_the_frontier_shows_its_cluster_fit_and_candidates(tmp_path, monkeypatch, shown):
    small_workspace(tmp_path, monkeypatch, n_components=6)  # clusters no other test fitted
    run("5_frontier")
    texts = [t for _, t in shown]
    assert any(t.startswith("Fitting the clusters") for t in texts), texts
    assert any(t.startswith("Building candidate releases") for t in texts), texts
