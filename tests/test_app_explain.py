"""AppTests of issue 13's explanations, progress and review safety on the bundled sample, one
per defect observed: *Clear all decisions* without confirmation or undo, a rejected pair
labelled "AFTER · as released", the frontier's unexplained numbers and mixed number formats,
a line not reached after changing N, no click-to-select on the chart, clusters without a
description, and a first page that waits for the models before showing anything."""

from __future__ import annotations

import io
import json
import re

import pyarrow as pa
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tests import test_app_release as release_tests
from tests.test_app_release import decision_keys, run_page, stage_for

workspace = release_tests.workspace  # fixture: a fresh workspace with small settings

pytestmark = pytest.mark.slow
E_NOTATION = re.compile(r"\d[eE][+-]?\d")


def texts(at) -> list[str]:
    """Every text an analyst reads on the page: Markdown, boxes, metrics and table cells as
    displayed (a Styler's display values when the table has one)."""
    out = []
    for kind in ("markdown", "caption", "success", "info", "warning", "error"):
        out += [str(e.value) for e in getattr(at, kind)]
    out += [f"{m.label} {m.value}" for m in at.metric]
    for frame in at.dataframe:
        styled = frame.proto.arrow_data.styler.display_values
        if styled:
            table = pa.ipc.open_stream(io.BytesIO(styled)).read_all().to_pandas()
        else:
            table = frame.value
        out += [str(v) for v in table.to_numpy().ravel()]
    return out


# --- 4 · Swaps ------------------------------------------------------------------------------------
def test_clear_all_decisions_asks_first_and_can_be_undone(workspace):
    at = run_page("4_swaps")
    first = decision_keys(at)[0]
    at.radio(key=first).set_value("reject").run()
    from appkit.views_release import release_key

    key = release_key(stage_for(workspace).sweep_key, at.selectbox(key="swaps_release").value)
    assert len(workspace.decisions(key)) == 1

    # The page's own "Clear all decisions" control is a question, not the action.
    popover = next(p.proto.popover for p in at.get("popover")
                   if p.proto.popover.label == "Clear all decisions")
    assert not popover.disabled
    confirm = at.button(key="swaps_clear")
    assert confirm.label == "Yes, clear all decisions"
    assert len(workspace.decisions(key)) == 1  # nothing cleared by opening the question
    confirm.click().run()
    assert workspace.decisions(key) == {}
    assert at.radio(key=first).value == ""

    undo = at.button(key="swaps_undo_clear")
    assert undo.label == "Undo: clear all review decisions"
    undo.click().run()
    assert workspace.decisions(key)[first.rsplit("::", 1)[1]][0] == "reject"
    assert at.radio(key=first).value == "reject"


def test_a_rejected_pair_is_never_labelled_as_released(workspace):
    at = run_page("4_swaps")
    first = decision_keys(at)[0]
    at.radio(key=first).set_value("reject").run()
    step = first.rsplit("::", 1)[1]
    labels = [m.value for m in at.markdown if ">AFTER" in m.value]
    rejected = [v for v in labels if "rejected: not in the release" in v]
    assert len(rejected) == 1 and len(labels) == len(decision_keys(at))
    # The rejected pair's container carries the rejected label, not "as released".
    pair = next(c for c in at.get("flex_container") if getattr(c, "key", None)
                and str(c.key).startswith("pair_") and any(
                    getattr(r, "key", None) == first for r in c.radio))
    after = [m.value for m in pair.markdown if ">AFTER" in m.value]
    assert after and all("as released" not in v for v in after), (step, after)


# --- 5 · Risk–utility frontier ------------------------------------------------------------------------
def explained(at) -> list[str]:
    box = next(c for c in at.get("flex_container") if getattr(c, "key", None) == "frontier_explained")
    return [m.value for m in box.markdown]


def test_every_frontier_number_has_a_sentence_with_this_corpus_numbers(workspace):
    at = run_page("5_frontier")
    stage = stage_for(workspace)
    table = stage.table(1e20)
    release_id = explained(at)[0].split("release ", 1)[1].rstrip(")").replace("\\", "")
    row = table.loc[release_id]
    pitman = stage.pitman(1e20)
    fit = pitman[pitman["J"] == ", ".join(row["categories"])].iloc[0]
    dr, du, n, line = explained(at)[1:]
    assert dr.startswith("**Risk DR**") and f"{int(fit['s1'])} of the {int(fit['n_J'])}" in dr
    assert "1 means no protection" in dr and "close to 1" in dr
    assert du.startswith("**Utility DU**") and "1 means the cluster structure" in du
    assert ("above 1" in du) == bool((table["du"] > 1).any())
    assert n.startswith("**Population size N = 10²⁰**") and "N^(α̂−1)" in n
    assert all(f"N = 10{e}" in n for e in ("¹⁰", "²⁰", "³⁰"))  # p̂ at the paper's three N
    assert line.startswith("**Your line**") and "highest DU" in line


def test_frontier_and_check_numbers_share_one_format(workspace):
    at = run_page("5_frontier")
    shown = texts(at)
    assert not [t for t in shown if E_NOTATION.search(t)], [t for t in shown if E_NOTATION.search(t)]
    assert any("× 10" in t for t in shown)  # Ŝ₁ and p̂ as powers of ten, not 2.836e+17
    check = run_page("7_check")
    shown = texts(check)
    assert not [t for t in shown if E_NOTATION.search(t)], [t for t in shown if E_NOTATION.search(t)]


