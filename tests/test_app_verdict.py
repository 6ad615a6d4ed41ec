"""The protection verdict on the app's pages (issue 20): Export and Frontier show the core's
verdict (``choose.verdict``) in one colour, never green while the goal is missed or absent, and
the sidebar, drawn after the page, says the same about the same release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from appkit.state import corpus_fingerprint, settings
from appkit.verdict_view import ARTIFACT
from tests.app_workspace import small_workspace

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def run(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception
    return at


def plain(markdown: str) -> str:
    return markdown.replace("\\", "")


def boxes(at: AppTest) -> dict[str, list[str]]:
    return {kind: [plain(b.value) for b in getattr(at, kind)]
            for kind in ("success", "warning", "error", "info")}


def sidebar_text() -> str:
    """The sidebar (app.py; AppTest runs a switched-to page without it) on the first page."""
    home = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    home.run()
    assert not home.exception
    return plain(" ".join(m.value for m in home.sidebar.markdown))


def test_missed_goal_is_red_on_export_and_in_the_sidebar(tmp_path, monkeypatch):
    ws = small_workspace(tmp_path, monkeypatch, max_chunk_accuracy=0.02)
    at = run("6_export")
    shown = boxes(at)
    red = [v for v in shown["error"] if v.startswith("**Goal missed:**")]
    assert len(red) == 1, shown
    assert " documents (" in red[0] and "% of passages" in red[0] and "2 %" in red[0]
    assert not any("Goal met" in v for v in shown["success"])  # no green box for this release
    stored = json.loads(ws.get_artifact(ARTIFACT, corpus_fingerprint(settings(ws))))
    head, rest = stored["sentence"].split(": ", 1)
    assert stored["colour"] == "red" and red[0] == f"**{head}:** {rest}"
    side = sidebar_text()
    assert f":red[**Goal missed:**] {rest}" in side and stored["release_id"] in side


def test_without_a_goal_the_verdict_asks_for_one_and_frontier_sets_it(tmp_path, monkeypatch):
    ws = small_workspace(tmp_path, monkeypatch)
    at = run("5_frontier")
    shown = boxes(at)
    assert any(v.startswith("**No goal set:** the strongest attacker") for v in shown["warning"])
    assert not any(v.startswith("**Goal met") for v in shown["success"])
    assert "No goal set" in sidebar_text()  # drawn after the page: already this release's
    goal = at.number_input(key="goal_max_chunk_accuracy")
    assert goal.value == 100.0
    goal.set_value(1.0).run()
    assert not at.exception
    assert ws.get_setting("max_chunk_accuracy") == pytest.approx(0.01)
    red = [v for v in boxes(at)["error"] if v.startswith("**Goal missed:**")]
    assert red and "the 1 % your goal allows" in red[0]
    assert ":red[**Goal missed:**]" in sidebar_text()
