"""AppTest of the Export page's adaptive attacker (issue 22): for a document-defence release with
an attacker reading, one click measures it; the sentence and table are key/adaptive.json's,
recomputed with the library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.app_workspace import small_workspace
from tests.test_app_check_panel import ROOT, run_page, upload_sample_with_reading

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


RESTARTED_DRAW = """
import builtins, json, sys, traceback
from streamlit.testing.v1 import AppTest
first = {}  # the app's frames that first imported each watched package (the failure says)
real_import = builtins.__import__
def watch(name, globals=None, locals=None, fromlist=(), level=0):
    for pkg in ("sklearn", "scipy.optimize"):
        if level == 0 and (name == pkg or name.startswith(pkg + ".")) and pkg not in first and pkg not in sys.modules:
            first[pkg] = [f"{f.filename}:{f.lineno}" for f in traceback.extract_stack()[:-1]
                          if "appkit" in f.filename or "neswap_core" in f.filename][-8:]
    return real_import(name, globals, locals, fromlist, level)
builtins.__import__ = watch
problems = {}
for page in sys.argv[2:]:
    at = AppTest.from_file(sys.argv[1], default_timeout=900)
    at.switch_page(f"pages/{page}.py")
    at.run()
    problems[page] = [str(e.value) for e in at.exception] + [str(e.value) for e in at.error]
    problems[page + " adaptive"] = [b.label for b in at.button if b.key == "ex_adaptive_run"]
print(json.dumps({"problems": problems, "sklearn": "sklearn" in sys.modules,
                  "scipy.optimize": "scipy.optimize" in sys.modules, "imported by": first}))
"""


def test_a_restarted_server_draws_the_release_pages_without_scikit_learn(workspace, tmp_path):
    """Issue 21: after a restart the Frontier, Export and Check pages imported scikit-learn
    (1.5 s of each first draw, half the 3 s target on the dev corpus) for figures all kept on
    disk: the release runner and the attackers' module at import, the mixture pickled for a
    memo key, the attackers loaded to list their names and to read the reading's units for the
    adaptive check. A server process draws the three pages; a fresh one (the server restarted)
    on the same workspace and disk caches draws them the same, the adaptive check offered, and
    never imports scikit-learn or SciPy's optimizers."""
    from appkit.state import save_settings

    upload_sample_with_reading(workspace)
    save_settings(workspace, chosen_release="document 10 %")
    # both servers keep their memos in a folder of their own (the models' caches are shared):
    # other test files' runs keep at most four values of a kind in the shared one and could
    # push these out between the two servers
    shared = Path(os.environ["NESWAP_CACHE_DIR"])
    cache = tmp_path / "cache"
    (cache / "memo").mkdir(parents=True)
    for entry in shared.iterdir():
        if entry.name != "memo":
            (cache / entry.name).symlink_to(entry.resolve())
    env = {**os.environ, "NESWAP_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}
    pages = ["5_frontier", "6_export", "7_check"]
    reports = []
    for _ in ("server", "restarted server"):
        done = subprocess.run([sys.executable, "-c", RESTARTED_DRAW, str(ROOT / "app.py"), *pages],
                              capture_output=True, text=True, cwd=ROOT, env=env, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]
        reports.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, restarted = reports
    assert restarted["problems"] == first["problems"], reports
    assert all(v == [] for k, v in first["problems"].items() if not k.endswith("adaptive")), first
    assert first["problems"]["6_export adaptive"], first  # the adaptive check is offered
    assert restarted["sklearn"] is False and restarted["scipy.optimize"] is False, restarted
