"""Candidates of a large corpus measured on a random sample of whole documents (issue 21).

What a user would check: small corpora are measured whole (nothing changes); the sample is made
of whole documents, within its bounds, seeded, and uniform over documents; the stated 95 %
margin of a share of documents holds for the sampler (a simulation with a known share); a
scorer restricted to the sample gives exactly the figures of a scorer built on the sample's
documents alone, and the utility measures on the sample exactly those of a release context of
the sample's passages alone (a second method: the whole-corpus code on the smaller corpus),
embedding no passage outside it; and the candidate table of a sampled corpus is measured on the
sample.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from neswap_core.corpus import Chunk, chunk_id
from neswap_core.measure import candidate_sample as cs
from neswap_core.measure.candidate_sample import MeasurementSample, measurement_sample


def _doc_ids(sizes) -> list[str]:
    return [f"d{d:05d}" for d, size in enumerate(sizes) for _ in range(size)]


def test_a_corpus_within_the_bounds_is_measured_whole():
    dev_like = _doc_ids([35] * 35)  # dev: 35 documents, 1,238 passages
    assert measurement_sample(dev_like) is None
    assert measurement_sample(_doc_ids([1] * cs.MAX_MEASURED_DOCUMENTS)) is None
    assert measurement_sample(_doc_ids([1] * (cs.MAX_MEASURED_DOCUMENTS + 1))) is not None
    assert measurement_sample(_doc_ids([cs.MAX_MEASURED_PASSAGES + 1])) is not None


def test_the_sample_is_whole_documents_within_both_bounds_and_seeded():
    sizes = np.random.default_rng(3).integers(1, 41, size=1_000)
    ids = np.asarray(_doc_ids(sizes))
    sample = measurement_sample(ids, random_state=0)
    assert sample is not None and sample.total_documents == 1_000
    assert sample.total_passages == len(ids)
    chosen = set(ids[sample.positions])
    assert len(chosen) == sample.documents <= cs.MAX_MEASURED_DOCUMENTS
    assert sample.passages <= cs.MAX_MEASURED_PASSAGES
    whole = np.flatnonzero(np.isin(ids, list(chosen)))  # every passage of a drawn document
    np.testing.assert_array_equal(sample.positions, whole)
    again = measurement_sample(ids, random_state=0)
    np.testing.assert_array_equal(again.positions, sample.positions)
    other = measurement_sample(ids, random_state=1)
    assert set(ids[other.positions]) != chosen
    # the passage bound stops the draw before the document bound when documents are long
    long = measurement_sample(_doc_ids([60] * 500))
    assert long.documents == cs.MAX_MEASURED_PASSAGES // 60 and long.passages <= cs.MAX_MEASURED_PASSAGES


def test_every_document_is_equally_likely_to_be_drawn():
    ids = _doc_ids([3] * 50)
    seeds = 2_000
    counts = np.zeros(50)
    for seed in range(seeds):
        s = measurement_sample(ids, random_state=seed, max_documents=10, max_passages=10_000)
        counts[np.unique(np.asarray([int(ids[p][1:]) for p in s.positions]))] += 1
    share = counts / seeds
    sd = np.sqrt(0.2 * 0.8 / seeds)
    assert np.all(np.abs(share - 0.2) < 4.5 * sd), share


def test_the_stated_margin_covers_a_share_of_documents_95_percent_of_the_time():
    """N documents of which exactly half are named (the worst case the margin assumes): over
    2,000 draws the sample's share is within the stated margin about 95 % of the time."""
    n_docs = 2_000
    ids = _doc_ids([1] * n_docs)
    named = np.arange(n_docs) % 2 == 0
    inside = []
    for seed in range(2_000):
        s = measurement_sample(ids, random_state=seed)
        assert s.documents == cs.MAX_MEASURED_DOCUMENTS
        inside.append(abs(named[s.positions].mean() - 0.5) <= s.document_margin)
    coverage = float(np.mean(inside))
    assert 0.93 <= coverage <= 0.97, coverage  # hypergeometric: 0.948
    assert measurement_sample(ids).document_margin == pytest.approx(
        1.959964 * np.sqrt(0.25 / 300 * (n_docs - 300) / (n_docs - 1)), rel=1e-6)


# --- scorers -----------------------------------------------------------------------------------
def _company_texts(rng, company: int, n: int) -> list[str]:
    own = [f"c{company}w{k}" for k in range(6)]
    shared = [f"s{k}" for k in range(40)]
    return [" ".join(rng.choice(own, 3).tolist() + rng.choice(shared, 9).tolist()) for _ in range(n)]


def _corpus(rng, companies: int = 8, docs_per: int = 5, chunks_per: int = 6):
    texts, labels, docs = [], [], []
    for c in range(companies):
        for d in range(docs_per):
            texts += _company_texts(rng, c, chunks_per)
            labels += [f"C{c}"] * chunks_per
            docs += [f"C{c}-D{d}"] * chunks_per
    return texts, labels, docs


