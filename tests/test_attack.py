"""Attackers and their measures (SPEC §8) on small constructed corpora, against brute force."""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd
import pytest

from neswap_core.errors import ConfigError, FitError
from neswap_core.measure.attack import (
    CrossFittedAttacker,
    TextAttacker,
    cross_fitted_proba,
    fold_assignment,
)
from neswap_core.measure.attack_scores import ReleaseScorer, mcnemar_exact
from neswap_core.measure.term_ranking import WEIGHT_DECIMALS

COMMON = "revenue growth quarter margin customers demand strong year results team".split()
OWN = {
    "Acme": "rockets anvils desert coyote explosives".split(),
    "Globex": "reactors nuclear plant energy turbines".split(),
    "Initech": "software printers reports staplers consulting".split(),
}


def _corpus(seed: int = 0, docs_per_company: int = 2, chunks_per_doc: int = 10):
    """Chunks mixing common words with a few of their company's words (some chunks none)."""
    rng = np.random.default_rng(seed)
    texts, labels, doc_ids = [], [], []
    for company, own in OWN.items():
        for d in range(docs_per_company):
            for _ in range(chunks_per_doc):
                n_own = int(rng.integers(0, 3))
                words = list(rng.choice(COMMON, 8)) + list(rng.choice(own, n_own))
                rng.shuffle(words)
                texts.append(" ".join(words))
                labels.append(company)
                doc_ids.append(f"{company}_{d}")
    return texts, labels, doc_ids


def test_text_attacker_probabilities_match_sklearn_and_name_companies():
    texts, labels, _ = _corpus()
    att = TextAttacker(min_df=1).fit(texts, labels)
    assert list(att.classes_) == sorted(OWN)
    proba = att.predict_proba(["anvils and rockets", "nuclear turbines", "staplers"])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(
        proba,
        att.model_.predict_proba(
            att.transform(["anvils and rockets", "nuclear turbines", "staplers"])
        ),
        rtol=1e-10,
    )
    assert list(att.predict(["anvils and rockets", "nuclear turbines", "staplers"])) == [
        "Acme",
        "Globex",
        "Initech",
    ]
    weights = att.term_weights(["anvils revenue"], "Acme")
    assert weights.index[0] == "anvils" and weights.iloc[0] > 0


def test_attacker_errors_are_clear():
    with pytest.raises(FitError, match="at least 2 companies"):
        TextAttacker().fit(["a text", "another text"], ["X", "X"])
    with pytest.raises(FitError, match="one label per text"):
        TextAttacker().fit(["a text", "another text"], ["X"])
    with pytest.raises(FitError, match="at least 2 folds"):
        fold_assignment(["a", "b"], n_folds=1)


def test_folds_spread_every_document_evenly():
    groups = ["d1"] * 10 + ["d2"] * 7 + ["d3"] * 3
    folds = fold_assignment(groups, 5, random_state=1)
    assert np.array_equal(folds, fold_assignment(groups, 5, random_state=1))
    g = np.array(groups)
    assert sorted(np.bincount(folds[g == "d1"], minlength=5)) == [2] * 5
    assert sorted(np.bincount(folds[g == "d2"], minlength=5)) == [1, 1, 1, 2, 2]
    assert len(set(folds[g == "d3"])) == 3


def test_cross_fitting_scores_each_chunk_by_a_model_blind_to_it():
    texts, labels, docs = _corpus(seed=1)
    model = CrossFittedAttacker(min_df=1, random_state=3).fit(texts, labels, docs)
    folds = model.folds_
    for f in range(5):
        held = np.flatnonzero(folds == f)
        manual = TextAttacker(min_df=1, random_state=3).fit(
            [texts[i] for i in range(len(texts)) if folds[i] != f],
            [labels[i] for i in range(len(texts)) if folds[i] != f],
        )
        np.testing.assert_allclose(
            model.oof_log_proba_[held],
            manual.predict_log_proba([texts[i] for i in held]),
            rtol=1e-9,
        )
    proba, classes = cross_fitted_proba(texts, labels, groups=docs, random_state=3)
    assert list(classes) == sorted(OWN) and proba.shape == (len(texts), 3)


