"""AppTests of the Check page (issue 11): the audit of the chosen release on the bundled sample.

Same small settings as tests/test_app_release.py; the expected ε are recomputed here with the
library on the embeddings the page used (pre-swap, and the release with only its changed chunks
re-embedded), not read back from the page.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from neswap_core.measure.audit import RenyiAudit, released_embeddings
from neswap_core.measure.term_ranking import WEIGHT_DECIMALS
from neswap_core.workspace.store import Workspace
from tests.app_workspace import small_workspace
from tests.chat_endpoint import chat_endpoint

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
    from appkit.views_check import changed_chunks

    stage, release = chosen_release(workspace)
    chunks, x = stage.pre_swap()
    groups = [c.doc_id for c in chunks]
    changed = changed_chunks(release)
    assert changed, "the chosen release changes no passage"
    # Changed passages are exactly those of the kept pairs.
    ids = {cid for r in release.accepted_records if r.moved for cid in (r.chunk_a, r.chunk_b)}
    assert {chunks[i].chunk_id for i in changed} <= ids
    before = RenyiAudit().fit(x, groups)  # the core's one audit setting (key/audit.json's)
    after = RenyiAudit().fit(released_embeddings(x, changed, embedder().encode), groups)
    assert metric(at, "Corpus ε before") == pytest.approx(before.epsilon_, abs=0.006)
    assert metric(at, "Corpus ε after") == pytest.approx(after.epsilon_, abs=0.006)
    table = next(d.value for d in at.dataframe if "ε after" in d.value.columns)
    assert len(table) == len(set(groups))
    assert table["ε after"].is_monotonic_decreasing


def test_choosing_another_document_redraws_without_recomputing(workspace, monkeypatch):
    at = run_page("7_check")
    import neswap_core.measure.audit as audit_mod

    def refit(*args, **kwargs):
        raise AssertionError("the audit was recomputed for a new chart")

    monkeypatch.setattr(audit_mod.RenyiAudit, "fit", refit)
    box = at.selectbox(key="check_document")
    box.set_value(box.options[-1]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.get("plotly_chart")


# --- the attacker on the Check page and the frontier -----------------------------------------------------
def trace_values(values) -> np.ndarray:
    """A plotly trace's numbers, whether a list or a typed array ({"dtype", "bdata"})."""
    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
    return np.asarray(values, dtype=float)


def sample_attack(ws: Workspace):
    """The attacker the pages used, rebuilt with the library (the sample has no attacker reading)."""
    from neswap_core.measure.attack import CrossFittedAttacker
    from neswap_core.measure.attack_scores import ReleaseScorer

    stage, release = chosen_release(ws)
    chunks, _ = stage.pre_swap()
    texts, labels, ids = [c.text for c in chunks], [c.protected for c in chunks], [c.doc_id for c in chunks]
    scorer = ReleaseScorer(CrossFittedAttacker().fit(texts, labels, ids), texts, labels, ids)
    return stage, release, scorer


def test_check_page_shows_tables_2_and_3_and_the_to_do_list(workspace):
    from scipy.stats import binomtest

    from appkit.views_check import changed_chunks

    at = run_page("7_check")
    _, release, scorer = sample_attack(workspace)
    after = scorer.score(changed_chunks(release))
    before = scorer.pre_release()
    assert any("in-corpus attacker" in m.value and "stronger than an outside reader" in m.value
               for m in at.markdown)
    sentence = next(i.value for i in at.info if "names the company of" in i.value)
    assert f"{100 * before.chunk_top1:.0f} % of passages before" in sentence
    assert f"and {100 * after.chunk_top1:.0f} % after" in sentence
    table2 = next(d.value for d in at.dataframe if "before the release" in d.value.columns)
    assert len(table2) == 5 and table2["chance"].iloc[0] == f"{100 / 10:.0f} %"
    table3 = next(d.value for d in at.dataframe if "after: named" in d.value.columns)
    assert int(table3.to_numpy().sum()) == after.n_changed
    b, c = int(table3.iloc[0, 1]), int(table3.iloc[1, 0])
    p = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue  # exact McNemar from the 2×2
    assert metric(at, "McNemar p") == pytest.approx(p, rel=1e-2)
    assert next(m.value for m in at.metric if m.label == "Documents named") == \
        f"{after.documents_named} of {after.n_documents}"
    if after.documents_named:
        todo = next(d.value for d in at.dataframe if "changed by the release" in d.value.columns)
        assert set(todo["document"]) == set(after.named_documents)
        box = at.selectbox(key="check_todo_document")
        box.set_value(box.options[-1]).run()
        assert not at.exception, [e.value for e in at.exception]
        passages = next(d.value for d in at.dataframe if "probability of the true company" in d.value.columns)
        assert passages["probability of the true company"].is_monotonic_decreasing
        words = next(d.value for d in at.dataframe if "word or phrase" in d.value.columns)
        assert len(words) > 0 and words["weight"].round(WEIGHT_DECIMALS).is_monotonic_decreasing


