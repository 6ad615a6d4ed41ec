"""The app on a big corpus (issue 14 item 5): lists paginate, one copy of the embeddings."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from appkit import pipeline as ap
from appkit.widgets import page_bounds
from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.models.embedding import Embedder
from neswap_core.models.mixture import SphericalMixture


class HashModel:
    def encode(self, texts):
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), np.uint8)[:8] - 127.5
                for t in texts]
        return np.array(rows, dtype=np.float32)


def test_page_bounds_cover_every_item_once_and_clamp():
    n, size = 2_345, 1_000
    first_last = [page_bounds(n, p, size)[:2] for p in (1, 2, 3)]
    assert first_last == [(0, 1000), (1000, 2000), (2000, 2345)]
    assert page_bounds(n, 1, size)[2] == 3
    assert page_bounds(n, 99, size)[:2] == (2000, 2345)  # the list shrank: last page
    assert page_bounds(n, 0, size)[:2] == (0, 1000)
    assert page_bounds(0, 1, size) == (0, 0, 1)


def _paged_app():
    import pandas as pd
    import streamlit as st

    from appkit.widgets import paginate

    rows = paginate(pd.DataFrame({"chunk": range(2_500)}), "rows_page", 1_000, "rows")
    st.write(f"first={rows['chunk'].iloc[0]} n={len(rows)}")
    few = paginate(list(range(4)), "few_page", 1_000, "chunks")
    st.write(f"few={len(few)}")


def test_paginate_sends_one_page_and_moves_with_the_page_number(monkeypatch):
    # Streamlit's script runner replaces sys.modules["__main__"] by the (temporary) script and
    # leaves it there; a later multiprocessing "spawn" pool would then fail to start workers.
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    at = AppTest.from_function(_paged_app).run()
    assert not at.exception
    assert "first=0 n=1000" in [m.value for m in at.markdown]
    assert "rows 1–1,000 of 2,500" in [c.value for c in at.caption]
    assert len(at.number_input) == 1  # one page of four chunks needs no page number
    at.number_input(key="rows_page").set_value(3).run()
    assert "first=2000 n=500" in [m.value for m in at.markdown]
    assert "rows 2,001–2,500 of 2,500" in [c.value for c in at.caption]
    assert "few=4" in [m.value for m in at.markdown]


@pytest.fixture
def hash_embedder(monkeypatch):
    emb = Embedder("hash", None, model=HashModel())
    monkeypatch.setattr(ap, "embedder", lambda backend="auto": emb)
    ap._EMBEDDINGS.clear()
    ap._PRE_SWAP.clear()
    yield emb
    ap._EMBEDDINGS.clear()
    ap._PRE_SWAP.clear()


def _chunks() -> list[Chunk]:
    return [
        Chunk(f"d{i}#0000", f"d{i}", 0, f"Acme sold widgets in Ohio, report {i}.", f"c{i}",
              (EntitySpan(0, 4, "ORG", "Organization", "Acme"),
               EntitySpan(21, 25, "GPE", "Location", "Ohio")))
        for i in range(6)
    ]


def test_every_call_gets_the_same_read_only_embeddings(hash_embedder):
    """st.cache_data handed each call a fresh copy (and kept a pickled one): now one array."""
    chunks = _chunks()
    x = ap.chunk_embeddings("k", "onnx", chunks)
    again = ap.chunk_embeddings("k", "onnx", chunks)
    assert again is x
    assert not x.flags.writeable
    with pytest.raises(ValueError):
        x[0, 0] = 1.0
    np.testing.assert_array_equal(x, hash_embedder.encode([c.text for c in chunks]))


def test_pre_swap_vectors_are_the_same_array_when_roles_change_no_text(hash_embedder):
    chunks = _chunks()
    x = ap.chunk_embeddings("k", "onnx", chunks)
    keep = {"Organization": "S", "Location": "F"}
    pre_chunks, pre_x = ap.role_inputs("r1", "onnx", chunks, x, keep)
    assert pre_x is x
    assert ap.role_inputs("r1", "onnx", chunks, x, keep)[1] is pre_x
    # a C role rewrites text: one new read-only array, the same one on the next call
    _, changed = ap.role_inputs("r2", "onnx", chunks, x, {"Organization": "S", "Location": "C"})
    assert changed is not x and not changed.flags.writeable
    assert ap.role_inputs("r2", "onnx", chunks, x, {"Organization": "S", "Location": "C"})[1] is changed
    assert [c.text for c in pre_chunks] == [c.text for c in chunks]


def test_a_restarted_server_reads_the_pre_swap_chunks_digests_back(hash_embedder, monkeypatch, tmp_path):
    """Issue 21: each page's first draw after a restart hashed every pre-swap passage and its
    entities for the core's run and build keys (0.5 s at 100k). They are kept with the chunks'
    changes and read back: the same digests, none made."""
    from neswap_core.choose import memo_keys

    monkeypatch.setattr(ap, "CACHE_DIR", tmp_path)
    roles = {"Organization": "S", "Location": "C"}
    chunks = _chunks()
    pre, _ = ap.role_inputs("r3", "onnx", chunks, ap.chunk_embeddings("k3", "onnx", chunks), roles)
    made = memo_keys.chunk_field_digests(pre)
    ap._PRE_SWAP.clear()  # a restart: nothing in memory, other chunk objects read back
    ap._EMBEDDINGS.clear()
    memo_keys._FIELD_DIGESTS.clear()
    calls = []
    real = memo_keys.texts_digest
    monkeypatch.setattr(memo_keys, "texts_digest", lambda parts: calls.append(1) or real(parts))
    chunks = _chunks()
    again, _ = ap.role_inputs("r3", "onnx", chunks, ap.chunk_embeddings("k3", "onnx", chunks), roles)
    assert again is not pre and memo_keys.chunk_field_digests(again) == made and calls == []
    assert memo_keys.chunk_field_digests(list(again)) == made and calls == []  # the sweep's copy


def test_the_app_embeds_with_the_runs_backend_and_keys_its_data_by_it():
    """The app used the default backend whatever the run's ``embedding_backend`` said, and its
    caches did not know the backend: on a CPU with bfloat16 in hardware ("auto" = bf16) a run
    set to ONNX got bf16 chunks, cut at other sentence breakpoints than the CLI's."""
    from appkit.state import DEFAULT_SETTINGS

    stages = {b: ap.Stage({**DEFAULT_SETTINGS, "embedding_backend": b, "corpus_source": "sample"}, None)
              for b in ("onnx", "torch")}
    assert stages["onnx"].backend == "onnx" and stages["torch"].backend == "torch"
    assert stages["onnx"].chunks_key != stages["torch"].chunks_key
    assert ap.embedder("onnx").backend == "onnx"
    assert ap.embedder("torch") is not ap.embedder("onnx")