def _brute(attacker, texts, labels, docs, released):
    """Every figure recomputed from scratch on the whole released corpus."""
    classes = list(attacker.classes_)
    y = np.array([classes.index(v) for v in labels])
    pre = attacker.log_proba_at(np.arange(len(texts)), texts)
    post = attacker.log_proba_at(np.arange(len(texts)), released)
    changed = np.array([a != b for a, b in zip(texts, released, strict=True)])
    pre_ok, post_ok = pre.argmax(1) == y, post.argmax(1) == y
    doc_names = sorted(set(docs))
    doc_lp = np.array([post[np.array(docs) == d].sum(0) for d in doc_names])
    doc_y = [classes.index(labels[docs.index(d)]) for d in doc_names]
    table = np.array(
        [
            [np.sum(pre_ok & post_ok & changed), np.sum(pre_ok & ~post_ok & changed)],
            [np.sum(~pre_ok & post_ok & changed), np.sum(~pre_ok & ~post_ok & changed)],
        ]
    )
    return {
        "chunk_top1": post_ok.mean(),
        "changed_pre_top1": pre_ok[changed].mean() if changed.any() else np.nan,
        "changed_post_top1": post_ok[changed].mean() if changed.any() else np.nan,
        "document_accuracy": np.mean(doc_lp.argmax(1) == np.array(doc_y)),
        "table": table,
    }


@pytest.mark.parametrize("in_corpus", [False, True])
def test_release_scorer_matches_brute_force(in_corpus):
    texts, labels, docs = _corpus(seed=2)
    if in_corpus:
        attacker = CrossFittedAttacker(min_df=1).fit(texts, labels, docs)
    else:
        attacker = TextAttacker(min_df=1).fit(*_corpus(seed=9)[:2])
    scorer = ReleaseScorer(attacker, texts, labels, docs, name="x")
    # a "release": some chunks get another company's words, one is unchanged on purpose
    rng = np.random.default_rng(0)
    positions = rng.choice(len(texts), 25, replace=False)
    changed = {int(p): texts[p] + " " + " ".join(OWN["Globex"][:3]) for p in positions[:-1]}
    changed[int(positions[-1])] = texts[positions[-1]]
    released = list(texts)
    for p, t in changed.items():
        released[p] = t
    m = scorer.score(changed)
    want = _brute(attacker, texts, labels, docs, released)
    assert m.n_changed == 24
    for key in ("chunk_top1", "changed_pre_top1", "changed_post_top1", "document_accuracy"):
        assert getattr(m, key) == pytest.approx(want[key]), key
    np.testing.assert_array_equal(m.table, want["table"])
    assert m.chance == pytest.approx(1 / 3)
    assert m.documents_named == len(m.named_documents) == int(m.documents["named"].sum())
    pre = scorer.pre_release()
    assert pre.n_changed == 0 and np.isnan(pre.changed_pre_top1) and pre.mcnemar_p == 1.0
    assert pre.chunk_top1 == pytest.approx(
        _brute(attacker, texts, labels, docs, texts)["chunk_top1"]
    )


def test_score_steps_equals_scoring_each_cumulative_release():
    texts, labels, docs = _corpus(seed=4)
    attacker = TextAttacker(min_df=1).fit(*_corpus(seed=5)[:2])
    scorer = ReleaseScorer(attacker, texts, labels, docs)
    steps = [
        {0: "nuclear " + texts[0], 11: "anvils " + texts[11]},
        {30: "staplers"},
        {0: "rockets"},
    ]
    got = scorer.score_steps(steps)
    merged: dict[int, str] = {}
    for step, m in zip(steps, got, strict=True):
        merged.update(step)
        want = scorer.score(merged)
        assert m.chunk_top1 == want.chunk_top1 and m.document_accuracy == want.document_accuracy
        np.testing.assert_array_equal(m.table, want.table)


def test_mcnemar_exact_is_the_two_sided_binomial_on_discordant_cells():
    assert mcnemar_exact(np.array([[10, 0], [5, 3]])) == pytest.approx(2 / 2**5)
    b, c = 2, 9
    n = b + c
    want = min(1.0, 2 * sum(comb(n, k) for k in range(min(b, c) + 1)) / 2**n)
    assert mcnemar_exact(np.array([[0, b], [c, 0]])) == pytest.approx(want)
    assert mcnemar_exact(np.array([[4, 3], [3, 1]])) == 1.0
    assert mcnemar_exact(np.array([[4, 0], [0, 1]])) == 1.0


