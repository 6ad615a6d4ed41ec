"""The attacker panel (measure/panel.py) on a constructed corpus with known answers.

Reading: the first 32 sentences of each bundled sample call, in windows of 4 sentences; the
release in the "copied" test is that reading itself (every family must name every document).
Chance control: the same reading with every window's company drawn at random, scored on the
held-out rest of the calls; accuracies must stay under the binomial's upper 0.1 % quantile at
p = 1 / number of companies (companies and predictions independent under shuffled labels).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from neswap_core.measure.panel import CORE_FAMILIES, EXTRA_FAMILIES, AttackerPanel, _ranks
from neswap_core.measure.reading import sentence_windows

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "docs"
HEAD = 8  # windows of 4 sentences taken as the reading, per call


def _windows():
    out = {}
    for path in sorted(SAMPLE.glob("*.txt")):
        out[path.stem] = sentence_windows(path.read_text(encoding="utf-8"), 4)
    return out


@pytest.fixture(scope="module")
def corpus():
    windows = _windows()
    reading = [(w, doc.split("_")[0], doc) for doc, ws in windows.items() for w in ws[:HEAD]]
    held = [(w, doc.split("_")[0], doc) for doc, ws in windows.items() for w in ws[HEAD:]]
    return reading, held


@pytest.fixture(scope="module")
def embed():
    from neswap_core.models.embedding import Embedder

    return Embedder().encode


def _unzip(rows):
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


@pytest.fixture(scope="module")
def fitted(corpus, embed):
    reading, _ = corpus
    texts, labels, docs = _unzip(reading)
    vectors = embed(texts)
    panel = AttackerPanel(CORE_FAMILIES + EXTRA_FAMILIES).fit(texts, labels, docs, vectors)
    return panel, vectors


def test_every_family_names_documents_copied_from_the_reading(corpus, fitted, embed):
    reading, _ = corpus
    texts, labels, docs = _unzip(reading)
    panel, vectors = fitted
    assert set(panel.families_) == set(CORE_FAMILIES + EXTRA_FAMILIES)
    score = panel.scorer(texts, labels, docs, vectors, embed).score()
    for name, fam in score.families.items():
        assert fam.document_accuracy == 1.0, name
        assert len(fam.named_documents) == len(set(docs)), name
        assert fam.chunk_accuracy >= 0.9, (name, fam.chunk_accuracy)
    assert score.worst() == (max(f.chunk_accuracy for f in score.families.values()), 1.0)


def test_shuffled_labels_give_chance(corpus, embed):
    reading, held = corpus
    texts, labels, docs = _unzip(reading)
    rng = np.random.default_rng(7)
    companies = sorted(set(labels))
    shuffled = list(rng.choice(companies, size=len(labels)))
    vectors = embed(texts)
    panel = AttackerPanel(CORE_FAMILIES).fit(texts, shuffled, docs, vectors)
    h_texts, h_labels, h_docs = _unzip(held)
    score = panel.scorer(h_texts, h_labels, h_docs, embed(h_texts), embed).score()
    p = 1.0 / len(companies)
    n_chunks, n_docs = len(h_texts), len(set(h_docs))
    chunk_bound = binom.ppf(0.999, n_chunks, p) / n_chunks
    doc_bound = binom.ppf(0.999, n_docs, p) / n_docs
    for name, fam in score.families.items():
        assert fam.chunk_accuracy <= chunk_bound, (name, fam.chunk_accuracy, chunk_bound)
        assert fam.document_accuracy <= doc_bound, (name, fam.document_accuracy, doc_bound)
    # and the same panel trained on the true labels names far more than chance (a control that
    # the bound is not vacuous on this corpus)
    true = AttackerPanel(("word", "retrieval")).fit(texts, labels, docs)
    named = true.scorer(h_texts, h_labels, h_docs).score()
    assert named.families["word"].chunk_accuracy > chunk_bound
    assert named.families["retrieval"].document_accuracy > doc_bound


def _edited(texts, rng, share=0.3):
    """{position: text} for a random share of chunks: words dropped and one family's words
    from another chunk appended (changes counts, embeddings and scores)."""
    n = len(texts)
    picks = rng.choice(n, size=max(1, int(share * n)), replace=False)
    out = {}
    for p in picks:
        words = texts[p].split()
        other = texts[int(rng.integers(n))].split()
        out[int(p)] = " ".join(words[: len(words) // 2] + other[: len(other) // 2])
    return out


def test_incremental_score_equals_a_full_rescore(corpus, fitted, embed):
    reading, held = corpus
    texts, labels, docs = _unzip(held)
    panel, _ = fitted
    scorer = panel.scorer(texts, labels, docs, embed(texts), embed)
    changed = _edited(texts, np.random.default_rng(3))
    incremental = scorer.score(changed)
    released = [changed.get(i, t) for i, t in enumerate(texts)]
    full = panel.scorer(released, labels, docs, embed(released), embed).score()
    for name in panel.families_:
        a, b = incremental.families[name], full.families[name]
        assert a.chunk_accuracy == pytest.approx(b.chunk_accuracy), name
        assert a.document_accuracy == pytest.approx(b.document_accuracy), name
        np.testing.assert_array_equal(a.chunk_named, b.chunk_named)
        np.testing.assert_array_equal(a.doc_named, b.doc_named)
    # a "change" to the same text is no change
    same = scorer.score({0: texts[0]})
    assert same.families["word"].chunk_accuracy == scorer.score().families["word"].chunk_accuracy


def test_ties_with_the_true_company_count_as_named():
    scores = np.array([[0.5, 0.5, 0.1], [0.2, 0.9, 0.9], [0.3, 0.3, 0.3], [0.1, 0.2, 0.3]])
    y = np.array([1, 2, 0, 0])
    np.testing.assert_array_equal(_ranks(scores, y), [0, 0, 0, 2])
    assert _ranks(scores, np.array([-1, -1, -1, -1])).tolist() == [3, 3, 3, 3]  # unknown company


def test_a_document_retrieval_cannot_tell_apart_is_named(corpus):
    # Words the reading never uses: every company profile has cosine 0, a four-way tie with
    # the true company -> named (pessimistic), while LR families follow their priors.
    reading, _ = corpus
    texts, labels, docs = _unzip(reading)
    panel = AttackerPanel(("retrieval", "bm25")).fit(texts, labels, docs)
    unseen = ["zyxwv qwertz plugh xyzzy", "plugh zyxwv frobnicate"]
    score = panel.scorer(unseen, ["APH", "APH"], ["x", "x"]).score()
    assert score.families["retrieval"].document_accuracy == 1.0
    assert score.families["bm25"].chunk_accuracy == 1.0


def test_panel_refuses_a_single_company():
    with pytest.raises(ValueError, match="two companies"):
        AttackerPanel(("word",)).fit(["a b c"] * 3, ["A"] * 3, ["d"] * 3)


@pytest.mark.parametrize("family", ["word", "char", "svm", "embedding"])
def test_a_two_company_reading_gives_a_score_per_company(family):
    """A two-class linear model has one decision column; every family still scores each of the
    two companies (the LR families: exactly predict_log_proba, a second method)."""
    from neswap_core.measure.panel import make_family

    rng = np.random.default_rng(0)
    words = {"a": "cloud revenue Acme grew", "b": "stores Ohio Bolt opened"}
    texts = [f"{words[c]} {' '.join(rng.choice(['the', 'quarter', 'margin', 'guidance'], 4))}"
             for c in "ab" * 10]
    labels = ["Acme", "Bolt"] * 10
    vectors = np.array([[1.0, 0.2], [0.1, 1.0]] * 10) + rng.normal(0, 0.05, (20, 2))
    fam = make_family(family).fit(texts, labels, None, vectors if family == "embedding" else None)
    scores = fam.chunk_scores(texts, vectors)
    assert scores.shape == (20, 2)
    assert list(fam.classes_[scores.argmax(axis=1)]) == labels
    if family != "svm":
        x = vectors if family == "embedding" else fam.vectorizer_.transform(texts)
        np.testing.assert_allclose(scores, fam.clf_.predict_log_proba(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("family", ["retrieval", "bm25"])
def test_document_scores_use_the_profiles_by_term_made_once_and_never_pickled(family):
    """Each document's score against every company multiplied by the transposed (CSC)
    profiles, which scipy converted to CSR on every call: half of the document defence's type
    scoring at 100k passages. The CSR copy is made once per fitted matrix; the scores are the
    product's, bit for bit; it is not pickled, and a refit replaces it."""
    import pickle

    from scipy import sparse

    from neswap_core.measure.panel import BM25Family, RetrievalFamily

    rng = np.random.default_rng(3)
    labels = [f"c{i % 7}" for i in range(140)]
    texts = [" ".join(f"w{k}" for k in rng.integers(0, 300, 25)) + f" own{i % 7}" for i in range(140)]
    fam = (RetrievalFamily if family == "retrieval" else BM25Family)().fit(texts, labels)
    name = "profiles_" if family == "retrieval" else "weights_"
    counts = sparse.csr_matrix(fam.counts(texts[:9]).sum(axis=0))
    query = fam._weigh(counts) if family == "retrieval" else counts
    expected = np.asarray((query @ getattr(fam, name).T).todense())
    np.testing.assert_array_equal(fam.doc_scores(counts), expected)
    kept = fam._by_term[1]
    fam.doc_scores(counts)
    assert fam._by_term[1] is kept  # made once
    np.testing.assert_array_equal(fam.doc_scores(counts, columns=[2, 0]), expected[:, [2, 0]])
    back = pickle.loads(pickle.dumps(fam))
    assert "_by_term" not in back.__dict__
    np.testing.assert_array_equal(back.doc_scores(counts), expected)
    fam.fit(texts[:70], labels[:70])  # new profiles: a new copy
    counts = sparse.csr_matrix(fam.counts(texts[:9]).sum(axis=0))
    query = fam._weigh(counts) if family == "retrieval" else counts
    np.testing.assert_array_equal(fam.doc_scores(counts), np.asarray((query @ getattr(fam, name).T).todense()))
    assert fam._by_term[1] is not kept