def test_chunks_are_cut_from_the_distances_of_the_stages_own_backend(monkeypatch, tmp_path):
    """The tagged chunks were cached by corpus, threshold and label map only: a stage on another
    backend (or buffer) got the chunks cut from the first stage's sentence distances (after an
    app session on bf16, an ONNX run exported bf16 breakpoints)."""
    import spacy

    from appkit.state import DEFAULT_SETTINGS
    from neswap_core.prepare.pipeline import chunks_at

    class Salted(HashModel):
        def __init__(self, salt: str) -> None:
            self.salt = salt

        def encode(self, texts):
            return super().encode([self.salt + t for t in texts])

    models = {b: Embedder(f"hash-{b}", None, model=Salted(b)) for b in ("onnx", "torch")}
    monkeypatch.setattr(ap, "embedder", lambda backend="auto": models[backend])
    blank = spacy.blank("en")  # no entities: the test is about the cut, not the tags
    monkeypatch.setattr(ap, "ner_model", lambda: blank)
    monkeypatch.setattr(ap, "CACHE_DIR", tmp_path)
    ap.distances.clear()
    ap.tagged_chunks.clear()
    try:
        texts = {}
        for backend in ("onnx", "torch"):
            stage = ap.Stage({**DEFAULT_SETTINGS, "embedding_backend": backend,
                              "corpus_source": "sample"}, None)
            own = chunks_at(stage.clean().corpus, stage.chunked(), float(stage.settings["threshold"]))
            texts[backend] = [c.text for c in stage.raw_chunks()]
            assert texts[backend] == [c.text for c in own], backend
        assert texts["onnx"] != texts["torch"]  # the two backends' distances cut differently
    finally:  # nothing computed with the stand-in models stays in this process's caches
        for cached in (ap.clean, ap.distances, ap.tagged_chunks):
            cached.clear()