def test_scorer_rejects_bad_positions_and_fixed_probabilities_cannot_score_text():
    texts, labels, docs = _corpus()
    attacker = TextAttacker(min_df=1).fit(texts, labels)
    scorer = ReleaseScorer(attacker, texts, labels, docs)
    with pytest.raises(ConfigError, match="outside"):
        scorer.score({len(texts): "x"})
    fixed = ReleaseScorer(
        attacker.predict_proba(texts), texts, labels, docs, classes=attacker.classes_
    )
    assert fixed.pre_release().chunk_top1 == scorer.pre_release().chunk_top1
    with pytest.raises(ConfigError, match="cannot score"):
        fixed.score({0: "other text"})


def test_unknown_company_is_never_named():
    texts, labels, docs = _corpus()
    attacker = TextAttacker(min_df=1).fit(texts, labels)
    labels2 = ["Umbrella" if lab == "Acme" else lab for lab in labels]
    m = ReleaseScorer(attacker, texts, labels2, docs).pre_release()
    acme = np.array([lab == "Acme" for lab in labels])
    assert m.chunk_top1 <= 1 - acme.mean() + 1e-12
    assert not any(d.startswith("Acme") for d in m.named_documents)
    assert m.chance == pytest.approx(1 / 3)


@pytest.mark.parametrize("in_corpus", [False, True])
def test_naming_terms_are_the_released_words_that_weigh_most_for_the_true_company(in_corpus):
    from neswap_core.measure.explain import document_views, naming_terms

    texts, labels, docs = _corpus(seed=3)
    if in_corpus:  # each chunk's words weighed by the fold model blind to it
        attacker = CrossFittedAttacker(min_df=1).fit(texts, labels, docs)
    else:
        attacker = TextAttacker(min_df=1).fit(*_corpus(seed=8)[:2])
    scorer = ReleaseScorer(attacker, texts, labels, docs, name="x")
    before = naming_terms(scorer, {}, "Acme_0", n_words=5)
    assert len(before) == 5 and (before > 0).all() and before.round(WEIGHT_DECIMALS).is_monotonic_decreasing
    assert set(before.index) & set(OWN["Acme"])  # its own company words name it
    # the release removes every Acme word from the document: none of them is left to name it
    rows = [i for i, d in enumerate(docs) if d == "Acme_0"]
    changed = {i: " ".join(w for w in texts[i].split() if w not in OWN["Acme"]) for i in rows}
    after = naming_terms(scorer, changed, "Acme_0", n_words=5)
    assert not set(after.index) & set(OWN["Acme"])
    # the same words as the per-document view of the attack shows
    view = next(v for v in document_views(scorer, changed, n_words=5) if v.doc_id == "Acme_0")
    assert list(view.words.index) == list(after.index)
    # one document's view alone (the app's) is that same view
    (alone,) = document_views(scorer, changed, n_words=5, doc_ids=["Acme_0"])
    assert (alone.doc_id, alone.named, alone.predicted) == (view.doc_id, view.named, view.predicted)
    pd.testing.assert_frame_equal(alone.chunks, view.chunks)
    pd.testing.assert_series_equal(alone.words, view.words)
    with pytest.raises(ConfigError, match="not in the attacked corpus"):
        naming_terms(scorer, {}, "Nobody_0")


def test_term_weights_equal_up_to_float_noise_rank_by_term():
    """A name and the bigram holding it always occur together, so their weights agree up to the
    BLAS summation order, whose last digits differ between CPUs (key/attack.csv listed "name
    atmos; atmos" on one machine and "atmos; name atmos" on another): such ties put the phrase
    first, then rank by term."""
    from neswap_core.measure.term_ranking import ranked_weights

    ranked = ranked_weights(np.array([0.5, 0.5 + 1e-15, 0.7, -0.1, 0.5]),
                            np.array(["atmos", "name atmos", "cloud", "flat", "aruba"], dtype=object))
    assert list(ranked.index) == ["cloud", "name atmos", "aruba", "atmos", "flat"]
    assert ranked["name atmos"] == 0.5 + 1e-15  # the weights themselves are not rounded
    flipped = ranked_weights(np.array([0.5 + 1e-15, 0.5]), np.array(["atmos", "name atmos"], dtype=object))
    assert list(flipped.index) == ["name atmos", "atmos"]


