"""The attacker panel in the candidate table (choose/attack_columns.py, measure/panel_scorers.py)
and the tone columns (measure/tone.ToneScorer), each against a second method.

Reading: the first 32 sentences of each bundled sample call (windows of 4); corpus: the rest of
each call, as chunks. The release scorers of the panel must give the figures of the panel's own
``PanelScorer`` (written independently in measure/panel.py), and the candidate table's primary
columns must be the maximum over the panel's columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from neswap_core.choose.attack_columns import (
    IN_CORPUS,
    PANEL,
    READING,
    measured_row,
    primary_name,
    risk_column,
)
from neswap_core.choose.scorers import build_scorers
from neswap_core.corpus import Chunk
from neswap_core.measure.attack import TextAttacker
from neswap_core.measure.panel import PER_PROCESS, AttackerPanel
from neswap_core.measure.panel_scorers import family_scorers, family_term_weights
from neswap_core.measure.term_ranking import WEIGHT_DECIMALS
from neswap_core.measure.tone import ToneScorer, tone_report
from tests.test_panel import HEAD, _windows


@pytest.fixture(scope="module")
def setup():
    from neswap_core.models.embedding import Embedder

    windows = _windows()
    reading = [(w, doc.split("_")[0], doc) for doc, ws in windows.items() for w in ws[:HEAD]]
    chunks = []
    for doc, ws in windows.items():
        for i, w in enumerate(ws[HEAD:]):
            chunks.append(Chunk(f"{doc}#{i:04d}", doc, i, w, doc.split("_")[0]))
    texts, labels, ids = (list(x) for x in zip(*reading, strict=True))
    attacker = TextAttacker().fit(texts, labels)
    attacker.units_ = (texts, labels, ids)
    return attacker, chunks, Embedder().encode


def _changed(chunks, seed=5, share=0.4):
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(chunks), size=int(share * len(chunks)), replace=False)
    out = {}
    for p in picks:
        words = chunks[p].text.split()
        donor = chunks[int(rng.integers(len(chunks)))].text.split()
        out[int(p)] = " ".join(words[::2] + donor[: len(donor) // 3])
    return out


def test_release_scorers_agree_with_the_panels_own_scorer(setup):
    attacker, chunks, embed = setup
    texts, labels, ids = attacker.units_
    panel = AttackerPanel(("char", "embedding", "retrieval", "bm25", "nb", "svm")).fit(
        texts, labels, ids, embed(texts))
    c_texts = [c.text for c in chunks]
    c_labels = [c.protected for c in chunks]
    c_docs = [c.doc_id for c in chunks]
    scorers = family_scorers(panel, c_texts, c_labels, c_docs, embed=embed)
    reference = panel.scorer(c_texts, c_labels, c_docs, embed(c_texts), embed)
    changed = _changed(chunks)
    expected = reference.score(changed)
    for name, scorer in scorers.items():
        got = scorer.score(changed)
        assert got.chunk_top1 == pytest.approx(expected.families[name].chunk_accuracy), name
        assert got.document_accuracy == pytest.approx(expected.families[name].document_accuracy), name
        pre = scorer.pre_release()
        assert pre.chunk_top1 == pytest.approx(reference.score().families[name].chunk_accuracy)
    # score_steps (a swap run's prefixes, one vectorisation) = scoring each prefix on its own
    items = list(changed.items())
    steps = [dict(items[: len(items) // 2]), dict(items[len(items) // 2:])]
    for name in ("retrieval", "char", "embedding"):
        by_steps = scorers[name].score_steps(steps)
        assert by_steps[0].document_accuracy == pytest.approx(
            scorers[name].score(steps[0]).document_accuracy)
        assert by_steps[1].chunk_top1 == pytest.approx(scorers[name].score(changed).chunk_top1)
        assert by_steps[1].document_accuracy == pytest.approx(
            scorers[name].score(changed).document_accuracy)


def test_candidate_columns_are_per_family_and_the_primary_is_the_worst(setup, tmp_path):
    attacker, chunks, embed = setup
    scorers = build_scorers(chunks, attacker, in_corpus=True, families=("word", "char", "retrieval"),
                            embed=embed, cache_dir=str(tmp_path))
    assert set(scorers) == {READING, "char", "retrieval", IN_CORPUS}
    assert primary_name(scorers) == PANEL
    row = measured_row(scorers, _changed(chunks))
    members = (READING, "char", "retrieval")
    for level in ("chunk", "document"):
        values = {m: row[risk_column(level, m)] for m in members}
        assert row[risk_column(level)] == max(values.values())
        assert values[row[f"worst_{level}_attacker"]] == max(values.values())
    assert row["attacker"] == PANEL and row["chance"] == pytest.approx(1 / 10)
    # the in-corpus attacker is measured but is not a member of the panel's worst case
    assert risk_column("chunk", IN_CORPUS) in row
    # fitted once per reading: a second build loads the cached panel
    from neswap_core.measure.panel_cache import PANEL_FOLDER

    assert len(list((tmp_path / PANEL_FOLDER).glob("*.pkl"))) == 1
    again = build_scorers(chunks, attacker, in_corpus=False, families=("word", "char", "retrieval"),
                          cache_dir=str(tmp_path))
    assert again["char"].attacker.family.__dict__.keys() == scorers["char"].attacker.family.__dict__.keys()
    assert measured_row(again, {})["chunk_accuracy.char"] == measured_row(scorers, {})["chunk_accuracy.char"]


def test_a_second_build_reads_the_pre_release_scores_and_measures_alike(setup, tmp_path, monkeypatch):
    """Issue 21 (warm re-run): the attackers' scores of the unchanged corpus are kept on disk by
    what the attackers learn from and the texts they score; a second build scores no text of the
    corpus again and measures every release as the first; other texts are scored afresh."""
    from neswap_core.measure.attack import CrossFittedAttacker
    from neswap_core.measure.panel import RetrievalFamily
    from neswap_core.measure.panel_scorers import FamilyAttacker

    attacker, chunks, _ = setup
    families = ("word", "char", "retrieval")
    first = build_scorers(chunks, attacker, in_corpus=True, families=families, cache_dir=str(tmp_path))
    whole: list[str] = []  # calls that score every chunk of a corpus

    def spy(cls, method):
        real = getattr(cls, method)

        def counted(self, *args, _real=real):
            if len(args[-1]) >= len(chunks) - 1:
                whole.append(f"{cls.__name__}.{method}")
            return _real(self, *args)

        monkeypatch.setattr(cls, method, counted)

    for cls in (TextAttacker, CrossFittedAttacker, FamilyAttacker):
        spy(cls, "log_proba_at")
    spy(RetrievalFamily, "counts")
    second = build_scorers(chunks, attacker, in_corpus=True, families=families, cache_dir=str(tmp_path))
    assert whole == [] and set(second) == set(first)
    changed = _changed(chunks)
    for name in first:
        np.testing.assert_array_equal(second[name].log_proba_, first[name].log_proba_)
        every = np.arange(len(first[name].documents_))
        np.testing.assert_array_equal(second[name].doc_log_proba_rows(every), first[name].doc_log_proba_rows(every))
        a, b = first[name].score(changed), second[name].score(changed)
        assert (a.chunk_top1, a.document_accuracy, a.chunk_top5) == (b.chunk_top1, b.document_accuracy,
                                                                     b.chunk_top5), name  # fmt: skip
    # another corpus (one passage fewer) is not read from the first one's entry
    third = build_scorers(chunks[:-1], attacker, in_corpus=True, families=families, cache_dir=str(tmp_path))
    assert third[READING].log_proba_.shape[0] == len(chunks) - 1
    assert {"TextAttacker.log_proba_at", "FamilyAttacker.log_proba_at", "RetrievalFamily.counts"} <= set(whole)
    # the in-corpus attacker's pre-release scores are its out-of-fold ones, made by its fit
    assert "CrossFittedAttacker.log_proba_at" not in whole


def _large_arrays(obj, seen=None, floor: int = 4096):
    """Every numpy array of ``floor`` bytes or more in ``obj``'s attributes, containers and
    sparse matrices."""
    import scipy.sparse as sp

    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [obj] if obj.nbytes >= floor and obj.dtype != object else []
    if sp.issparse(obj):
        return [a for a in (obj.data, obj.indices, obj.indptr) if a.nbytes >= floor]
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):  # not a per-process product
        items = [v for k, v in vars(obj).items() if k not in PER_PROCESS + ("_columns",)]  # (measure.panel, .lineups)
    else:
        return []
    return [a for item in items for a in _large_arrays(item, seen, floor)]


def _mapped(x: np.ndarray) -> bool:
    import mmap

    base = x
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def test_a_cold_build_holds_the_attackers_arrays_mapped_and_measures_alike(setup, tmp_path):
    """Issue 21 (memory at 100,000 passages): the in-corpus attacker and the panel, fitted in a
    cold run with a cache folder, are handed on as a warm run reads them, their arrays mapped
    from the cache files (not this process's own memory: 2.7 GB at 100k), and measure every
    release exactly as the same attackers kept nowhere."""
    attacker, chunks, embed = setup
    families = ("word", "char", "embedding", "retrieval")
    vectors = embed([c.text for c in chunks])
    cold = build_scorers(chunks, attacker, in_corpus=True, families=families, embed=embed,
                         vectors=vectors, cache_dir=str(tmp_path))  # fmt: skip
    kept_nowhere = build_scorers(chunks, attacker, in_corpus=True, families=families, embed=embed,
                                 vectors=vectors, cache_dir=None)  # fmt: skip
    for name in (IN_CORPUS, "char", "embedding", "retrieval"):
        model = cold[name].attacker
        arrays = _large_arrays(model.family if name != IN_CORPUS else model)
        assert arrays and all(_mapped(a) and not a.flags.writeable for a in arrays), name
        assert not any(_mapped(a) for a in _large_arrays(
            kept_nowhere[name].attacker.family if name != IN_CORPUS else kept_nowhere[name].attacker))
    changed = _changed(chunks)
    for name in kept_nowhere:
        np.testing.assert_array_equal(cold[name].log_proba_, kept_nowhere[name].log_proba_)
        a, b = cold[name].score(changed), kept_nowhere[name].score(changed)
        assert (a.chunk_top1, a.document_accuracy, a.chunk_top5) == (b.chunk_top1, b.document_accuracy,
                                                                     b.chunk_top5), name  # fmt: skip


def test_without_a_reading_the_in_corpus_attacker_is_primary(setup):
    _, chunks, _ = setup
    scorers = build_scorers(chunks, None, families=("word", "char"))
    assert list(scorers) == [IN_CORPUS] and primary_name(scorers) == IN_CORPUS
    row = measured_row(scorers, {})
    assert row["attacker"] == IN_CORPUS and "worst_chunk_attacker" not in row


def test_retrieval_words_are_the_ngrams_of_the_true_companys_cosine(setup):
    attacker, chunks, _ = setup
    texts, labels, ids = attacker.units_
    panel = AttackerPanel(("retrieval",)).fit(texts, labels, ids)
    fam = panel.families_["retrieval"]
    doc = [c.text for c in chunks if c.doc_id == chunks[0].doc_id]
    weights = family_term_weights(fam, doc, chunks[0].protected)
    # the contributions add up to the document's cosine with its company's profile
    k = list(fam.classes_).index(chunks[0].protected)
    cosine = fam.doc_scores(fam.counts(doc).sum(axis=0))[0, k]
    assert weights.sum() == pytest.approx(cosine)
    # largest first (ties to WEIGHT_DECIMALS ranked by phrase length and term: ranked_weights)
    assert weights.round(WEIGHT_DECIMALS).is_monotonic_decreasing and (weights > 0).all()


def test_tone_columns_match_the_tone_report_on_whole_documents(setup):
    _, chunks, _ = setup
    texts, docs = [c.text for c in chunks], [c.doc_id for c in chunks]
    changed = _changed(chunks, seed=11)
    got = ToneScorer(texts, docs).score(changed)
    released = [changed.get(i, t) for i, t in enumerate(texts)]
    order = list(dict.fromkeys(sorted(docs)))
    join = lambda ts: [" ".join(t for t, d in zip(ts, docs, strict=True) if d == doc) for doc in order]  # noqa: E731
    report = tone_report(join(texts), join(released))
    assert got["tone_correlation"] == pytest.approx(report["tone_corr"])
    assert got["tone_kept"] == pytest.approx(report["tone_words_kept"])
    assert ToneScorer(texts, docs).score({}) == {"tone_correlation": pytest.approx(1.0), "tone_kept": 1.0}
    assert isinstance(pd.Series(got).sum(), float)
    # one scorer for every candidate remembers released texts' counts: the same figures again,
    # and a text released at two positions counts at each
    scorer = ToneScorer(texts, docs)
    assert scorer.score({}) == scorer.score({i: t for i, t in enumerate(texts)})
    assert scorer.score(changed) == got and scorer.score(changed) == got
    twice = {0: changed[min(changed)], len(texts) - 1: changed[min(changed)]}
    released = [twice.get(i, t) for i, t in enumerate(texts)]
    report = tone_report(join(texts), join(released))
    assert scorer.score(twice)["tone_kept"] == pytest.approx(report["tone_words_kept"])



def _same_scorers(alone, other, chunks):
    """Every scorer's pre-release scores equal bit for bit, and one release scored alike."""
    changed = _changed(chunks)
    for name in alone:
        np.testing.assert_array_equal(other[name].log_proba_, alone[name].log_proba_)
        a, b = alone[name].score(changed), other[name].score(changed)
        assert (a.chunk_top1, a.document_accuracy) == (b.chunk_top1, b.document_accuracy), name


def test_the_panel_and_the_in_corpus_attacker_are_fitted_at_once(setup, monkeypatch):
    """Issue 21: the panel's char fit holds one core for minutes; the in-corpus attacker's folds
    are fitted at the same time, in the same pool of workers (once the panel has queued its
    fits, each waits at a barrier for the other: one after the other would break it), and the
    scorers are those of the fits made one after the other."""
    import threading

    from neswap_core.choose import scorers as scorers_mod
    from neswap_core.models import fit_processes

    attacker, chunks, embed = setup
    families = ("word", "char", "retrieval")
    alone = build_scorers(chunks, attacker, in_corpus=True, families=families, cache_dir=None)
    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 0)  # the panel's fits go to the workers
    barrier = threading.Barrier(2, timeout=60)
    real_panel, real_corpus = scorers_mod.fitted_panel, scorers_mod.in_corpus_attacker

    def panel(*args, **kwargs):
        out = real_panel(*args, **kwargs)  # queues the families' fits: the folds may start
        barrier.wait()
        return out

    def corpus(*args, **kwargs):
        barrier.wait()
        return real_corpus(*args, **kwargs)

    monkeypatch.setattr(scorers_mod, "fitted_panel", panel)
    monkeypatch.setattr(scorers_mod, "in_corpus_attacker", corpus)
    together = build_scorers(chunks, attacker, in_corpus=True, families=families, cache_dir=None)
    assert list(together) == list(alone) == [READING, "char", "retrieval", IN_CORPUS]
    _same_scorers(alone, together, chunks)