@pytest.mark.parametrize("block", [7, 4096])
def test_the_report_s_views_measure_every_family_as_score_does_bit_for_bit(corpus, fitted, embed,
                                                                          monkeypatch, block):
    """Issue 21: the attack report measures the release from its views' single scoring
    (``explain.release_views``). It scores the changed passages in the blocks ``score`` uses,
    so every family's figures and per-document frame are ``score``'s to the last bit: the
    embedding family's dense products give other last digits in other batches (at 100k,
    33 margins of attack.csv moved by 1e-14 when the views scored their own blocks)."""
    import neswap_core.measure.attack_scores as attack_scores
    import neswap_core.measure.explain as explain
    from neswap_core.measure.explain import release_views
    from neswap_core.measure.panel_scorers import family_scorers

    _, held = corpus
    texts, labels, docs = _unzip(held)
    panel, _ = fitted
    monkeypatch.setattr(attack_scores, "SCORE_BLOCK", block)
    monkeypatch.setattr(explain, "SCORE_BLOCK", max(block // 3, 1))
    scorers = family_scorers(panel, texts, labels, docs, vectors=embed(texts), embed=embed)
    changed = _edited(texts, np.random.default_rng(5), share=0.5)
    assert "embedding" in scorers
    for name, scorer in scorers.items():
        expected = scorer.score(changed)
        measures, views = release_views(scorer, changed)
        assert measures.to_dict() == expected.to_dict(), name
        pd.testing.assert_frame_equal(measures.documents, expected.documents, check_exact=True)
        frame = expected.documents.set_index("doc_id")
        assert [v.doc_id for v in views] == list(scorer.documents_)
        assert [(v.named, v.predicted) for v in views] == [
            (bool(frame.loc[v.doc_id, "named"]), frame.loc[v.doc_id, "predicted"]) for v in views]