def test_the_top_positive_terms_are_the_whole_ranking_s_ties_and_phrases_included():
    """Issue 21: the views rank only the weights that can be among the shown ones; their first
    ``top`` positive terms are the whole ranking's (a second method: rank everything), with
    ties at the cut (to ``WEIGHT_DECIMALS``), phrases before words and negative weights."""
    from neswap_core.measure.term_ranking import ranked_weights

    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(60)] + [f"w{i} x" for i in range(60)], dtype=object)
    for trial in range(300):
        n = int(rng.integers(0, len(words)))
        terms = rng.choice(words, n, replace=False)
        weights = rng.choice([-0.3, 0.0, 0.1, 0.2, 0.2 + 1e-13, 0.5], n) + rng.normal(0, 1e-3, n) * (trial % 2)
        for top in (0, 1, 3, 10):
            whole = ranked_weights(weights, terms)
            trimmed = ranked_weights(weights, terms, top)
            shown, expected = trimmed[trimmed > 0].head(top), whole[whole > 0].head(top)
            assert list(shown.items()) == list(expected.items())
            assert len(trimmed) <= max(len(whole), 0) and (trimmed > 0).all()


@pytest.mark.parametrize("in_corpus", [False, True])
def test_the_attack_report_sorts_each_vocabulary_once_not_once_per_document(in_corpus, monkeypatch):
    """scikit-learn's get_feature_names_out sorts the whole vocabulary; the per-document views
    asked for it once per document (and fold): 193 s of a 10,000-passage release's writing."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from neswap_core.measure import row_memo
    from neswap_core.measure.explain import document_views

    texts, labels, docs = _corpus(seed=3)
    attacker = (CrossFittedAttacker(min_df=1).fit(texts, labels, docs) if in_corpus
                else TextAttacker(min_df=1).fit(*_corpus(seed=8)[:2]))  # fmt: skip
    scorer = ReleaseScorer(attacker, texts, labels, docs, name="x")
    calls = []
    original = TfidfVectorizer.get_feature_names_out

    def counted(self, *args, **kwargs):
        calls.append(id(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TfidfVectorizer, "get_feature_names_out", counted)
    views = document_views(scorer, {})
    assert len(views) == len(set(docs)) > 2
    assert len(calls) == len(set(calls))  # each fitted vocabulary sorted once
    again = document_views(scorer, {})
    assert [list(v.words.index) for v in again] == [list(v.words.index) for v in views]
    vectorizer = TfidfVectorizer().fit(["aa bb cc", "bb cc dd"])
    assert list(row_memo.feature_names(vectorizer)) == ["aa", "bb", "cc", "dd"]
    vectorizer.fit(["xx yy"])  # refitted: new names
    assert list(row_memo.feature_names(vectorizer)) == ["xx", "yy"]


@pytest.mark.parametrize("in_corpus", [False, True])
def test_the_views_of_every_document_by_blocks_are_the_views_made_at_once(in_corpus, monkeypatch):
    """Issue 21: the attack report's views of every document read the released corpus's
    passages × companies scores whole (1.3 GB per attacker at 100,000 passages and 1,587
    companies); made a block of documents at a time they are the same views, bit for bit,
    and the scores asked of the attacker are never more than a block's."""
    from neswap_core.measure import explain
    from neswap_core.measure.explain import document_views

    texts, labels, docs = _corpus(seed=3)
    attacker = (CrossFittedAttacker(min_df=1).fit(texts, labels, docs) if in_corpus
                else TextAttacker(min_df=1).fit(*_corpus(seed=8)[:2]))  # fmt: skip
    scorer = ReleaseScorer(attacker, texts, labels, docs, name="x")
    rng = np.random.default_rng(4)
    changed = {int(p): " ".join(rng.choice(COMMON + OWN["Acme"], 9)) for p in rng.choice(len(texts), 25, replace=False)}
    at_once = document_views(scorer, changed)
    asked, rows_asked = [], []
    released, rows = scorer.released_log_proba, scorer.log_proba_rows
    monkeypatch.setattr(scorer, "released_log_proba", lambda p, t: (asked.append(len(p)), released(p, t))[1])
    monkeypatch.setattr(scorer, "log_proba_rows", lambda p: (rows_asked.append(len(p)), rows(p))[1])
    monkeypatch.setattr(explain, "SCORE_BLOCK", 7)
    by_blocks = document_views(scorer, changed)
    assert rows_asked.count(10) == len(set(docs))  # a document (10 passages) a block
    assert sum(asked) >= len(changed) and max(rows_asked + asked) < len(texts)
    assert len(by_blocks) == len(at_once) == len(set(docs))
    for a, b in zip(by_blocks, at_once, strict=True):
        assert (a.doc_id, a.named, a.predicted) == (b.doc_id, b.named, b.predicted)
        pd.testing.assert_frame_equal(a.chunks, b.chunks, check_exact=True)
        pd.testing.assert_series_equal(a.words, b.words, check_exact=True)