def test_the_corpus_and_its_chunks_are_one_object_per_server_process(tmp_path, monkeypatch):
    """Issue 21: ``st.cache_data`` unpickled a fresh copy on every hit (the chunks of 10,000
    passages: 0.4–1 s a call, several calls per page run); now every call, page and session
    gets the same objects."""
    from appkit.state import settings
    from tests.app_workspace import small_workspace

    ws = small_workspace(tmp_path, monkeypatch)
    stage, again = ap.Stage(settings(ws), ws), ap.Stage(settings(ws), ws)
    for step in ("corpus", "clean", "chunked", "raw_chunks", "chunks"):
        assert getattr(stage, step)() is getattr(again, step)(), step
    assert [c.chunk_id for c in stage.chunks()] == [c.chunk_id for c in stage.raw_chunks()]


def test_a_restarted_server_reads_the_corpus_and_its_chunks_back_from_disk(tmp_path, monkeypatch):
    """Issue 21: after a restart every page's first draw parsed the upload, looked up every
    sentence group and passage in the caches and tagged every passage again (about 4 s at 10k
    chunks, ten times that at 100k); now it reads those steps' results back (``kept``)."""
    import neswap_core.text.loading as loading
    from appkit.state import settings
    from tests.app_workspace import small_workspace
    from tests.test_app_check import restart_server

    ws = small_workspace(tmp_path, monkeypatch)
    files = [(p.relative_to(ap.SAMPLE_DIR).as_posix(), p.read_bytes())
             for p in sorted(ap.SAMPLE_DIR.rglob("*")) if p.suffix == ".csv" or p.parent.name == "docs"]
    key, payload = ap.pack_uploads(files)
    ws.put_artifact("upload", key, payload)
    ws.update_settings({"corpus_source": key, "roles": {"Date": "C"}})  # C: re-embedded text
    steps = ("corpus", "chunked", "raw_chunks", "embeddings", "pre_swap")
    first = {step: getattr(ap.Stage(settings(ws), ws), step)() for step in steps}

    def again(*args, **kwargs):
        raise AssertionError("computed again after a restart")

    restart_server()
    monkeypatch.setattr(loading, "load_uploaded", again)
    import neswap_core.generate.context as context

    for name in ("sentence_distances", "chunks_at", "tag_entities", "embed_chunks"):
        monkeypatch.setattr(ap, name, again)
    monkeypatch.setattr(context, "release_inputs", again)  # imported where it is used
    stage = ap.Stage(settings(ws), ws)
    assert stage.corpus() == first["corpus"]
    assert [c.text for c in stage.raw_chunks()] == [c.text for c in first["raw_chunks"]]
    assert stage.raw_chunks() == first["raw_chunks"]  # entities too
    np.testing.assert_array_equal(stage.embeddings(), first["embeddings"])
    pre_chunks, pre_x = stage.pre_swap()
    assert pre_chunks == first["pre_swap"][0]
    np.testing.assert_array_equal(pre_x, first["pre_swap"][1])
    assert not pre_x.flags.writeable
    assert pre_x is not stage.embeddings()  # the Date role rewrote some passages