def test_a_scoped_scorer_gives_the_figures_of_a_scorer_of_the_sample_alone():
    from neswap_core.measure.panel import AttackerPanel
    from neswap_core.measure.panel_scorers import family_scorers

    rng = np.random.default_rng(0)
    reading = _corpus(rng, docs_per=2)
    panel = AttackerPanel(("word", "retrieval")).fit(*reading)
    texts, labels, docs = _corpus(rng)
    sample = measurement_sample(docs, random_state=4, max_documents=12)
    pos = sample.positions
    whole = family_scorers(panel, texts, labels, docs)
    alone = family_scorers(panel, [texts[p] for p in pos], [labels[p] for p in pos],
                           [docs[p] for p in pos])  # fmt: skip
    # a release that changes a third of all passages, in and out of the sample
    changed = {p: " ".join(rng.choice([f"s{k}" for k in range(40)], 12)) for p in range(0, len(texts), 3)}
    renumber = {int(p): i for i, p in enumerate(pos)}
    changed_alone = {renumber[p]: t for p, t in changed.items() if p in renumber}
    for name in ("word", "retrieval"):
        a, b = whole[name].scoped(pos).score(changed), alone[name].score(changed_alone)
        for field in ("n_chunks", "n_documents", "chunk_top1", "chunk_top5", "n_changed",
                      "changed_pre_top1", "changed_post_top1", "document_accuracy",
                      "documents_named", "named_documents", "mcnemar_p"):  # fmt: skip
            assert getattr(a, field) == getattr(b, field), (name, field)
        np.testing.assert_array_equal(a.table, b.table)
        assert a.documents[["doc_id", "named", "n_changed"]].equals(b.documents[["doc_id", "named", "n_changed"]])
        assert a.n_documents == 12 and a.n_chunks == 72
        assert whole[name].scoped(None) is whole[name]
        full = whole[name].score(changed)  # the unscoped scorer is untouched
        assert full.n_documents == 40


# --- utility measures ------------------------------------------------------------------------------
def _hashed(texts, dim: int = 16) -> np.ndarray:
    """A deterministic unit vector per text (a stand-in for the embedding model)."""
    rows = []
    for text in texts:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(dim)
        rows.append(v / np.linalg.norm(v))
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), dim)


def _context(chunks, embed):
    from neswap_core.config import RunConfig
    from neswap_core.generate.context import fit_mixture
    from neswap_core.generate.releases import ReleaseContext

    x = _hashed([c.text for c in chunks])
    config = RunConfig.of(corpus="data/sample", n_components=3, n_init=1)
    return ReleaseContext(list(chunks), x, fit_mixture(x, config), embed), config


@pytest.mark.filterwarnings("ignore::UserWarning")  # the mixture of random vectors: not measured
def test_utility_on_the_sample_is_the_whole_measure_of_the_sample_s_passages_alone():
    from neswap_core.generate.releases import ReleaseContext
    from neswap_core.measure.release_measures import release_measures

    rng = np.random.default_rng(1)
    chunks = [Chunk(chunk_id(f"D{d}", i), f"D{d}", i, f"document {d} passage {i} " + " ".join(
        rng.choice(["rates", "margin", "guidance", "growth", "loans", "deposits"], 8)), f"C{d % 5}")
        for d in range(30) for i in range(7)]  # fmt: skip
    asked: list[str] = []

    def embed(texts):
        asked.extend(texts)
        return _hashed(texts)

    ctx, _ = _context(chunks, embed)
    assert ctx.sample is None  # 30 documents: measured whole
    changed = {p: Chunk(c.chunk_id, c.doc_id, c.index, c.text + " swapped", c.protected)
               for p, c in enumerate(chunks) if p % 2 == 0}  # fmt: skip
    whole = release_measures(ctx, changed)

    ctx.sample = measurement_sample([c.doc_id for c in chunks], random_state=2, max_documents=9)
    pos = ctx.measured
    assert len(pos) == 63
    asked.clear()
    sampled = release_measures(ctx, changed)
    assert sorted(asked) == sorted(changed[p].text for p in pos if p in changed)  # nothing else

    # the second method: a context of the sample's passages alone, with the same mixture
    alone = ReleaseContext([chunks[p] for p in pos], ctx.embeddings[pos], ctx.mixture, embed)
    ref = release_measures(alone, {i: changed[p] for i, p in enumerate(pos) if p in changed})
    assert sampled.du == pytest.approx(ref.du, rel=1e-12)
    assert sampled.mean_cosine == pytest.approx(ref.mean_cosine, rel=1e-12)
    assert sampled.clusters_unchanged == pytest.approx(ref.clusters_unchanged, rel=1e-12)
    # words and passages changed need no model: counted on the whole corpus
    assert sampled.words_unchanged == whole.words_unchanged
    assert sampled.chunks_changed == whole.chunks_changed and sampled.n_changed == whole.n_changed
    # a sample of every document is the whole corpus
    ctx.sample = MeasurementSample(np.arange(len(chunks)), 30, 30, len(chunks))
    every = release_measures(ctx, changed)
    assert every.du == pytest.approx(whole.du, rel=1e-12)
    assert every.mean_cosine == pytest.approx(whole.mean_cosine, rel=1e-12)