def test_attacker_fits_started_beside_other_work_give_the_same_scorers(setup, monkeypatch):
    """Issue 21: at 100,000 passages ``run_release`` starts the panel's and the in-corpus
    attacker's fits in a thread once the walk goes on in one process. Started, they run while
    this thread waits (the in-corpus fit signals it from the background: without ``start`` the
    wait would time out), and the scorers built from them are those of fits made in place."""
    import threading

    from neswap_core.choose import scorers as scorers_mod
    from neswap_core.models import fit_processes

    attacker, chunks, _ = setup
    families = ("word", "char", "retrieval")
    alone = build_scorers(chunks, attacker, in_corpus=True, families=families, cache_dir=None)
    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 0)  # the fits go to worker processes
    fitted = threading.Event()
    real_corpus = scorers_mod.in_corpus_attacker

    def corpus(*args, **kwargs):
        out = real_corpus(*args, **kwargs)
        fitted.set()
        return out

    monkeypatch.setattr(scorers_mod, "in_corpus_attacker", corpus)
    fits = scorers_mod.attacker_fits(chunks, attacker, in_corpus=True, families=families, cache_dir=None)
    fits.start()
    assert fits.started and fitted.wait(timeout=300)  # fitted while this thread did nothing
    beside = build_scorers(chunks, attacker, in_corpus=True, families=families, cache_dir=None, fits=fits)
    assert list(beside) == list(alone) == [READING, "char", "retrieval", IN_CORPUS]
    _same_scorers(alone, beside, chunks)
    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 10**9)  # below the size: start does nothing
    small = scorers_mod.attacker_fits(chunks, attacker, in_corpus=True, families=families, cache_dir=None)
    small.start()
    assert not small.started


