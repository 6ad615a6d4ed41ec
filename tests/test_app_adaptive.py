"""AppTest of the Export page's adaptive attacker (issue 22): for a document-defence release with
an attacker reading, one click measures it; the sentence and table are key/adaptive.json's,
recomputed with the library."""

from __future__ import annotations

import pytest

from tests.app_workspace import small_workspace
from tests.test_app_check_panel import run_page, upload_sample_with_reading

pytestmark = pytest.mark.slow


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    return small_workspace(tmp_path, monkeypatch, document_levels=[0.1])


def test_export_measures_the_adaptive_attacker_on_a_click(workspace):
    from appkit import choice_view as cv
    from appkit import views_export as ve
    from appkit.state import save_settings
    from neswap_core.publish.adaptive_attack import release_adaptive
    from tests.test_app_release import stage_for

    upload_sample_with_reading(workspace)
    save_settings(workspace, chosen_release="document 10 %")  # pinned, as on the Frontier page
    at = run_page("6_export")
    stage = stage_for(workspace)
    export = ve.export_for(stage, cv.app_choice(stage, measure=True))
    assert export.release_id == "document 10 %"
    assert not any("Against an attacker who also runs" in w.value for w in at.warning)  # not yet
    at.button(key="ex_adaptive_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = next(w.value for w in at.warning if "Against an attacker who also runs" in w.value)
    expected = release_adaptive(export.result)
    assert shown == expected["sentence"]
    table = next(d.value for d in at.dataframe
                 if hasattr(d.value, "columns") and "documents named" in d.value.columns)
    assert len(table) == len(expected["families"]) == 3
    worst = expected["worst"]["document"]
    fam = expected["families"][worst["attacker"]]
    row = table[table["attacker"].str.endswith("(worst)")]
    assert f"{fam['documents_named']} of {fam['n_documents']}" in set(row["documents named"])
    for field in ("chunk_accuracy", "document_accuracy", "documents_named"):
        assert field not in " ".join(table.columns) + shown
    # the next run of the page keeps showing it for the same release
    at.run()
    assert any(w.value == shown for w in at.warning)