def test_the_default_line_stays_reached_when_n_changes(workspace):
    at = run_page("5_frontier")
    for label in ("10³⁰", "10¹⁰", "10²⁰"):
        at.radio(key="frontier_population").set_value(label).run()
        assert not at.exception
        assert not any("Line not reached" in w.value for w in at.warning), label
        assert any(s.value.startswith("**Your line picks:**") for s in at.success), label
    # Once the analyst moves the line it is theirs: N no longer moves it.
    at.slider(key="frontier_c").set_value(at.slider(key="frontier_c").max).run()
    c = workspace.get_setting("trade_off_c")
    at.radio(key="frontier_population").set_value("10³⁰").run()
    assert workspace.get_setting("trade_off_c") == c


def test_the_offset_slider_keeps_the_line_above_zero_at_the_pivot(workspace):
    from appkit.views_frontier import slider_bounds

    at = run_page("5_frontier")
    at.slider(key="frontier_a").set_value(at.slider(key="frontier_a").max).run()
    a = workspace.get_setting("trade_off_a")
    _, _, pivot = slider_bounds(stage_for(workspace).table(1e20), a)
    low = at.slider(key="frontier_c").min
    assert a > 0 and low + a * pivot >= -1e-9
    at.slider(key="frontier_c").set_value(low).run()
    assert workspace.get_setting("trade_off_c") + a * pivot >= -1e-9


def click(at, key: str, points: list[dict]):
    """Send a plotly point selection for chart ``key``, as the browser does on a click."""
    chart = next(c for c in at.get("plotly_chart") if key in c.proto.id)
    states = at._tree.get_widget_states()
    state = WidgetState(id=chart.proto.id, string_value=json.dumps(
        {"selection": {"points": points, "point_indices": [p["point_index"] for p in points],
                       "box": [], "lasso": []}}))
    states.widgets.append(state)
    return at._run(states)


def test_clicking_a_point_on_the_chart_chooses_that_release(workspace):
    at = run_page("5_frontier")
    table = stage_for(workspace).table(1e20)
    line = workspace.get_setting("trade_off_c")
    from neswap_core.choose.frontier import choose_release

    pick = choose_release(table, 0.0, line).index
    other = table.drop(index=pick).sort_values("dr").index[0]
    row = table.loc[other]
    click(at, "frontier_chart", [{"curve_number": 1, "point_number": 0, "point_index": 0,
                                  "x": float(row["du"]), "y": float(row["dr"]),
                                  "customdata": [other, int(row["swaps"])]}])
    assert not at.exception, [e.value for e in at.exception]
    assert workspace.get_setting("chosen_release") == other
    assert any("In use on the Swaps and Export pages" in i.value for i in at.info)
    swaps = run_page("4_swaps")
    assert swaps.selectbox(key="swaps_release").value == other


# --- 3 · Clusters ---------------------------------------------------------------------------------
def test_each_cluster_is_described_by_its_words_and_the_passage_at_its_centre(workspace):
    import numpy as np

    from appkit.views_prep import chunk_label, document_numbers
    from neswap_core.models.cluster_description import characteristic_words

    at = run_page("3_clusters")
    if any("press **Fit clusters**" in i.value for i in at.info):
        next(b for b in at.button if b.label == "Fit clusters").click().run()
    assert not at.exception
    stage = stage_for(workspace)
    chunks, x = stage.pre_swap()
    mixture = stage.mixture()
    labels = np.asarray(mixture.predict(x))
    words = characteristic_words([c.text for c in chunks], labels, mixture.n_components_)
    table = next(d.value for d in at.dataframe if "characteristic words" in d.value.columns)
    assert list(table["characteristic words"]) == [", ".join(w) for w in words]
    numbers = document_numbers(chunks)
    lines = [m.value for m in at.markdown if m.value.startswith("**Cluster ")]
    for c in range(mixture.n_components_):
        members = np.flatnonzero(labels == c)
        if not len(members):
            continue
        centre = members[np.argmax(x[members] @ mixture.means_[c])]
        line = next(v for v in lines if v.startswith(f"**Cluster {c}** "))
        assert f"Typical passage ({chunk_label(chunks[centre].chunk_id, numbers)})" in line


# --- 1 · Corpus: usable while the models load -------------------------------------------------------
def test_the_corpus_page_is_usable_before_the_heavy_steps_run(workspace, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from appkit import pipeline

    def still_loading(self):  # the first heavy step (spaCy over every document) never returns
        raise RuntimeError("simulated: the models are still loading")

    monkeypatch.setattr(pipeline.Stage, "clean", still_loading)
    at = AppTest.from_file(str(release_tests.ROOT / "app.py"), default_timeout=600)
    at.run()
    assert at.exception  # the simulated stop, after ...
    # ... the corpus choice, the upload and the column to protect were already on the page.
    assert at.get("file_uploader"), "the upload is not usable before the models load"
    assert at.selectbox(key="protect").value == "company"
    assert "10 documents" in at.selectbox(key="protect").label
