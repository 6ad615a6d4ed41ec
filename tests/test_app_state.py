"""AppTests of issue 13, one per defect observed: corpus strings rendered as Markdown, a
double-clicked *Save correction*, stale labels and pins after an upload, a second tab writing
old values back, silent corrections that match nothing, internal ids in messages, the
unreachable default line, Latin-1 and text-column uploads, and Undo."""

from __future__ import annotations

import re
from pathlib import Path

import markdown_it
import pytest
from streamlit.testing.v1 import AppTest

from neswap_core.workspace.store import Workspace

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "app"
TIMEOUT = 600
SMALL = {"max_swaps": 5, "n_components": 2, "n_init": 1}
PAGES = ["1_corpus", "2_entities", "3_clusters", "4_swaps", "5_frontier", "6_export", "7_check"]
MD = markdown_it.MarkdownIt("commonmark", {"html": True})


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "ws"
    monkeypatch.setenv("NESWAP_WORKSPACE", str(folder))
    return folder


def app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.run()  # through app.py (navigation + sidebar), then to the page
    if page:
        at.switch_page(f"pages/{page}.py")
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def upload(at: AppTest, name: str, click: bool = True) -> AppTest:
    data = (FIXTURES / name).read_bytes()
    at.file_uploader(key="uploads").set_value([(name, data, "text/csv")])
    at.run()
    if click:
        button(at, "Use these files").click()
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def rendered_html(at: AppTest) -> list[str]:
    """Every Markdown body and label on the page, rendered as the browser would."""
    bodies = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "latex"):
        for el in getattr(at, kind):
            bodies.append(MD.render(str(el.value)))
    for kind in ("button", "selectbox", "radio", "text_input", "slider", "checkbox",
                 "number_input", "multiselect", "metric", "expander", "tabs"):
        for el in getattr(at, kind, []):
            label = getattr(el, "label", None)
            if label:
                bodies.append(MD.render(str(label)))
    return bodies


def assert_no_markup_from_corpus(at: AppTest, page: str) -> None:
    for html in rendered_html(at):
        assert "evil.example\"" not in html and "href=\"https://evil" not in html, (page, html)
        assert "<script" not in html and "<b>bold" not in html, (page, html)
        assert "<strong>Enterprise" not in html and "<strong>Guidance" not in html, (page, html)


def test_markdown_and_html_in_the_corpus_stay_text_on_every_page(workspace):
    Workspace.open(workspace).update_settings(SMALL)
    at = upload(app(), "injection.csv")
    assert not at.error, [e.value for e in at.error]
    for page in PAGES:
        at.switch_page(f"pages/{page}.py")
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
        if page == "3_clusters" and any("press **Fit clusters**" in i.value for i in at.info):
            next(b for b in at.button if b.label == "Fit clusters").click()
            at.run()
        assert_no_markup_from_corpus(at, page)
    # The evil company value was shown somewhere, as text.
    at.switch_page("pages/2_entities.py")
    at.run()
    shown = "\n".join(c.value for c in at.caption)
    assert r"\[HPE\]\(https\:\/\/evil\.example\)" in shown


def test_double_clicked_save_correction_is_stored_once_without_error(workspace):
    at = app("2_entities")
    at.text_input(key="corr_text").set_value("SummerSlam")
    at.radio(key="corr_action").set_value("add")
    at.selectbox(key="corr_category").set_value("Event")
    save = next(b for b in at.button if b.label == "Save correction")
    save.click()
    at.run()
    next(b for b in at.button if b.label == "Save correction").click()  # the second click
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    stored = Workspace.open(workspace).corrections()
    assert [(c["action"], c["text"]) for c in stored] == [("add", "SummerSlam")]
    assert any("Already saved" in i.value for i in at.info)


def test_a_correction_that_matches_nothing_is_a_warning_and_not_saved(workspace):
    at = app("2_entities")
    at.text_input(key="corr_text").set_value("Zyxwvut Corp")
    next(b for b in at.button if b.label == "Save correction").click()
    at.run()
    assert any("would change nothing" in w.value for w in at.warning)
    assert Workspace.open(workspace).corrections() == []


def test_messages_name_documents_and_passages_not_internal_ids(workspace):
    at = app("2_entities")
    at.text_input(key="corr_text").set_value("SummerSlam")
    at.radio(key="corr_scope").set_value("this passage")
    next(b for b in at.button if b.label == "Save correction").click()
    at.run()
    everything = "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "success",
                                                     "warning", "error")
                           for e in getattr(at, kind))
    assert not re.search(r"[A-Z]+_q\d_\d{4}#\d{4}", everything)
    assert re.search(r"document \d+, passage \d+", everything)