def test_a_restarted_server_reads_the_sweep_and_the_checks_back_and_keeps_only_changed_rows(
        tmp_path, monkeypatch):
    """Issue 21: after a restart each page's first draw made the paper's sweep again (about 5 s
    at 100k passages), cut every document's passages again for the corpus checks (2.6 s) and
    read back every pre-swap chunk and the whole vector array though the roles change a few
    (230 MB at 100k). Now the sweep and the checks are kept, the pre-swap data as its changes."""
    import pickle

    import appkit.corpus_checks as checks
    from appkit.state import settings
    from neswap_core.disk_memo import MEMO_FOLDER
    from tests.app_workspace import small_workspace
    from tests.test_app_check import restart_server

    ws = small_workspace(tmp_path, monkeypatch)
    ws.update_settings({"roles": {**settings(ws)["roles"], "Date": "C"}})  # C: a few passages rewritten
    stage = ap.Stage(settings(ws), ws)
    problems = checks.corpus_problems(stage)
    sweep = stage.sweep()
    table = stage.table()
    pre_chunks, pre_x = stage.pre_swap()
    from neswap_core.disk_memo import content_key

    key = content_key("app", "pre_swap_rows", [stage.roles_key, ap.chunks_digest(stage.chunks())],
                      ap._models(stage.backend))  # this stage's entry (the cache is shared by test workers)
    changes = pickle.loads((ap.CACHE_DIR / MEMO_FOLDER / "app_pre_swap_rows" / f"{key}.pkl").read_bytes())
    changed = [i for i, (a, b) in enumerate(zip(stage.chunks(), pre_chunks, strict=True)) if a != b]
    assert 0 < len(changed) < len(pre_chunks)
    assert changes.positions.tolist() == changed and len(changes.chunks) == len(changed)
    assert len(changes.rows) == len(changes.row_positions) <= len(changed)

    def again(*args, **kwargs):
        raise AssertionError("computed again after a restart")

    restart_server()
    monkeypatch.setattr(ap, "sweep_for_config", again)
    import neswap_core.generate.context as context

    monkeypatch.setattr(context, "release_inputs", again)
    monkeypatch.setattr(checks, "_problems", again)
    monkeypatch.setattr(ap, "ReleaseContext", again)  # neither z nor the baseline made again
    import neswap_core.measure.risk as risk

    monkeypatch.setattr(risk, "fit_risk", again)  # nor the risk profiles (the table at N)
    monkeypatch.setattr(ap.RoleChanges, "vectors_applied_to", again)  # read back whole, mapped
    monkeypatch.setattr(ap, "_content_digest", again)  # no passage hashed: the digests are kept or known
    restarted = ap.Stage(settings(ws), ws)
    assert checks.corpus_problems(restarted) == problems
    back_chunks, back_x = restarted.pre_swap()
    assert back_chunks == pre_chunks and not back_x.flags.writeable
    np.testing.assert_array_equal(back_x, pre_x)
    import mmap

    base = back_x
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)  # the page cache's, no copy
    assert ap.chunks_digest(back_chunks) == ap.chunks_digest(back_chunks)  # known, not hashed
    back = restarted.sweep()
    assert back.combinations == sweep.combinations
    for a, b in zip(back.draws, sweep.draws, strict=True):
        assert (a.combination, a.seed, a.run.records) == (b.combination, b.seed, b.run.records)
        np.testing.assert_array_equal(a.deltas, b.deltas)
        np.testing.assert_array_equal(a.hits, b.hits)
    np.testing.assert_array_equal(back.ctx.labels, sweep.ctx.labels)
    assert back.ctx.z.equals(sweep.ctx.z) and back.ctx.position == sweep.ctx.position
    assert ap.chunks_digest(back.ctx.chunks) == ap.chunks_digest(pre_chunks)  # the sweep's own list: known
    import pandas as pd

    pd.testing.assert_frame_equal(restarted.table(), table)


