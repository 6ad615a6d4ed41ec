"""AppTests of the preparation pages (issue 5): Corpus, Entities & roles, Clusters, bad uploads.

Every test runs the real app on the bundled sample corpus with its own workspace; the models
and the embedding cache are shared, so only the first test pays for NER and embeddings.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from neswap_core.config import CATEGORIES, PLACEHOLDER_PATTERN
from neswap_core.workspace.store import Workspace

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "app"
TIMEOUT = 600


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "ws"
    monkeypatch.setenv("NESWAP_WORKSPACE", str(folder))
    return folder


def open_page(page: str | None = None, **settings) -> AppTest:
    """Run the app (optionally storing settings first) and switch to ``page``."""
    if settings:
        from appkit.state import workspace_folder

        Workspace.open(workspace_folder()).update_settings(settings)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def frame_with(at: AppTest, columns: list[str]) -> pd.DataFrame:
    """The first st.dataframe whose columns start with ``columns``."""
    for d in at.dataframe:
        if list(d.value.columns)[: len(columns)] == columns:
            return d.value
    raise AssertionError(f"no table with columns {columns}")


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def texts(elements) -> str:
    """The elements' Markdown bodies as shown (corpus strings are backslash-escaped)."""
    return re.sub(r"\\(.)", r"\1", "\n".join(str(e.value) for e in elements))


# --- 1 · Corpus ---------------------------------------------------------------------------------
def test_corpus_page_threshold_changes_chunk_count(workspace):
    at = open_page()
    docs = frame_with(at, ["document", "company"])
    assert len(docs) == 10
    before = int(metric(at, "Chunks at this threshold").replace(",", ""))
    assert before == docs["chunks"].sum()
    assert (docs["words"] > 0).all() and (docs["sentences"] >= docs["chunks"]).all()

    at.slider(key="threshold").set_value(95).run()
    assert not at.exception
    after = int(metric(at, "Chunks at this threshold").replace(",", ""))
    docs95 = frame_with(at, ["document", "company"])
    # A higher percentile keeps only the larger breaks: fewer chunks, and the table agrees.
    assert after < before and after == docs95["chunks"].sum()
    assert Workspace.open(workspace).get_setting("threshold") == 95.0

    # Identifier counts equal the placeholders visible in the highlighted text.
    counts = frame_with(at, ["document", "[Company Name]"])
    shown = at.selectbox(key="identifier_doc").value
    html = unescape(next(m.value for m in at.markdown if "white-space:pre-wrap" in m.value))
    row = counts.set_index("document").loc[shown]
    assert html.count("[Company Name]") == row["[Company Name]"]
    assert len(re.findall(r"\[Executive \d+\]", html)) == row["[Executive #]"]
    assert re.search(PLACEHOLDER_PATTERN, html)


def test_corpus_page_reload_keeps_threshold(workspace):
    open_page(threshold=60.0)
    at = open_page()
    assert at.slider(key="threshold").value == 60


# --- bad uploads ------------------------------------------------------------------------------
def upload(at: AppTest, *names: str) -> AppTest:
    files = [(n, (FIXTURES / n).read_bytes(), "application/octet-stream") for n in names]
    at.file_uploader(key="uploads").set_value(files)
    at.run()
    button(at, "Use these files").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize(
    ("name", "message"),
    [("empty.txt", "is empty"), ("binary_transcript.txt", "binary file")],
)
def test_unreadable_upload_is_an_error_and_keeps_the_sample(workspace, name, message):
    at = upload(open_page(), name)
    assert message in texts(at.error)
    assert Workspace.open(workspace).get_setting("corpus_source") in (None, "sample")
    assert len(frame_with(at, ["document", "company"])) == 10  # the sample is still shown


def test_upload_with_one_document_warns(workspace):
    at = upload(open_page(), "one_document.csv")
    assert "swapping needs at least 2" in texts(at.warning)
    assert list(frame_with(at, ["document", "company"])["document"]) == ["ACME_q1_2022"]
    # The upload lives in the workspace: a reload shows it again.
    at2 = open_page()
    assert list(frame_with(at2, ["document", "company"])["document"]) == ["ACME_q1_2022"]
    button(at2, "Back to the bundled sample").click()
    at2.run()
    assert len(frame_with(at2, ["document", "company"])) == 10


def test_upload_without_protect_column_asks_for_one(workspace):
    at = upload(open_page(), "no_company_column.csv")
    assert "'company', is not in these files" in texts(at.error)
    at.selectbox(key="protect").set_value("ticker").run()
    assert not at.exception and not at.error
    docs = frame_with(at, ["document", "ticker"])
    assert list(docs["ticker"]) == ["ACME", "BETA"]
    assert Workspace.open(workspace).get_setting("protect") == "ticker"