def test_frontier_offers_the_measured_accuracies_as_risk_axes(workspace):
    at = run_page("5_frontier")
    radio = at.radio(key="frontier_risk")
    assert list(radio.options) == ["DR", "chunk accuracy", "document accuracy"]
    sentence = next(m.value for m in at.markdown if "names the company of" in m.value)
    assert sentence.startswith("The in-corpus attacker (stronger than an outside reader)")
    radio.set_value("chunk_accuracy").run()
    assert not at.exception, [e.value for e in at.exception]
    chart = at.get("plotly_chart")[0].proto.spec
    assert "measured chunk accuracy" in chart
    # The chart's points are the library's measured accuracies of every release (over draws).
    from neswap_core.choose.attack_columns import draws_columns

    stage, _, scorer = sample_attack(workspace)
    table = stage.table(float(stage.settings["population"]))
    expected = draws_columns(stage.sweep(), {"in-corpus": scorer}).loc[
        table.index, "chunk_accuracy_mean.in-corpus"]
    shown = np.concatenate([trace_values(t["y"]) for t in json.loads(chart)["data"]
                            if t.get("mode") == "markers" and t["name"] in set(table["combination"])])
    np.testing.assert_allclose(np.sort(shown), np.sort(expected.to_numpy(float)), rtol=1e-9)
    radio = at.radio(key="frontier_risk")
    radio.set_value("document_accuracy").run()
    assert "measured document accuracy" in at.get("plotly_chart")[0].proto.spec