def test_a_restarted_server_reads_the_cluster_map_back_and_a_stage_builds_its_config_once(
        tmp_path, monkeypatch):
    """Issue 21: after a restart the Clusters page predicted every passage's cluster (0.9 s at
    100k) and escaped every passage for its map (1.9 s) again, the Entities page made its
    tables again (2.6 s), the Corpus page its document table (1.4 s), every page read the sentence distances back to reach the chunks
    (0.6 s), and every key and step of a page
    run rebuilt and validated the run config (0.7 s a run)."""
    import appkit.state as state
    import appkit.views_prep as vp
    from appkit.state import settings
    from tests.app_workspace import small_workspace
    from tests.test_app_check import restart_server

    ws = small_workspace(tmp_path, monkeypatch)
    stage = ap.Stage(settings(ws), ws)
    _, x = stage.pre_swap()
    mixture = stage.mixture()
    labels, proba = vp.memberships(stage.mixture_key, mixture, x)
    points = vp.cached_map(stage.mixture_key, stage.chunks(), x, labels)
    import appkit.views_entities as ve

    numbers = {d.doc_id: i for i, d in enumerate(stage.corpus().documents)}
    tables = ve.entity_tables("e", stage.chunks(), numbers)
    overview = vp.document_overview("o", 75.0, stage.corpus(), stage.clean(), stage.chunked)

    def again(*args, **kwargs):
        raise AssertionError("computed again after a restart")

    restart_server()
    monkeypatch.setattr(SphericalMixture, "predict", again)
    monkeypatch.setattr(SphericalMixture, "predict_proba", again)
    monkeypatch.setattr(vp, "map_frame", again)
    monkeypatch.setattr(vp, "pca_2d", again)
    monkeypatch.setattr(ve, "entity_frame", again)
    monkeypatch.setattr(vp, "document_table", again)
    monkeypatch.setattr(vp, "entity_summary", again)
    monkeypatch.setattr(ap, "distances", again)  # the chunks are kept: no sentence distances
    restarted = ap.Stage(settings(ws), ws)
    ap.load_steps(restarted, ap.LOAD_STEPS, lambda fraction, message: None)
    _, back_x = restarted.pre_swap()
    back_labels, back_proba = vp.memberships(restarted.mixture_key, restarted.mixture(), back_x)
    np.testing.assert_array_equal(back_labels, labels)
    np.testing.assert_array_equal(back_proba, proba)
    import pandas as pd

    pd.testing.assert_frame_equal(vp.cached_map(restarted.mixture_key, restarted.chunks(), back_x, back_labels),
                                  points)
    for back, first in zip(ve.entity_tables("e", restarted.chunks(), numbers), tables, strict=True):
        pd.testing.assert_frame_equal(back, first)
    assert vp.overview_ready("o", 75.0, restarted.corpus())
    n_back, sentences_back, docs_back = vp.document_overview("o", 75.0, restarted.corpus(), restarted.clean(),
                                                             again)  # the distances are not read
    assert (n_back, sentences_back) == overview[:2]
    pd.testing.assert_frame_equal(docs_back, overview[2])
    built = []
    real = state.run_config
    monkeypatch.setattr(state, "run_config", lambda *a, **k: built.append(1) or real(*a, **k))
    fresh = ap.Stage(settings(ws), ws)
    assert fresh.config is fresh.config and fresh.chunks_key and fresh.mixture_key and len(built) == 1
    fresh.settings.config = fresh.settings.config.replace(n_components=3)  # what a change does
    assert fresh.config.mixture.n_components == 3 and len(built) == 2


def test_a_page_run_does_no_work_proportional_to_the_corpus_twice(tmp_path, monkeypatch):
    """Issue 21, a 100k-passage workspace's new session took 4–7 s a page: each run read the
    50 MB upload from the workspace, checked the corpus for problems, and the Clusters page
    predicted every passage's cluster and escaped every passage for its map. Now once per
    server process (per corpus, chunks, settings and mixture)."""
    import appkit.corpus_checks as checks
    import appkit.views_entities as ve
    import appkit.views_prep as vp
    import neswap_core.text.contingency as contingency
    from appkit.state import settings
    from tests.app_workspace import small_workspace

    ws = small_workspace(tmp_path, monkeypatch)
    files = [(p.relative_to(ap.SAMPLE_DIR).as_posix(), p.read_bytes())
             for p in sorted(ap.SAMPLE_DIR.rglob("*")) if p.suffix == ".csv" or p.parent.name == "docs"]
    key, payload = ap.pack_uploads(files)
    ws.put_artifact("upload", key, payload)
    ws.update_settings({"corpus_source": key})
    stage = ap.Stage(settings(ws), ws)
    stage.corpus()
    problems = checks.corpus_problems(stage)
    x = stage.embeddings()
    from neswap_core.generate.context import fit_mixture

    mixture = fit_mixture(x, stage.config)
    labels, proba = vp.memberships("m", mixture, x)
    points = vp.cached_map("m", stage.chunks(), x, labels)
    tables = ve.entity_tables("e", stage.chunks(), {})
    overview = vp.document_overview("o", 75.0, stage.corpus(), stage.clean(), stage.chunked)

    def again(*args, **kwargs):
        raise AssertionError("done again in the same server process")

    real_get = ws.get_artifact
    monkeypatch.setattr(ws, "get_artifact", lambda kind, key: again() if kind == "upload" else real_get(kind, key))
    monkeypatch.setattr(checks, "duplicate_problem", again)
    monkeypatch.setattr(checks, "check_swappable", again)
    monkeypatch.setattr(vp, "map_frame", again)
    monkeypatch.setattr(SphericalMixture, "predict", again)
    monkeypatch.setattr(ve, "entity_frame", again)
    monkeypatch.setattr(vp, "document_table", again)
    monkeypatch.setattr(contingency, "contingency_table", again)
    next_run = ap.Stage(settings(ws), ws)
    assert next_run.corpus() is stage.corpus()
    assert checks.corpus_problems(next_run) == problems
    assert vp.memberships("m", mixture, x)[0] is labels
    assert vp.cached_map("m", next_run.chunks(), x, labels) is points
    assert ve.entity_tables("e", next_run.chunks(), {}) is tables
    assert vp.document_overview("o", 75.0, next_run.corpus(), next_run.clean(), next_run.chunked) is overview
    assert overview[0] == stage.chunked().n_chunks(75.0) == int(overview[2]["chunks"].sum())
    assert overview[1] == stage.chunked().n_sentences
    assert tables[1].set_index("category")["chunks with ≥ 1"].to_dict() == {
        cat: sum(any(s.category == cat for s in c.entities) for c in stage.chunks())
        for cat in tables[1]["category"]}
    np.testing.assert_array_equal(labels, proba.argmax(axis=1))