def test_entity_review_changes_a_category_everywhere_and_undo_restores_it(workspace):
    at = app("2_entities")
    options = at.selectbox(key="entity_pick").options
    pick = next(o for o in options if o.endswith("(Organization)"))
    at.selectbox(key="entity_pick").set_value(pick).run()
    at.selectbox(key="entity_new_category").set_value("Product").run()
    button(at, "Change everywhere").click()
    at.run()
    assert not at.exception
    text = pick.rsplit(" (", 1)[0]
    stored = {(c["action"], c["category"], c["text"]) for c in Workspace.open(workspace).corrections()}
    assert stored == {("drop", "Organization", text), ("add", "Product", text)}
    assert f"{text} (Product)" in at.selectbox(key="entity_pick").options
    # (AppTest runs a switched-to page without app.py's sidebar: undo from the first page.)
    home = app()
    undo = next(b for b in home.sidebar.button if b.label.startswith("Undo"))
    assert "Organization" in undo.label and "Product" in undo.label
    undo.click()
    home.run()
    assert Workspace.open(workspace).corrections() == []
    assert not any(b.label.startswith("Undo:") for b in home.sidebar.button)


def test_upload_updates_the_protect_label_and_unpins_the_release(workspace):
    from appkit.state import save_settings

    ws = Workspace.open(workspace)
    save_settings(ws, chosen_release="Organization + Person @ 3")
    at = app()
    before = at.selectbox(key="protect").options
    assert any("company (10 distinct values)" == o for o in before)
    at = upload(at, "one_document.csv")
    assert "company (1 distinct value)" in at.selectbox(key="protect").options
    assert "1 documents" in at.selectbox(key="protect").label
    from appkit.state import settings

    assert settings(Workspace.open(workspace))["chosen_release"] is None


def test_a_second_tab_picks_up_changes_instead_of_writing_old_values_back(workspace):
    tab_a, tab_b = app(), app()
    tab_a.slider(key="threshold").set_value(90).run()
    assert Workspace.open(workspace).get_setting("threshold") == 90.0
    tab_b.run()  # the second tab's next rerun
    assert tab_b.slider(key="threshold").value == 90
    assert Workspace.open(workspace).get_setting("threshold") == 90.0


def test_latin1_table_without_text_column_can_be_converted_and_loaded(workspace):
    at = upload(app(), "latin1_no_text_column.csv", click=False)
    assert any("not UTF-8" in w.value for w in at.warning)
    at.checkbox(key="convert_latin1").check().run()
    chooser = at.selectbox(key="text_column::latin1_no_text_column.csv")
    chooser.set_value("transcript").run()
    button(at, "Use these files").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    docs = next(d.value for d in at.dataframe if "document" in d.value.columns)
    assert list(docs["company"]) == ["Café Société", "Délices SA"]


def test_default_line_is_reached_and_the_sidebar_shows_the_release(workspace):
    Workspace.open(workspace).update_settings({"max_swaps": 10, "n_components": 5, "n_init": 1,
                                               "max_document_accuracy": 1.0})  # no goal set
    at = app("5_frontier")
    assert any(s.value.startswith("**Your line picks:**") for s in at.success)
    assert not any("Line not reached" in w.value for w in at.warning)
    home = app()  # the sidebar (app.py) on the first page; the releases are built now
    summary = "\n".join(m.value for m in home.sidebar.markdown)
    assert "Release: **" in summary and "Model risk DR" in summary and "Protection" not in summary
    assert "No goal set" in summary  # the frontier measured the release in use: its verdict
    assert any(b.label.startswith("Next:") for b in home.sidebar.button)


def test_clusters_are_described_by_words_and_a_typical_passage(workspace):
    Workspace.open(workspace).update_settings({"n_components": 5, "n_init": 1})
    at = app("3_clusters")
    next(b for b in at.button if b.label == "Fit clusters").click()
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "characteristic words" in d.value.columns)
    assert (table["characteristic words"].str.len() > 0).all()
    assert any("Typical passage" in m.value for m in at.markdown)


def test_the_slope_slider_cannot_send_the_offset_below_zero(workspace):
    Workspace.open(workspace).update_settings({"max_swaps": 10, "n_components": 5, "n_init": 1})
    at = app("5_frontier")
    for _ in range(4):  # four presses at the far right, as in the issue
        slope = at.slider(key="frontier_a")
        slope.set_value(slope.max).run()
        assert not at.exception
        assert Workspace.open(workspace).get_setting("trade_off_c") >= 0.0
    assert at.slider(key="frontier_a").max <= 100.0