def test_an_uploaded_attacker_reading_replaces_the_in_corpus_attacker(workspace):
    """Issue 11: an uploaded corpus may bring an attacker reading (other texts of the same
    companies); the Check page then measures with the outside reader trained on it."""
    import pandas as pd

    from appkit import views_check as vc
    from appkit.pipeline import Stage, pack_uploads
    from appkit.state import settings
    from neswap_core.choose.scorers import build_scorers
    from neswap_core.measure.reading import reading_attacker
    from neswap_core.text.loading import load_uploaded, with_corpus_side_files

    sample = ROOT / "data" / "sample"
    corpus_files = [(p.name, p.read_bytes()) for p in sorted((sample / "docs").glob("*.txt"))]
    corpus_files += [(n, (sample / n).read_bytes()) for n in ("manifest.csv", "aliases.csv")]
    key, payload = pack_uploads(corpus_files)
    workspace.put_artifact("upload", key, payload)
    workspace.update_settings({"corpus_source": key})
    # the reading: the second half of each call, under other ids (another "quarter")
    manifest = pd.read_csv(sample / "manifest.csv", keep_default_na=False)
    reading_files = []
    for row in manifest.itertuples():
        lines = (sample / "docs" / f"{row.doc_id}.txt").read_text().splitlines()
        reading_files.append((f"{row.doc_id}_other.txt", "\n".join(lines[len(lines) // 2:]).encode()))
    reading_manifest = manifest.assign(doc_id=manifest["doc_id"] + "_other")
    reading_files.append(("manifest.csv", reading_manifest.to_csv(index=False).encode()))

    stage = Stage(settings(workspace), workspace)
    assert vc.store_reading(stage, reading_files) == len(manifest)
    at = run_page("7_check")
    assert any("outside reader" in m.value for m in at.markdown)
    chunks, _ = stage.pre_swap()
    # the corpus's aliases apply to a reading without its own, as to the CLI's attacker/ folder
    reading = load_uploaded(list(with_corpus_side_files(dict(reading_files), dict(corpus_files)).items()),
                            protect=stage.protect)
    scorer = build_scorers(chunks, reading_attacker(reading, chunks, stage.corpus()),
                           in_corpus=False)["reading"]
    sentence = next(i.value for i in at.info if "names the company of" in i.value)
    assert f"{100 * scorer.pre_release().chunk_top1:.0f} % of passages before" in sentence
    vc.forget_reading(stage)
    assert vc.uploaded_reading(stage) is None
    at = run_page("7_check")
    assert any("in-corpus attacker" in m.value for m in at.markdown)


@pytest.fixture
def always_aph():
    """An OpenAI-compatible endpoint on 127.0.0.1 that answers "APH" to every passage."""
    with chat_endpoint(lambda text: "APH") as srv:
        yield srv


def test_llm_attacker_runs_only_when_confirmed_and_counts_right(workspace, always_aph, tmp_path,
                                                               monkeypatch):
    """The Check page's LLM switch (was CLI-only): nothing is sent until the analyst confirms;
    then the changed passages (before and after) and the documents are sent once, and the
    figures are those of an endpoint that always answers APH; asking again sends nothing."""
    import appkit.pipeline as pipeline_mod
    from appkit.views_check import changed_chunks

    monkeypatch.setattr(pipeline_mod, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr("appkit.views_llm.CACHE_DIR", tmp_path / "cache")
    host, port = always_aph.server_address
    at = run_page("7_check")
    at.text_input(key="ck_llm_url").set_value(f"http://{host}:{port}/v1")
    at.text_input(key="ck_llm_model").set_value("fake-1").run()
    assert at.button(key="ck_llm_run").disabled  # not confirmed yet
    assert not always_aph.requests
    at.checkbox(key="ck_llm_confirm").check().run()
    at.button(key="ck_llm_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]

    stage, release = chosen_release(workspace)
    changed = changed_chunks(release)
    base = release.sweep.ctx.chunks
    n_docs = len(stage.clean().corpus.documents)
    assert len(always_aph.requests) == 2 * len(changed) + n_docs
    amphenol = "Amphenol Corporation"  # APH is one of its aliases (data/sample/aliases.csv)
    aph = [base[p].protected == amphenol for p in sorted(changed)]
    assert 0 < len(changed) < len(base)
    sentence = next(i.value for i in at.info if i.value.startswith("The LLM (fake-1)"))
    assert f"{100 * sum(aph) / len(aph):.0f} % of the {len(changed)} changed passages" in sentence
    docs_aph = sum(stage.clean().corpus.protected_value(d) == amphenol
                   for d in stage.clean().corpus.documents)
    assert next(m.value for m in at.metric if m.label == "Documents named by the LLM") == \
        f"{100 * docs_aph / n_docs:.0f} %"
    at.button(key="ck_llm_run").click().run()  # the cache answers: nothing new is sent
    assert len(always_aph.requests) == 2 * len(changed) + n_docs
    assert "(0 new request(s)" in next(i.value for i in at.info if i.value.startswith("The LLM"))


def restart_server() -> None:
    """Forget everything the server process holds (Streamlit's caches, the pipeline's memos),
    as a restarted server would; the workspace and the disk caches stay."""
    import sys

    import streamlit as st

    from appkit import pipeline

    st.cache_data.clear()
    st.cache_resource.clear()
    pipeline.SWEEPS_READY.clear()
    for name, module in list(sys.modules.items()):
        if name.startswith("appkit"):
            for value in vars(module).values():
                if isinstance(value, pipeline._Memo):
                    value.clear()


def test_a_releases_figures_outlive_browsing_more_than_four_releases(tmp_path, monkeypatch):
    """Issue 21: the app kept the last four values of every kind on disk, so a restarted
    server measured the release in use again, loading every attacker, once the analyst had
    looked at more than four releases. A release's figures (a few kB) are kept like the core's
    (24 of a kind); the corpus-sized values still four."""
    from appkit import pipeline
    from neswap_core.disk_memo import MAX_ENTRIES, MEMO_FOLDER

    monkeypatch.setattr(pipeline, "CACHE_DIR", tmp_path)
    for i in range(6):
        pipeline.kept("release_measures", [f"release {i}"], lambda i=i: {"release": i})
        pipeline.kept("chunks", [f"corpus {i}"], lambda i=i: [i])
    assert all(pipeline.kept_ready("release_measures", [f"release {i}"]) for i in range(6))
    calls: list[int] = []
    assert pipeline.kept("release_measures", ["release 0"], lambda: calls.append(0)) == {"release": 0}
    assert calls == []
    assert len(list((tmp_path / MEMO_FOLDER / "app_chunks").glob("*.pkl"))) == pipeline.BIG_ENTRIES
    assert MAX_ENTRIES > 6 and "release_measures" in pipeline.FIGURE_KINDS


def test_a_restarted_servers_frontier_neither_loads_nor_runs_an_attacker(workspace, monkeypatch):
    """Issue 21: after a restart the Frontier page loaded every attacker and scored the release
    in use again for its verdict and accuracy sentence (2–4 s of a 8–10 s first draw on the dev
    corpus). Those measures are kept on disk by the attackers' and the texts' content, and the
    attackers are loaded only when a figure is not kept: the page draws the same without them."""
    from appkit import views_check, views_export
    from neswap_core.measure.attack_scores import ReleaseScorer

    chosen_release(workspace)
    restart_server()  # an earlier test's measures may be in memory only (the disk keeps 4)
    first = run_page("5_frontier")
    calls: list[str] = []
    restart_server()
    monkeypatch.setattr(ReleaseScorer, "score", lambda *a, **k: calls.append("score"))
    monkeypatch.setattr(views_export, "scorers", lambda *a, **k: calls.append("panel"))
    monkeypatch.setattr(views_check, "_scorer", lambda *a, **k: calls.append("attacker"))
    second = run_page("5_frontier")
    assert calls == []
    texts = [(kind, e.value) for kind in ("markdown", "warning", "success", "error") for e in first.get(kind)]
    assert [(kind, e.value) for kind in ("markdown", "warning", "success", "error")
            for e in second.get(kind)] == texts  # fmt: skip
    assert any("names the company of" in t for _, t in texts)  # the accuracy sentence was drawn


def test_the_page_attacker_is_the_reading_exactly_when_a_reading_is_there(workspace):
    """``has_reading`` decides the attacker's kind without parsing the reading (the restart
    above): it agrees with ``reading_of`` for the sample (no ``attacker/`` folder), an uploaded
    reading and a forgotten one."""
    from appkit import pipeline as ap
    from appkit import views_check as vc
    from appkit.pipeline import Stage
    from appkit.state import settings

    stage = Stage(settings(workspace), workspace)
    seen = []
    for step in ("sample", "upload", "forgotten"):
        if step == "upload":
            vc.store_reading(stage, [(p.relative_to(ap.SAMPLE_DIR).as_posix(), p.read_bytes())
                                     for p in sorted(ap.SAMPLE_DIR.rglob("*"))
                                     if p.name == "manifest.csv" or p.parent.name == "docs"])  # fmt: skip
        elif step == "forgotten":
            vc.forget_reading(stage)
        has = vc.reading_of(stage)[0] is not None
        assert vc.has_reading(stage) == has, step
        assert vc.attack(stage).kind == (vc.READING if has else vc.IN_CORPUS)
        seen.append(has)
    assert seen == [False, True, False]


def test_a_restarted_server_reads_the_uploaded_reading_back_without_parsing_it(workspace, monkeypatch):
    """Issue 21: every restart parsed the analyst's uploaded reading again (0.4 s of the Export
    and Check pages' first draw on the dev corpus, 112 documents). Kept by its content now."""
    import neswap_core.text.loading as loading
    from appkit import pipeline as ap
    from appkit import views_check as vc
    from appkit.pipeline import Stage
    from appkit.state import settings

    stage = Stage(settings(workspace), workspace)
    files = [(p.relative_to(ap.SAMPLE_DIR).as_posix(), p.read_bytes()) for p in sorted(ap.SAMPLE_DIR.rglob("*"))
             if p.name == "manifest.csv" or p.parent.name == "docs"]  # fmt: skip
    vc.store_reading(stage, files)
    first, key = vc.reading_of(stage)
    restart_server()
    monkeypatch.setattr(loading, "load_uploaded", lambda *a, **k: pytest.fail("parsed again"))
    second, same = vc.reading_of(stage)
    assert same == key and [d.doc_id for d in second.documents] == [d.doc_id for d in first.documents]
    assert [d.text for d in second.documents] == [d.text for d in first.documents]


@pytest.mark.parametrize("page", ["7_check", "6_export", "5_frontier", "3_clusters"])
def test_a_restarted_server_draws_the_page_without_measuring_again(workspace, monkeypatch, page):
    """Issue 21 (first draw on a big workspace): the candidates' tables (the Export page's
    measured by every attacker) and the audits are kept on disk, so a restarted server only
    reads them (they were measured again on every restart: minutes on a big corpus)."""
    chosen_release(workspace)  # the mixture fitted and kept, as after a visit to the frontier
    first = run_page(page)
    import appkit.views_prep as views_prep
    import neswap_core.choose.attack_columns as attack_columns
    import neswap_core.choose.candidates as candidates_mod
    import neswap_core.measure.audit as audit_mod
    import neswap_core.models.cluster_description as cluster_description

    def again(*args, **kwargs):
        raise AssertionError("measured again after a restart")

    restart_server()
    monkeypatch.setattr(candidates_mod, "candidate_table", again)
    monkeypatch.setattr(audit_mod.RenyiAudit, "fit", again)
    monkeypatch.setattr(attack_columns, "draws_columns", again)  # the frontier's measured axes
    monkeypatch.setattr(views_prep, "pca_2d", again)  # the clusters' map
    monkeypatch.setattr(cluster_description, "describe_clusters", again)
    import appkit.views_check as views_check  # the release's vectors: only to audit it (0.4 s at 100k)

    monkeypatch.setattr(views_check, "released_embeddings", again)
    import neswap_core.publish.writer as writer  # the Export page's bundle: read back (1.7 s at 100k)

    monkeypatch.setattr(writer, "build_bundle", again)
    second = run_page(page)
    def shown(at: AppTest) -> list[tuple[str, str]]:
        return [(kind, f"{getattr(e, 'label', '')}: {e.value}")
                for kind in ("metric", "markdown", "info", "warning", "success") for e in at.get(kind)]

    assert len(shown(first)) >= 2  # the page drew its figures and sentences
    assert shown(second) == shown(first)
