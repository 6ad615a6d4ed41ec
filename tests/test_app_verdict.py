"""The protection verdict on the app's pages (issue 20): Export and Frontier show the core's
verdict (``choose.verdict``) in one colour, never green while the goal is missed or absent, and
the sidebar, drawn after the page, says the same about the same release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import neswap_core
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


def test_moving_the_line_does_not_measure_the_release_in_use_again(tmp_path, monkeypatch):
    """The Frontier page re-made the release in use and scored it with every attacker on each
    run: 0.7 s of every slider move on the dev corpus (issue 21). Made and scored once per
    release and decisions now: a slider move measures nothing, a rejected pair measures again."""
    from appkit import choice_view as cv
    from appkit import pipeline as ap
    from appkit import views_release as vr
    from appkit.pipeline import Stage
    from neswap_core.choose.review import pair_key
    from neswap_core.choose.sources import PaperRound
    from neswap_core.measure.attack_scores import ReleaseScorer

    ws = small_workspace(tmp_path, monkeypatch)
    at = run("5_frontier")
    before = [plain(b.value) for b in at.warning]
    calls: list[str] = []
    real_score = ReleaseScorer.score

    def score(self, changed, *args, **kwargs):
        calls.append(self.name)
        return real_score(self, changed, *args, **kwargs)

    monkeypatch.setattr(ReleaseScorer, "score", score)
    c = at.slider(key="frontier_c")
    start = c.value
    c.set_value(round(c.min + 0.5 * (c.max - c.min), 3)).run()  # the line may pick another release
    assert not at.exception
    calls.clear()
    at.slider(key="frontier_c").set_value(start).run()  # back: the first release in use
    assert not at.exception
    assert calls == []  # measured before: nothing scored again
    assert [plain(b.value) for b in at.warning] == before
    stage = Stage(settings(ws), ws)
    app = cv.last_choice(stage)
    source = app.candidates.source(str(app.release_id))
    assert isinstance(source, PaperRound)  # the line's release: a paper round with pairs
    first = source.records[0]
    as_generated = cv.changed_texts(stage, app)
    made: list[str] = []
    real_review = vr.reviewed_release
    monkeypatch.setattr(vr, "reviewed_release", lambda *a, **k: made.append("review") or real_review(*a, **k))
    ws.update_settings({"trade_off_c": 0.123, "trade_off_a": 0.5})  # the line names no text
    assert cv.changed_texts(Stage(settings(ws), ws), app) == as_generated and made == []
    looked: list[str] = []
    real_kept = ap.kept
    monkeypatch.setattr(ap, "kept", lambda kind, *a, **k: looked.append(kind) or real_kept(kind, *a, **k))
    ws.set_decision(vr.release_key(stage.sweep_key, str(app.release_id)), pair_key(first), "reject")
    at.run()
    assert not at.exception
    # another text: its figures looked up again, scored unless an earlier run of this same text
    # kept them on disk (a release's figures are kept for 24 releases: a second ``make test`` on
    # the same cache reads them back)
    assert "release_measures" in looked
    assert len(cv.changed_texts(stage, cv.last_choice(stage))) < len(as_generated)  # the pair is out


def test_the_export_page_finishes_its_release_once_per_review(tmp_path, monkeypatch):
    """The Export page ran the core's ``finish_release`` (the release reviewed again) on each of
    its runs: 0.65 s of every click on the dev corpus (issue 21). Once per release, review and
    settings now: a bundle option measures nothing again, a rejected pair finishes it again."""
    from appkit import choice_view as cv
    from appkit import views_release as vr
    from appkit.pipeline import Stage
    from neswap_core.choose.review import pair_key
    from neswap_core.choose.sources import PaperRound

    ws = small_workspace(tmp_path, monkeypatch)
    at = run("6_export")
    calls: list[str] = []
    real = neswap_core.finish_release

    def finish(config, *args, **kwargs):
        calls.append(config.review.release)
        return real(config, *args, **kwargs)

    monkeypatch.setattr(neswap_core, "finish_release", finish)
    for shuffled in (True, False):
        at.checkbox(key="ex_shuffle").set_value(shuffled).run()
        assert not at.exception
    assert calls == []
    stage = Stage(settings(ws), ws)
    app = cv.last_choice(stage)
    source = app.candidates.source(str(app.release_id))
    assert isinstance(source, PaperRound)
    ws.set_decision(vr.release_key(stage.sweep_key, str(app.release_id)), pair_key(source.records[0]),
                    "reject")
    at.run()
    assert not at.exception
    assert len(calls) == 1  # another review: the release finished again