def _correction_form_app(folder: str, n: int) -> None:
    from appkit.views_entities import correction_form
    from neswap_core.corpus import Chunk
    from neswap_core.workspace.store import Workspace

    chunks = [Chunk(f"d{i}#0000", f"d{i}", 0, f"Passage number {i} about Acme.", f"c{i}", ())
              for i in range(n)]
    correction_form(Workspace.open(folder), chunks, [], {c.doc_id: i for i, c in enumerate(chunks)})


def test_the_correction_form_offers_at_most_a_thousand_passages(tmp_path, monkeypatch):
    """A select box of every passage sent 100,000 previews to the browser on each run of the
    Entities page; now the first 1,000 of the passages matching the filters, and it says so."""
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])  # see the paginate test
    at = AppTest.from_function(_correction_form_app, args=(str(tmp_path / "ws"), 1_500)).run()
    assert not at.exception
    box = at.selectbox(key="corr_chunk")
    assert len(box.options) == 1_000
    assert "first 1,000 of 1,500" in box.help
    small = AppTest.from_function(_correction_form_app, args=(str(tmp_path / "ws2"), 12)).run()
    assert len(small.selectbox(key="corr_chunk").options) == 12
    assert "first" not in small.selectbox(key="corr_chunk").help


def test_the_chunk_map_draws_a_seeded_sample_that_keeps_every_cluster():
    """Issue 21: plotly serialised all 100,990 points with their previews on every run of the
    Clusters page (2.8 s, in a running server too)."""
    import pandas as pd

    from appkit.views_prep import map_sample

    rng = np.random.default_rng(5)
    clusters = np.array(["0"] * 60_000 + ["1"] * 39_990 + ["2"] * 10)
    points = pd.DataFrame({"PC 1": rng.normal(size=clusters.size), "cluster": rng.permutation(clusters),
                           "chunk": [f"c{i}" for i in range(clusters.size)]})
    shown = map_sample(points, limit=5_000)
    assert 4_900 <= len(shown) <= 5_100
    sizes = shown["cluster"].value_counts().to_dict()
    assert sizes["2"] == 10  # a small cluster is shown whole
    assert abs(sizes["0"] / sizes["1"] - 60_000 / 39_990) < 0.01  # in proportion
    assert shown.index.is_monotonic_increasing and shown.index.isin(points.index).all()
    pd.testing.assert_frame_equal(map_sample(points, limit=5_000), shown)  # the same every run
    few = points.iloc[:3_000]
    assert map_sample(few, limit=5_000) is few


