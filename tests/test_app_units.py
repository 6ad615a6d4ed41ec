"""Fast tests of the app's pure helpers (issue 13): safe text, one number format, the default
trade-off line, undo history, the pinned release's corpus, uploads and cluster descriptions."""

from __future__ import annotations

import markdown_it
import pandas as pd
import pytest

from appkit.state import PINNED_FOR, save_settings, settings
from appkit.views_prep import (
    chunk_label,
    not_utf8,
    table_columns_without_text,
    to_utf8,
    with_text_column,
)
from appkit.widgets import fmt_number, html_text, md_text
from neswap_core.choose.frontier import choose_release, default_offset
from neswap_core.workspace.store import Workspace

EVIL = "[HPE](https://evil.example) **Enterprise** <a href='https://evil.example'>x</a> " \
       "https://evil.example :red[y] $x$\n\n[z](https://evil.example)"
#: CommonMark with raw HTML allowed: what ``unsafe_allow_html`` renders (GitHub's autolinks
#: need a bare "https://", which the escaping breaks: checked separately).
MD = markdown_it.MarkdownIt("commonmark", {"html": True})


def test_md_text_renders_corpus_strings_as_plain_text():
    html = MD.render(f"Company: {md_text(EVIL)}")
    assert "<a" not in html and "<strong>" not in html and "<script" not in html
    assert "HPE" in html and "evil" in html  # the text itself is still shown
    assert "https://" not in md_text(EVIL) and "https&#58;&#47;&#47;" in html_text(EVIL)


def test_html_text_survives_a_blank_line_inside_our_html():
    # A blank line ends a Markdown HTML block: the rest would be parsed as Markdown (the bug
    # that made the company a live link on the Clusters and Swaps pages).
    html = MD.render(f"<div style='white-space:pre-wrap'>{html_text(EVIL)}</div>")
    assert "<a" not in html and "<strong>" not in html
    assert "&#91;HPE&#93;" in html


@pytest.mark.parametrize(("value", "digits", "text"), [
    (2.836e17, 3, "2.84 × 10¹⁷"), (3.749e-3, 3, "0.00375"), (0.99873, 4, "0.9987"),
    (1234.0, 3, "1,234"), (12.5, 3, "12.5"), (1e-5, 2, "1.0 × 10⁻⁵"), (None, 3, "–"),
    (float("inf"), 3, "∞"),  # Ŝ₁ of an all-unique table (no finite MLE) once broke page 5
])
def test_one_number_format(value, digits, text):
    assert fmt_number(value, digits) == text


def test_default_line_is_reached_and_halfway():
    table = pd.DataFrame({"du": [1.0, 0.99, 0.98, 0.97], "dr": [1.0, 0.999, 0.998, 0.997],
                          "swaps": [1, 2, 3, 4]})
    c = default_offset(table)
    assert c == pytest.approx(0.9985)
    pick = choose_release(table, 0.0, c)
    assert pick.line_reached and pick.index == 2
    assert not choose_release(table, 0.0, 0.97).line_reached  # the old default c


