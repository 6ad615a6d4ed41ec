"""AppTests of issue 13's explanations, progress and review safety on the bundled sample, one
per defect observed: *Clear all decisions* without confirmation or undo, a rejected pair
labelled "AFTER · as released", the frontier's unexplained numbers and mixed number formats,
a line not reached after changing N, no click-to-select on the chart, clusters without a
description, and a first page that waits for the models before showing anything."""

from __future__ import annotations

import io
import re

import pyarrow as pa
import pytest

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
    key = f"{stage_for(workspace).sweep_key}/{at.selectbox(key='swaps_release').value}"
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