@pytest.mark.parametrize("page", ["1_corpus", "2_entities", "3_clusters", "4_swaps"])
def test_the_first_pages_import_neither_scikit_learn_nor_scipys_optimizers(page):
    """Issue 21: every page's first draw after a restart imported scikit-learn and SciPy's
    statistics and optimizers (about 1 s of 3.3–5.3 s at 100k passages), though pages 1–4 fit,
    attack and optimise nothing once their results are kept (the mixture is read back as its
    attributes: ``test_a_stored_mixture_…``). Their imports, run in a fresh interpreter."""
    import ast
    import subprocess
    from pathlib import Path

    root = Path(ap.__file__).resolve().parent.parent
    tree = ast.parse((root / "pages" / f"{page}.py").read_text(encoding="utf-8"))
    imports = "\n".join(ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))
    probe = imports + "\nimport sys\nprint(sorted(m for m in ('sklearn', 'scipy.optimize', 'scipy.stats') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_cluster_table_counts_what_one_pass_per_cluster_counted():
    """Issue 21: the Clusters page's table walked every chunk once per component (0.6 s of
    each run at 100k passages, in a running server too); grouped once now, the same table,
    empty components included."""
    import types

    import pandas as pd

    import appkit.views_prep as vp

    rng = np.random.default_rng(3)
    chunks = [Chunk(f"d{d}#{i:04d}", f"d{d}", i, f"text {d} {i}", f"company {d % 7}")
              for d in range(40) for i in range(int(rng.integers(1, 9)))]
    labels = rng.choice([0, 1, 2, 4], size=len(chunks))  # component 3 is empty
    mixture = types.SimpleNamespace(n_components_=5, weights_=rng.dirichlet(np.ones(5)),
                                    concentrations_=rng.uniform(5, 50, 5))
    expected = pd.DataFrame([{
        "cluster": k,
        "chunks": sum(1 for lab in labels if lab == k),
        "weight π": float(mixture.weights_[k]),
        "concentration ρ": float(mixture.concentrations_[k]),
        "documents": len({c.doc_id for c, lab in zip(chunks, labels, strict=True) if lab == k}),
        "distinct company": len({c.protected for c, lab in zip(chunks, labels, strict=True) if lab == k}),
    } for k in range(5)])
    table = vp.cluster_table(mixture, labels, chunks, "company")
    pd.testing.assert_frame_equal(table, expected)
    assert table.loc[3, "chunks"] == 0


def test_the_entities_pages_counts_come_from_its_kept_tables():
    """Issue 21: the Entities page passed over every entity span for each count and each list of
    frequent values (about 0.8 s of every run at 100k passages); they now come from the kept
    tables (z, the entity table): the same counts, ties of the frequent values alphabetical."""
    from collections import Counter

    import appkit.views_entities as ve
    import appkit.views_prep as vp
    from neswap_core.text.contingency import contingency_table

    rng = np.random.default_rng(5)
    cats = ["Organization", "Person", "Product", "Location", "Date", "Event"]
    words = ["Acme", "Bolt", "Cora", "Dune", "Echo"]
    chunks = []
    for i in range(300):
        spans, text = [], f"passage {i}:"
        for _ in range(int(rng.integers(0, 4))):
            value, cat = str(rng.choice(words)), str(rng.choice(cats[:4]))
            spans.append(EntitySpan(len(text) + 1, len(text) + 1 + len(value), "X", cat, value))
            text += " " + value
        chunks.append(Chunk(f"d{i % 9}#{i:04d}", f"d{i % 9}", i, text, f"c{i % 9}", tuple(spans)))
    z, entities = contingency_table(chunks), ve.entity_frame(chunks, {})
    for chosen in (["Organization"], ["Person", "Product"], ["Date"], [], cats):
        naive = sum(1 for ch in chunks if any(s.category in chosen for s in ch.entities))
        assert vp.chunks_with_categories(z, chosen) == naive, chosen
    for cat in cats:
        counts = Counter(s.text for ch in chunks for s in ch.entities if s.category == cat)
        expected = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        assert vp.top_values(entities, cat, 3) == expected, cat
    assert vp.filter_chunks(chunks, [], [], " ") == chunks
    picked = vp.filter_chunks(chunks, ["Person"], ["d1", "d2"], "acme")
    assert picked == [ch for ch in chunks if ch.doc_id in {"d1", "d2"} and "acme" in ch.text.lower()
                      and any(s.category == "Person" for s in ch.entities)] and picked