def test_undo_takes_back_the_last_actions_in_order(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    ws.update_settings({"threshold": 80.0}, undo_label="change threshold")
    first = ws.add_correction("add", "Product", "iX")
    assert ws.add_correction("add", "Product", "iX") == first  # double click: stored once
    assert [h["label"] for h in ws.history()][:2] == ["add correction “iX”", "change threshold"]
    ws.remove_correction(first)
    assert ws.corrections() == []
    assert ws.undo() == "remove correction “iX”"
    assert [c["text"] for c in ws.corrections()] == ["iX"]
    ws.set_decisions("r", {"a|b": ("reject", "")})
    ws.clear_decisions("r")
    assert ws.decisions("r") == {}
    assert ws.undo() == "clear all review decisions"
    assert ws.decisions("r") == {"a|b": ("reject", "")}
    ws.undo(), ws.undo(), ws.undo()
    assert ws.corrections() == [] and ws.get_setting("threshold") is None
    assert ws.undo() is None


def test_history_keeps_the_last_20(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    for i in range(25):
        ws.update_settings({"seed": i}, undo_label=f"seed {i}")
    labels = [h["label"] for h in ws.history()]
    assert len(labels) == 20 and labels[0] == "seed 24" and labels[-1] == "seed 5"


def test_pinned_release_belongs_to_its_corpus(tmp_path):
    ws = Workspace.open(tmp_path / "ws")
    save_settings(ws, chosen_release="Organization + Person @ 7")
    assert settings(ws)["chosen_release"] == "Organization + Person @ 7"
    assert ws.get_setting(PINNED_FOR) == "sample|company"
    save_settings(ws, corpus_source="upload:abc")  # a new corpus: nothing pinned
    assert settings(ws)["chosen_release"] is None
    ws.update_settings({"corpus_source": "sample"})  # even if the old setting came back
    ws.update_settings({"chosen_release": "Organization + Person @ 7"})
    ws.update_settings({"corpus_source": "upload:def"})
    assert settings(ws)["chosen_release"] is None
    assert ws.undo() is not None  # the corpus change is undoable


def test_the_apps_settings_are_a_run_config(tmp_path):
    """Issue 19: the app keeps a typed, validated RunConfig (not an untyped dict); run.toml is
    that config, and a bad value is refused before it reaches the workspace."""
    from appkit.state import run_config
    from neswap_core.config import RunConfig
    from neswap_core.errors import ConfigError

    ws = Workspace.open(tmp_path / "ws")
    save_settings(ws, n_components=5, plan_rounds=2, chosen_release="x @ 1")
    s = settings(ws)
    assert isinstance(s.config, RunConfig) and s.config.mixture.n_components == 5
    assert s["n_components"] == 5 and s["plan_rounds"] == 2 and s["chosen_release"] == "x @ 1"
    assert run_config(s).plans.plan_rounds == 2 and "chosen_release" not in RunConfig().settings()
    for bad in ({"shuffle_chunks": "no"}, {"n_components": 2.5}):
        with pytest.raises(ConfigError, match="is not allowed"):
            save_settings(ws, **bad)
    assert settings(ws)["n_components"] == 5


def test_latin1_upload_is_detected_and_converted():
    raw = "doc_id,company,transcript\nA,Café,Crème brûlée in Zürich.\n".encode("cp1252")
    assert not_utf8([("t.csv", raw), ("ok.csv", b"doc_id\n")]) == ["t.csv"]
    fixed = to_utf8(raw)
    assert "Café" in fixed.decode("utf-8") and to_utf8(b"\x81\xe9").decode() == "\x81é"
    columns = table_columns_without_text([("t.csv", fixed), ("manifest.csv", b"doc_id\n")])
    assert columns == {"t.csv": ["doc_id", "company", "transcript"]}
    renamed = with_text_column("t.csv", fixed, "transcript")
    assert renamed.decode().splitlines()[0] == "doc_id,company,text"


def test_chunk_labels_never_show_internal_ids():
    assert chunk_label("APH_q3_2021#0000", {"APH_q3_2021": 3}) == "document 3, passage 1"
    assert "#" not in chunk_label("weird id")


def test_a_change_that_rounds_to_zero_has_no_arrow_and_no_e_notation():
    """Issue 20: "↑ 8.01 × 10⁻¹²" for an ε that did not move, red arrows for zero changes."""
    from appkit.widgets import delta

    assert delta(8.01e-12, 2) is None and delta(0.0, 4) is None and delta(float("nan")) is None
    assert delta(-0.00004, 4) is None  # would show as "-0.0000" with a red arrow
    assert delta(0.0123, 4) == "+0.0123"
    assert delta(-0.05, 1, " points", 100) == "-5.0 points"
    assert delta(-2, 0) == "-2" and delta(0, 0) is None


def test_core_messages_and_undo_labels_name_settings_in_words():
    from appkit.state import _action_label, plain_message

    assert plain_message("Only 6 swaps for Person + Location (max_swaps = 10): no valid pair") == (
        "Only 6 swaps for Person + Location (maximum swaps: 10): no valid pair")
    assert _action_label({"trade_off_c": 0.9, "trade_off_c_auto": False}) == "change offset of the line"
    assert _action_label({"publishable_columns": [], "shuffle_chunks": True}) == (
        "change published columns, chunk order")
    assert _action_label({"accepted_leaks": []}) == "change accepted leak-scan hits"
    assert "_" not in _action_label({"some_new_setting": 1})


def _releases(dr, du):
    n = len(dr)
    return pd.DataFrame({"dr": dr, "du": du, "release_id": [f"r{i}" for i in range(n)],
                         "swaps": range(n), "swap_rate": [0.1] * n, "du_sd": [0.0] * n,
                         "dr_sd": [0.0] * n, "p_hat": [1e-4] * n}).set_index("release_id",
                                                                              drop=False)


def test_the_line_sliders_follow_the_spread_of_real_releases():
    """Issue 20: DR in [0.997, 1.000] with releases 10⁻⁵ apart; a 0.001 step and a two-position
    slope slider could not choose, and the offset could exceed 1."""
    from appkit.views_frontier import offset_step, slider_bounds, slope_range

    table = _releases([0.99700, 0.99751, 0.99852, 0.99953, 1.0], [1.0, 0.998, 0.996, 0.994, 0.99])
    step = offset_step(table)
    assert step == pytest.approx(1e-5)  # 0.003 spread / 100 → 10⁻⁵ grid
    low, high, pivot = slider_bounds(table, 0.0)
    assert high <= 1.0 and low < 0.997 and (high - low) / step >= 100
    assert pivot == pytest.approx(0.995)
    top, a_step = slope_range(table)
    assert top == pytest.approx(4 * 0.003 / 0.01) and top / a_step >= 100
    flat = _releases([0.5, 0.5], [0.9, 0.9])
    assert offset_step(flat) == 0.001 and slope_range(flat) == (10.0, 0.5)


def test_hovers_show_the_digits_that_tell_releases_apart():
    from appkit.views_frontier import hover_template, spread_digits

    assert spread_digits([0.99700, 0.99701]) == 7  # spread 10⁻⁵: two digits past it
    assert spread_digits([0.2, 0.8]) == 3 and spread_digits([1.0]) == 3
    table = _releases([0.99700, 0.99701, 0.99702], [1.0, 0.9, 0.8])
    template = hover_template(table)
    assert "DR %{customdata[6]:.7f}" in template and "DU %{x:.3f}" in template


def test_the_chart_shows_measured_risk_by_default():
    from appkit.views_frontier import default_risk_axis

    assert default_risk_axis(["dr", "chunk_accuracy", "document_accuracy"]) == "document_accuracy"
    assert default_risk_axis(["dr", "chunk_accuracy"]) == "chunk_accuracy"
    assert default_risk_axis(["dr"]) == "dr"


def test_each_corpus_keeps_its_pinned_release_line_and_leak_decisions(tmp_path):
    """Issue 20: going to the sample and back lost the pinned release; an upload inherited the
    sample's line and accepted hits. Each corpus (and protected column) keeps its own."""
    ws = Workspace.open(tmp_path / "ws")
    save_settings(ws, chosen_release="Organization @ 3", trade_off_c=0.9871, trade_off_a=0.5,
                  accepted_leaks=["d|1|Acme|any case"])
    ws.add_corrections([("drop", "Person", "EDITED TRANSCRIPT", None)])
    save_settings(ws, corpus_source="upload:abc", protect="company")
    assert ws.corrections() == []  # the sample's corrections do not follow the upload
    ws.add_corrections([("add", "Product", "iX", None)])
    other = settings(ws)
    assert other["chosen_release"] is None and other["trade_off_a"] == 0.0
    assert not other.line_set and other.get("accepted_leaks", []) == []
    save_settings(ws, chosen_release="Person @ 2", trade_off_c=0.5)
    save_settings(ws, corpus_source="sample", protect="company")
    back = settings(ws)
    assert back["chosen_release"] == "Organization @ 3"
    assert (back["trade_off_c"], back["trade_off_a"]) == (0.9871, 0.5)
    assert back["accepted_leaks"] == ["d|1|Acme|any case"]
    assert [c["text"] for c in ws.corrections()] == ["EDITED TRANSCRIPT"]
    save_settings(ws, corpus_source="upload:abc")
    assert settings(ws)["chosen_release"] == "Person @ 2" and settings(ws)["trade_off_c"] == 0.5
    assert [(c["action"], c["text"]) for c in ws.corrections()] == [("add", "iX")]
    assert ws.undo() and [c["text"] for c in ws.corrections()] == ["EDITED TRANSCRIPT"]
    assert settings(ws)["corpus_source"] == "sample"  # undoing the switch brings all back


def test_long_work_runs_beside_a_bar_that_learns_its_time_left(monkeypatch):
    """Issue 20: 58 s of bare spinner while the attacker trained. ``run_with_progress`` runs
    the work in a thread, returns its value or raises its error, and keeps seconds per unit so
    the next run can say how long is left."""
    import threading

    from appkit import widgets

    monkeypatch.setattr(widgets, "_RATES", {})
    done = threading.Event()
    assert widgets.run_with_progress("Training", lambda: done.set() or 42, "test-step", 10) == 42
    assert done.is_set() and widgets._RATES["test-step"] >= 0
    with pytest.raises(ValueError, match="bad"):
        widgets.run_with_progress("Training", lambda: (_ for _ in ()).throw(ValueError("bad")),
                                  "other", 1)
    assert "other" not in widgets._RATES  # a failed run teaches nothing


def test_another_tabs_change_makes_this_tab_stale_but_bookkeeping_does_not(tmp_path):
    """Issue 20: a second tab left the first showing another ★ release than its sidebar; the
    sidebar's check compares the revision it drew with the workspace's now."""
    from appkit.sidebar import analyst_revision

    ws = Workspace.open(tmp_path / "ws")
    seen = analyst_revision(ws)
    ws.put_artifact("verdict", "sample|company", b"{}")  # a page's verdict: not a change
    ws.update_settings({"trade_off_c_auto": True})
    assert analyst_revision(ws) == seen
    other_tab = Workspace.open(tmp_path / "ws")
    save_settings(other_tab, chosen_release="Person @ 2")
    assert analyst_revision(ws) != seen
    seen = analyst_revision(ws)
    other_tab.add_corrections([("add", "Organization", "Acme", None)])
    assert analyst_revision(ws) != seen
