"""AppTests of the Check page (issue 11): the audit of the chosen release on the bundled sample.

Same small settings as tests/test_app_release.py; the expected ε are recomputed here with the
library on the embeddings the page used (pre-swap, and the release with only its changed chunks
re-embedded), not read back from the page.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from neswap_core.check.audit import RenyiAudit, released_embeddings
from neswap_core.store import Workspace

ROOT = Path(__file__).resolve().parent.parent
SMALL = {"max_swaps": 10, "n_components": 5, "n_init": 1}
pytestmark = pytest.mark.slow


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    folder = tmp_path / "workspace"
    monkeypatch.setenv("NESWAP_WORKSPACE", str(folder))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    ws = Workspace.open(folder)
    ws.update_settings(SMALL)
    return ws


def run_page(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def chosen_release(ws: Workspace):
    from appkit import views_release as vr
    from appkit.pipeline import Stage
    from appkit.state import settings

    stage = Stage(settings(ws), ws)
    s = stage.settings
    table = stage.table(float(s["population"]))
    chosen, _ = vr.pick_release(table, s.get("chosen_release"), float(s["trade_off_a"]),
                                float(s["trade_off_c"]))
    release = vr.reviewed_release(stage.sweep(), stage.sweep_key, table, chosen, ws.decisions,
                                  float(s["population"]))
    return stage, release


def metric(at: AppTest, label: str) -> float:
    return float(next(m.value for m in at.metric if m.label == label))


def test_check_page_shows_the_audit_of_the_chosen_release(workspace):
    at = run_page("7_check")
    assert at.title[0].value == "7 · Check"
    assert at.get("plotly_chart"), "the D_α chart is missing"
    from appkit.pipeline import embedder
    from appkit.views_check import AUDIT_RESAMPLES, changed_chunks

    stage, release = chosen_release(workspace)
    chunks, x = stage.pre_swap()
    groups = [c.doc_id for c in chunks]
    changed = changed_chunks(release)
    assert changed, "the chosen release changes no passage"
    # Changed passages are exactly those of the kept pairs.
    ids = {cid for r in release.accepted_records if r.moved for cid in (r.chunk_a, r.chunk_b)}
    assert {chunks[i].chunk_id for i in changed} <= ids
    params = {"n_bootstrap": AUDIT_RESAMPLES, "n_permutations": AUDIT_RESAMPLES, "random_state": 0}
    before = RenyiAudit(**params).fit(x, groups)
    after = RenyiAudit(**params).fit(released_embeddings(x, changed, embedder().encode), groups)
    assert metric(at, "Corpus ε before") == pytest.approx(before.epsilon_, abs=0.006)
    assert metric(at, "Corpus ε after") == pytest.approx(after.epsilon_, abs=0.006)
    table = next(d.value for d in at.dataframe if "ε after" in d.value.columns)
    assert len(table) == len(set(groups))
    assert table["ε after"].is_monotonic_decreasing


def test_choosing_another_document_redraws_without_recomputing(workspace, monkeypatch):
    at = run_page("7_check")
    import neswap_core.check.audit as audit_mod

    def refit(*args, **kwargs):
        raise AssertionError("the audit was recomputed for a new chart")

    monkeypatch.setattr(audit_mod.RenyiAudit, "fit", refit)
    box = at.selectbox(key="check_document")
    box.set_value(box.options[-1]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.get("plotly_chart")