def test_a_stored_mixture_reads_its_attributes_without_scikit_learn_and_pickles_as_the_estimator(
        tmp_path):
    """Issue 21: the Clusters and Swaps pages unpickled the fitted mixture, a scikit-learn
    estimator (0.6 s of import on each first draw after a restart), to read its attributes. A
    ``StoredMixture`` holds them; its methods are the estimator's; pickled, it is the estimator's
    bytes (the candidates' memo key pickles the mixture: the app and the CLI must agree)."""
    import pickle
    import subprocess
    from pathlib import Path

    from appkit.mixture_state import StoredMixture, mixture_state
    from neswap_core.choose import memo_keys
    from neswap_core.models.mixture import SphericalMixture

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 8)) + np.repeat(np.eye(8)[:3] * 4, 100, axis=0)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    fitted = SphericalMixture(family="pkb", n_components=3, random_state=0).fit(x)
    stored = StoredMixture(mixture_state(fitted))
    for name in ("weights_", "means_", "concentrations_", "n_components_", "converged_", "n_iter_"):
        np.testing.assert_array_equal(getattr(stored, name), getattr(fitted, name))
    np.testing.assert_array_equal(stored.predict_proba(x), fitted.predict_proba(x))
    assert pickle.dumps(stored, protocol=4) == pickle.dumps(fitted, protocol=4)
    assert pickle.dumps(pickle.loads(pickle.dumps(stored)), protocol=4) == pickle.dumps(fitted, protocol=4)
    # the memo key's part for the mixture: the same for both, without making the estimator
    # (pickling it imported scikit-learn at a restarted server's Frontier page)
    fresh = StoredMixture(mixture_state(fitted))
    assert memo_keys.mixture_state(fresh) == memo_keys.mixture_state(fitted)
    assert fresh._estimator_ is None
    other = SphericalMixture(family="pkb", n_components=3, random_state=1).fit(x[::-1])
    assert memo_keys.mixture_state(other) != memo_keys.mixture_state(fitted)
    (tmp_path / "state.pkl").write_bytes(mixture_state(fitted))
    root = Path(ap.__file__).resolve().parent.parent
    probe = ("import sys; from pathlib import Path; from appkit.mixture_state import StoredMixture; "
             f"m = StoredMixture(Path({str(tmp_path / 'state.pkl')!r}).read_bytes()); "
             "print(int(m.n_components_), float(m.weights_.sum()) > 0.99, 'sklearn' in sys.modules); "
             "m.predict; print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(fitted.n_components_), "True", "False", "True"]


def test_documents_are_numbered_in_corpus_order_from_one():
    import appkit.views_prep as vp

    chunks = [Chunk(f"{d}#{i:04d}", d, i, "t", "c") for d, i in
              [("b", 0), ("b", 1), ("a", 0), ("c", 0), ("a", 1), ("c", 1)]]
    assert vp.document_numbers(chunks) == {"b": 1, "a": 2, "c": 3}
    assert list(vp.document_numbers(chunks)) == ["b", "a", "c"] and vp.document_numbers([]) == {}


@pytest.mark.slow
def test_the_clusters_page_builds_its_charts_once_per_fit(tmp_path, monkeypatch):
    """Plotly Express rebuilt the Clusters page's four charts on every run: 0.38 s of each click
    on the dev corpus (issue 21: every interaction ≤ 0.5 s). Built once per fit now: choosing a
    cluster's sample builds no chart, and the charts sent are the same."""
    import plotly.express as px
    from streamlit.testing.v1 import AppTest

    from tests.app_workspace import small_workspace

    small_workspace(tmp_path, monkeypatch)
    root = Path(__file__).resolve().parent.parent
    for page in ("4_swaps", "3_clusters"):  # the Swaps page fits the mixture
        at = AppTest.from_file(str(root / "app.py"), default_timeout=900)
        at.switch_page(f"pages/{page}.py")
        at.run()
        assert not at.exception
    charts = [c.proto.spec for c in at.get("plotly_chart")]
    assert len(charts) == 4

    def again(*args, **kwargs):
        raise AssertionError("a chart built again for the same fit")

    for name in ("bar", "scatter", "line"):
        monkeypatch.setattr(px, name, again)
    box = at.selectbox(key="sample_cluster")
    box.set_value(box.options[-1]).run()
    assert not at.exception
    assert [c.proto.spec for c in at.get("plotly_chart")] == charts