# --- 2 · Entities & roles -----------------------------------------------------------------------
def swap_line(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Swap-eligible"))


def test_entities_page_roles_change_what_is_shown(workspace):
    at = open_page("pages/2_entities.py")
    assert swap_line(at).endswith("Organization, Person, Product, Location")
    summary = frame_with(at, ["category", "entities"]).set_index("category")
    z = frame_with(at, list(CATEGORIES))
    for cat in CATEGORIES:  # the summary is a view of z
        assert summary.loc[cat, "chunks with ≥ 1"] == (z[cat] != "").sum()

    at.selectbox(key="role_Person").set_value("U").run()
    assert not at.exception
    assert swap_line(at).endswith("Organization, Product, Location")
    assert Workspace.open(workspace).get_setting("roles")["Person"] == "U"

    for cat in ("Organization", "Product", "Location"):
        at.selectbox(key=f"role_{cat}").set_value("F").run()
    assert swap_line(at).endswith("none")
    assert "No category has role S" in texts(at.warning)


def test_entities_page_warns_when_s_categories_are_empty(workspace):
    # Event is detected rarely; after dropping all its values no chunk has an S entity.
    at = open_page("pages/2_entities.py", roles={c: "F" for c in CATEGORIES} | {"Event": "S"})
    z = frame_with(at, list(CATEGORIES))
    ws = Workspace.open(workspace)
    for value in {v for cell in z["Event"] if cell for v in cell.split(" & ")}:
        ws.add_correction("drop", "Event", value)
    at = open_page("pages/2_entities.py")
    assert "no entities in the chosen categories" in texts(at.warning).lower()


def test_correction_persists_and_changes_z(workspace):
    at = open_page("pages/2_entities.py")
    z = frame_with(at, list(CATEGORIES))
    had_atmos = int(z["Person"].str.split(" & ").apply(lambda v: "Atmos" in v).sum())
    assert had_atmos > 0  # the small spaCy model takes "Atmos" (Atmos Energy) for a person

    at.radio(key="corr_action").set_value("drop")
    at.selectbox(key="corr_category").set_value("Person")
    at.text_input(key="corr_text").set_value("Atmos")
    button(at, "Save correction").click()
    at.run()
    assert not at.exception

    fresh = open_page("pages/2_entities.py")  # a reload: same workspace, new session
    z2 = frame_with(fresh, list(CATEGORIES))
    assert not z2["Person"].str.split(" & ").apply(lambda v: "Atmos" in v).any()
    assert (z2.drop(columns="Person") == z.drop(columns="Person")).all().all()
    listed = texts(fresh.markdown)
    assert f"Drop **Atmos** as Person everywhere — changes {had_atmos} passage(s)" in listed

    # An added entity replaces the NER span it overlaps: every chunk that had "GreenLake" as an
    # Organization now has it as a Product, and the list reports that many chunks or more.
    had_org = z2["Organization"].str.split(" & ").apply(lambda v: "GreenLake" in v)
    assert had_org.sum() > 0
    fresh.radio(key="corr_action").set_value("add")
    fresh.selectbox(key="corr_category").set_value("Product")
    fresh.text_input(key="corr_text").set_value("GreenLake")
    button(fresh, "Save correction").click()
    fresh.run()
    z3 = frame_with(fresh, list(CATEGORIES))
    has_product = z3["Product"].str.split(" & ").apply(lambda v: "GreenLake" in v)
    assert has_product[had_org].all()
    assert not z3["Organization"].str.split(" & ").apply(lambda v: "GreenLake" in v).any()
    line = f"Add **GreenLake** as Product everywhere — changes {int(has_product.sum())} passage(s)"
    assert line in texts(fresh.markdown)

    # Removing it restores z.
    rid = Workspace.open(workspace).corrections()[-1]["id"]
    button_key = f"remove_correction_{rid}"
    fresh.button(key=button_key).click()
    fresh.run()
    assert len(Workspace.open(workspace).corrections()) == 1
    assert (frame_with(fresh, list(CATEGORIES)) == z2).all().all()


# --- 3 · Clusters -------------------------------------------------------------------------------
def fit(at: AppTest, **values) -> AppTest:
    for key, value in values.items():
        at.number_input(key=key).set_value(value)
    button(at, "Fit clusters").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_clusters_page_k_changes_the_table(workspace):
    at = open_page("pages/3_clusters.py", n_init=1)
    assert "press **Fit clusters**" in texts(at.info)
    n = None
    for k in (3, 5):
        fit(at, n_components=k)
        table = frame_with(at, ["cluster", "chunks"])
        assert len(table) == k and metric(at, "Clusters kept") == f"{k} of {k}"
        assert abs(table["weight π"].sum() - 1) < 1e-6
        assert ((table["concentration ρ"] >= 0) & (table["concentration ρ"] < 1)).all()
        n = n or table["chunks"].sum()
        assert table["chunks"].sum() == n  # every chunk in exactly one cluster
    # The fit is saved: a reload shows it without fitting again.
    again = open_page("pages/3_clusters.py")
    assert len(frame_with(again, ["cluster", "chunks"])) == 5


def test_clusters_page_k_larger_than_chunks_is_an_error(workspace):
    at = fit(open_page("pages/3_clusters.py", n_init=1), n_components=1000)
    assert re.search(r"K = 1000 clusters but only \d+ chunks", texts(at.error))
    assert Workspace.open(workspace).get_setting("n_components") is None  # not saved


def test_clusters_page_non_convergence_is_a_warning(workspace):
    at = fit(open_page("pages/3_clusters.py", n_init=1), n_components=5, max_iter=10)
    assert metric(at, "Converged") == "no" and int(metric(at, "EM iterations")) <= 10
    assert "did not converge" in texts(at.warning)
