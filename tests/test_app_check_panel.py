"""AppTests of the Check page's attacker panel (issue 22): per attacker, worst case highlighted,
documents still named with the words that name them; the figures recomputed with the library."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.app_workspace import small_workspace

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    return small_workspace(tmp_path, monkeypatch)


def run_page(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def upload_sample_with_reading(workspace):
    """The sample as an upload, and as its reading the second half of each call under other ids."""
    from appkit import views_check as vc
    from appkit.pipeline import Stage, pack_uploads
    from appkit.state import settings

    sample = ROOT / "data" / "sample"
    files = [(p.name, p.read_bytes()) for p in sorted((sample / "docs").glob("*.txt"))]
    files += [(n, (sample / n).read_bytes()) for n in ("manifest.csv", "aliases.csv")]
    key, payload = pack_uploads(files)
    workspace.put_artifact("upload", key, payload)
    workspace.update_settings({"corpus_source": key})
    manifest = pd.read_csv(sample / "manifest.csv", keep_default_na=False)
    reading = []
    for row in manifest.itertuples():
        lines = (sample / "docs" / f"{row.doc_id}.txt").read_text().splitlines()
        reading.append((f"{row.doc_id}_other.txt", "\n".join(lines[len(lines) // 2:]).encode()))
    reading.append(("manifest.csv", manifest.assign(doc_id=manifest["doc_id"] + "_other")
                    .to_csv(index=False).encode()))
    stage = Stage(settings(workspace), workspace)
    vc.store_reading(stage, reading)
    return stage


def panel_frame(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe
                if hasattr(d.value, "columns") and "documents named after" in d.value.columns)


def test_check_page_shows_the_panel_and_what_names_each_document(workspace):
    from appkit import views_check as vc
    from appkit import views_panel as vp
    from neswap_core.publish.labels import ATTACKER_NAMES
    from tests.test_app_check import chosen_release

    stage = upload_sample_with_reading(workspace)
    at = run_page("7_check")
    frame = panel_frame(at)
    # every attacker of the default panel, in plain words
    assert list(frame["attacker"]) == [ATTACKER_NAMES[n] for n in
                                       ("reading", "char", "embedding", "retrieval")]
    # the same figures from the library (the page's release, scored by the core's scorers)
    stage, release = chosen_release(workspace)
    changed = vc.changed_chunks(release)
    measured = vp.measures(vp.panel(stage), changed)
    for row, (name, (before, after)) in zip(frame.itertuples(), measured.items(), strict=True):
        assert row[3] == vc.pct(after.chunk_top1) and row[5] == vc.pct(after.document_accuracy), name
        assert row[2] == vc.pct(before.chunk_top1) and row[4] == vc.pct(before.document_accuracy)
    sentence = next(w.value for w in at.warning if "Worst case over" in w.value)
    worst_doc = max(a.document_accuracy for _, a in measured.values())
    assert f"{vc.pct(worst_doc)} of documents" in sentence
    # documents named by any attacker, then the words that name the one picked
    named = next(d.value for d in at.dataframe
                 if hasattr(d.value, "columns") and "named by" in d.value.columns)
    expected = {d for _, a in measured.values() for d in a.named_documents}
    assert set(named["document"]) == expected and len(expected) > 0
    words = next(d.value for d in at.dataframe if hasattr(d.value, "columns")
                 and "words and phrases that name it" in d.value.columns)
    first = named["document"].iloc[0]
    assert set(words["attacker"]) == {a.strip() for a in named["named by"].iloc[0].split(",")}
    assert words["words and phrases that name it"].str.len().min() > 0
    # pick another document: its own words are shown
    if len(named) > 1:
        at.selectbox(key="check_panel_document").set_value(named["document"].iloc[1]).run()
        assert not at.exception
        again = next(d.value for d in at.dataframe if hasattr(d.value, "columns")
                     and "words and phrases that name it" in d.value.columns)
        assert set(again["attacker"]) == {a.strip() for a in named["named by"].iloc[1].split(",")}
    assert first
    # plain language: no field names on screen
    shown = " ".join([m.value for m in at.markdown] + [w.value for w in at.warning]
                     + [c for d in at.dataframe if hasattr(d.value, "columns") for c in d.value.columns])
    for field in ("chunk_accuracy", "document_accuracy", "chunk_top1", "word_c1", "panel_families"):
        assert field not in shown


def test_without_a_reading_the_page_says_the_panel_needs_one(workspace):
    at = run_page("7_check")
    assert any("attacker panel needs an attacker reading" in i.value for i in at.info)
    assert not any(hasattr(d.value, "columns") and "documents named after" in d.value.columns
                   for d in at.dataframe)


@pytest.mark.parametrize("page", ["7_check", "5_frontier"])
def test_a_restarted_server_draws_the_panel_without_loading_an_attacker(workspace, monkeypatch, page):
    """Issue 21: after a restart the Check page loaded the reading attacker and the panel, and
    scored and explained the release again (its panel figures, the document to inspect, the
    words that name a document); the Frontier page did the same for its verdict. With an
    attacker reading, both now draw the same after a restart without training, loading or
    running any attacker (fails without: the panel is loaded)."""
    from appkit import views_check, views_export, views_panel
    from neswap_core.measure import explain
    from neswap_core.measure.attack_scores import ReleaseScorer
    from tests.test_app_check import chosen_release, restart_server

    upload_sample_with_reading(workspace)
    chosen_release(workspace)
    restart_server()  # an earlier test's figures may be in memory only
    first = run_page(page)
    calls: list[str] = []
    restart_server()
    monkeypatch.setattr(ReleaseScorer, "score", lambda *a, **k: calls.append("score"))
    monkeypatch.setattr(views_export, "scorers", lambda *a, **k: calls.append("panel (CLI's)"))
    monkeypatch.setattr(views_panel, "_panel_scorers", lambda *a, **k: calls.append("panel"))
    monkeypatch.setattr(views_check, "_scorer", lambda *a, **k: calls.append("attacker"))
    monkeypatch.setattr(explain, "document_views", lambda *a, **k: calls.append("explain"))
    second = run_page(page)
    assert calls == []

    def shown(at: AppTest) -> list:
        return [(kind, str(e.value)) for kind in ("markdown", "warning", "success", "info", "dataframe")
                for e in at.get(kind)]  # fmt: skip

    assert shown(second) == shown(first)
    if page == "7_check":
        assert any("Worst case over" in text for _, text in shown(first))  # the panel was drawn
