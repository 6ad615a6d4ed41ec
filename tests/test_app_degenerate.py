"""Degenerate corpora in every dashboard page (issue 10): a sentence, never a traceback.

Three corpora that cannot give a release (tests/fixtures/degenerate): six near-identical
documents, a single document, and calls without a named entity. Each is stored in a fresh
workspace as an upload, then every page is run; each page must show at least one warning or
error that says what is wrong, and no exception.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from neswap_core.workspace.store import Workspace

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "degenerate"
PAGES = ["1_corpus", "2_entities", "3_clusters", "4_swaps", "5_frontier", "6_export", "7_check"]
#: corpus -> (settings, words the messages must contain on pages 2-7 and on page 1)
CASES = {
    "near_duplicates": ({"n_components": 3}, "distinct", "distinct"),
    "one_document": ({}, "at least 2", "at least 2"),
    "no_entities": ({"n_components": 2}, "nothing to swap", None),
}


@pytest.fixture(params=sorted(CASES))
def degenerate(request, tmp_path, monkeypatch):
    from appkit.pipeline import pack_uploads

    name = request.param
    folder = tmp_path / "ws"
    monkeypatch.setenv("NESWAP_WORKSPACE", str(folder))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    key, payload = pack_uploads([(f"{name}.csv", (FIXTURES / f"{name}.csv").read_bytes())])
    ws = Workspace.open(folder)
    ws.put_artifact("upload", key, payload)
    settings, *_ = CASES[name]
    ws.update_settings({"corpus_source": key, "n_init": 1, **settings})
    return name


def test_every_page_says_what_is_wrong(degenerate):
    _, words, first_page_words = CASES[degenerate]
    for page in PAGES:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.switch_page(f"pages/{page}.py")
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
        said = " ".join(str(m.value) for m in [*at.error, *at.warning])
        expected = first_page_words if page == "1_corpus" else words
        if expected is not None:
            assert expected in said, (page, said)
        assert "Traceback" not in said
