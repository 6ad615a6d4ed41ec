"""Margins from changed terms only (``measure/edit_margins.py``, issue 21): the same numbers as
scoring the edited texts whole and differencing two companies' log-probabilities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from neswap_core.measure.count_delta import replaced_text
from neswap_core.measure.panel import LinearTextFamily, LineupFamily

SAMPLE = Path(__file__).resolve().parent.parent / "neswap_core" / "data" / "sample"


@pytest.fixture(scope="module")
def passages():
    from neswap_core.measure.reading import sentence_windows
    from neswap_core.text.loading import load_corpus

    corpus = load_corpus(SAMPLE)
    texts, labels = [], []
    for doc in corpus.documents:
        for window in sentence_windows(doc.text, 3):
            texts.append(window)
            labels.append(corpus.protected_value(doc))
    return texts, labels


def _edits(texts, rng, n=60):
    """Random edits: one to three words of a passage replaced (by a word, a placeholder or
    nothing), one passage replaced whole by a placeholder and one by nothing (its row emptied:
    scored from the row itself, where Q + ΔQ would be rounding noise)."""
    edits = []
    for i in rng.choice(len(texts), size=n, replace=False):
        text = texts[i]
        starts = [k for k in range(len(text)) if (k == 0 or text[k - 1] == " ") and text[k] != " "]
        spans = []
        for s in sorted(rng.choice(starts, size=min(3, len(starts)), replace=False)):
            e = text.find(" ", s)
            e = len(text) if e < 0 else e
            spans.append((int(s), int(e), str(rng.choice(["[Company Name]", "revenue", ""]))))
        edits.append((int(i), spans))
    edits.append((0, [(0, len(texts[0]), "[Company Name]")]))
    edits.append((1, [(0, len(texts[1]), "")]))
    return edits


def _whole(fam, texts, edits, a, b):
    """The margins the slow way: every text and every edited text scored whole."""
    classes = list(fam.classes_)
    before = fam.chunk_scores(texts)
    after = fam.chunk_scores([replaced_text(texts[i], spans) for i, spans in edits])
    ia, ib = classes.index(a), classes.index(b)
    return before[:, ia] - before[:, ib], after[:, ia] - after[:, ib]


@pytest.mark.parametrize("analyzer, ngrams", [("word", (1, 2)), ("char_wb", (2, 5))])
def test_margins_from_changed_terms_equal_the_whole_texts_scored(passages, analyzer, ngrams):
    texts, labels = passages
    fam = LinearTextFamily(analyzer=analyzer, ngram_range=ngrams, min_df=2).fit(texts, labels)
    edits = _edits(texts, np.random.default_rng(0))
    a, b = sorted(set(labels))[:2]
    before, after = fam.edit_margins(texts, edits, a, b)
    want_before, want_after = _whole(fam, texts, edits, a, b)
    np.testing.assert_allclose(before, want_before, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(after, want_after, rtol=1e-9, atol=1e-10)
    assert np.abs(after - before[[i for i, _ in edits]]).max() > 0.01  # the edits change margins


def test_two_companies_and_line_ups(passages):
    """A two-class model (one coefficient row) and a line-up family, by its line-up's part."""
    texts, labels = passages
    companies = sorted(set(labels))
    pair = [k for k, y in enumerate(labels) if y in companies[:2]]
    two = LinearTextFamily(min_df=2).fit([texts[k] for k in pair], [labels[k] for k in pair])
    sub = [texts[k] for k in pair]
    edits = _edits(sub, np.random.default_rng(1), n=20)
    got = two.edit_margins(sub, edits, companies[1], companies[0])
    want = _whole(two, sub, edits, companies[1], companies[0])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)

    halves = [companies[:5], companies[5:]]
    parts = []
    for half in halves:
        rows = [k for k, y in enumerate(labels) if y in half]
        parts.append(LinearTextFamily(min_df=2).fit([texts[k] for k in rows], [labels[k] for k in rows]))
    lineup = np.array([0 if c in halves[0] else 1 for c in companies])
    fam = LineupFamily(parts, companies, lineup)
    edits = _edits(texts, np.random.default_rng(2), n=20)
    got = fam.edit_margins(texts, edits, companies[6], companies[8])
    want = parts[1].edit_margins(texts, edits, companies[6], companies[8])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert fam.edit_margins(texts, edits, companies[0], companies[8]) is None  # two line-ups


def test_the_defence_fractions_are_the_same_as_scoring_whole_rows(passages, monkeypatch):
    """``document_budget._member_fall`` with the margins and with every company's scores of the
    edited rows (the path before): the same fractions up to rounding."""
    from neswap_core.generate import document_budget
    from neswap_core.generate.document_budget import DocJob, _member_fall

    texts, labels = passages
    fam = LinearTextFamily(min_df=2).fit(texts, labels)
    company = labels[0]
    base = [t for t, y in zip(texts, labels, strict=True) if y == company]
    edits = _edits(base, np.random.default_rng(3), n=15)
    types = [k % 4 for k in range(len(edits))]
    rival = sorted(set(labels) - {company})[0]
    job = DocJob(company, base, 4, types, edits, rival)
    fast = _member_fall(fam, job)
    monkeypatch.setattr(LinearTextFamily, "edit_margins", lambda *args, **kwargs: None)
    slow = document_budget._member_fall(fam, job)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)
    assert np.abs(fast).max() > 0


def test_whole_document_margins_from_changed_terms(passages, monkeypatch):
    """The retrieval member's margins of a document under each candidate type: the same
    fractions as summing the edited passages' counts whole and scoring every document."""
    from neswap_core.generate import document_budget
    from neswap_core.generate.document_budget import DocJob, _member_fall
    from neswap_core.measure.panel import RetrievalFamily

    texts, labels = passages
    fam = RetrievalFamily().fit(texts, labels)
    company = labels[0]
    base = [t for t, y in zip(texts, labels, strict=True) if y == company]
    edits = _edits(base, np.random.default_rng(4), n=15)
    types = [k % 4 for k in range(len(edits))]
    job = DocJob(company, base, 5, types, edits, sorted(set(labels) - {company})[1])
    fast = _member_fall(fam, job)
    monkeypatch.setattr(RetrievalFamily, "type_margins", lambda *args, **kwargs: None)
    slow = document_budget._member_fall(fam, job)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)
    assert np.abs(fast[:4]).max() > 0 and fast[4] == 0  # type 4 changes nothing

    # a document emptied by one type: scored whole (the difference of norms would be noise)
    emptied = [(i, [(0, len(t), "")]) for i, t in enumerate(base)]
    job = DocJob(company, base, 2, [0] * len(emptied) + [1], [*emptied, edits[0]], None)
    monkeypatch.undo()
    fast = _member_fall(fam, job)
    monkeypatch.setattr(RetrievalFamily, "type_margins", lambda *args, **kwargs: None)
    np.testing.assert_allclose(fast, document_budget._member_fall(fam, job), rtol=1e-9, atol=1e-12)