def test_the_embedding_family_keeps_the_corpus_vectors_as_given_and_scores_alike(setup):
    """Issue 21: the embedding family's scorer held a float64 copy of every passage's vector
    (0.3 GB at 100k passages) beside the preparation's float32 ones; it now keeps them as
    given, and widening a looked-up row is exact, so every score is the copy's, bit for bit."""
    _, chunks, embed = setup
    texts = [c.text for c in chunks]
    labels, ids = [c.protected for c in chunks], [c.doc_id for c in chunks]
    panel = AttackerPanel(("embedding",)).fit(texts, labels, ids, embed(texts))
    vectors = np.asarray(embed(texts), np.float32)
    scorer = family_scorers(panel, texts, labels, ids, vectors=vectors, embed=embed)["embedding"]
    assert scorer.attacker.pre_vectors is vectors or np.shares_memory(scorer.attacker.pre_vectors, vectors)
    copied = family_scorers(panel, texts, labels, ids, vectors=vectors.astype(np.float64), embed=embed)["embedding"]
    assert np.array_equal(scorer.log_proba_, copied.log_proba_)
    changed = _changed(chunks)
    a, b = scorer.score(changed), copied.score(changed)
    pd.testing.assert_frame_equal(a.documents, b.documents, check_exact=True)
    assert (a.chunk_top1, a.chunk_top5) == (b.chunk_top1, b.chunk_top5)