@pytest.mark.slow
def test_a_large_corpus_s_candidate_table_is_measured_on_its_sample(monkeypatch):
    """The bundled sample with the bound lowered to 4 documents: every candidate's document
    figures are shares of those 4 documents, the statement says so, and its figures are the
    scoped scorers' (the same changes measured on the sample)."""
    from pathlib import Path

    from neswap_core.choose.attack_columns import measured_row
    from neswap_core.choose.candidates import build_candidates
    from neswap_core.choose.plan_grid import changed_texts
    from neswap_core.choose.scorers import build_scorers
    from neswap_core.config import RunConfig
    from neswap_core.generate.releases import sweep_for_config
    from neswap_core.prepare.pipeline import prepare_path

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    monkeypatch.setattr(cs, "MAX_MEASURED_DOCUMENTS", 4)
    config = RunConfig.of(corpus="data/sample", n_components=5, n_init=1, max_swaps=10,
                          document_levels=[0.3])  # fmt: skip
    prepared = prepare_path("data/sample", config)
    ctx, _ = _prepared_context(prepared, config)
    assert ctx.sample is not None and ctx.sample.documents == 4
    assert "4 of 10 documents" in ctx.sample.statement()
    sweep = sweep_for_config(ctx, config)
    scorers = build_scorers(ctx.chunks, None, in_corpus=True, random_state=0)
    candidates = build_candidates(sweep, config, scorers)
    table = candidates.table
    assert len(table) > 5
    quarters = table["document_accuracy"].to_numpy(float) * 4
    np.testing.assert_allclose(quarters, np.round(quarters), atol=1e-12)
    document = table[table["sampler"] == "document"].iloc[0]
    source = candidates.source(document["release_id"])
    scoped = {k: s.scoped(ctx.measured) for k, s in scorers.items()}
    row = measured_row(scoped, changed_texts(ctx, source.changed()))
    assert row["document_accuracy"] == document["document_accuracy"]
    assert row["chunk_accuracy"] == document["chunk_accuracy"]


def _prepared_context(prepared, config):
    """The release context of a prepared corpus; changed passages embedded by a hash of their
    text (the model is not what is measured here)."""
    from neswap_core.generate.context import release_context

    dim = prepared.embeddings.shape[1]
    return release_context(prepared.chunks, prepared.embeddings, lambda t: _hashed(t, dim), config)


@pytest.mark.slow
def test_the_frontier_page_says_the_candidates_were_measured_on_a_sample(tmp_path, monkeypatch):
    """The app reads the same context: with the bound at 4 of the sample's 10 documents, the
    Frontier page states the sample and its margin (settings no other test uses, so the
    process-wide pipeline caches hold no whole-corpus context for them)."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from tests.app_workspace import small_workspace

    root = Path(__file__).resolve().parents[1]
    monkeypatch.setattr(cs, "MAX_MEASURED_DOCUMENTS", 4)
    small_workspace(tmp_path, monkeypatch, n_components=4, max_swaps=9)
    at = AppTest.from_file(str(root / "app.py"), default_timeout=900)
    at.switch_page("pages/5_frontier.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption).replace("\\", "")  # markdown escapes
    assert "measured on a random sample of whole documents: 4 of 10 documents" in captions
    assert "±" in captions and "95 % confidence" in captions


@pytest.mark.slow
def test_the_release_path_states_its_sample_in_the_notes_and_report(monkeypatch):
    """``run_release`` on a corpus past the bound (lowered to 4 of the bundled sample's 10
    documents): the notes (printed by the command line, listed in the report) and
    report.json's ``measurement_sample`` say what was measured; the written release's attack
    report (and so its verdict) still reads every document."""
    from pathlib import Path

    from neswap_core.config import RunConfig
    from neswap_core.prepare.pipeline import prepare_path
    from neswap_core.publish.protection import release_attack
    from neswap_core.publish.report import report_json
    from neswap_core.run_release import run_release

    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    monkeypatch.setattr(cs, "MAX_MEASURED_DOCUMENTS", 4)
    config = RunConfig.of(corpus="data/sample", n_components=5, n_init=1, max_swaps=10,
                          document_levels=[0.3])  # fmt: skip
    prepared = prepare_path("data/sample", config)
    dim = prepared.embeddings.shape[1]
    result = run_release(prepared, config, lambda t: _hashed(t, dim), processes=1)
    statement = next(n for n in result.notes if "random sample of whole documents" in n)
    assert "4 of 10 documents" in statement
    sample = report_json(result)["measurement_sample"]
    assert sample["documents"] == 4 and sample["total_documents"] == 10
    assert 0 < sample["document_margin"] < 0.5
    assert result.release is not None
    summary, table = release_attack(result)
    assert summary["attackers"]
    assert all(a["release"]["n_documents"] == 10 for a in summary["attackers"].values())
    assert table.groupby("attacker")["doc_id"].nunique().eq(10).all()
