"""Vectorizer rows remembered by text (measure/row_memo.py) are transform's rows, bit for bit."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from neswap_core.measure import row_memo

TRAIN = ["Revenue grew in the cloud segment.", "Our stores in Ohio did well this quarter.",
         "Margins improved; the cloud business grew again.", "Ohio and Texas stores opened."]
ASKED = ["The cloud grew.", "Ohio stores.", "The cloud grew.", "nothing known here",
         "", "Margins improved in Texas.", "Ohio stores."]


def same(a, b) -> None:
    a, b = a.tocsr(), b.tocsr()
    a.sort_indices()
    b.sort_indices()
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert a.data.tobytes() == b.data.tobytes()  # the same floats, not close ones


@pytest.mark.parametrize("vectorizer", [
    TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
    TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5)),
    CountVectorizer(ngram_range=(1, 2)),
])
def test_rows_are_transforms_rows_first_and_second_time(vectorizer):
    vectorizer.fit(TRAIN)
    expected = vectorizer.transform(ASKED)
    same(row_memo.transform(vectorizer, ASKED), expected)  # all new (repeats inside the call)
    same(row_memo.transform(vectorizer, ASKED[::-1]), vectorizer.transform(ASKED[::-1]))  # all known
    mixed = ["Texas cloud.", *ASKED[:3]]
    same(row_memo.transform(vectorizer, mixed), vectorizer.transform(mixed))
    assert row_memo.transform(vectorizer, []).shape == (0, len(vectorizer.vocabulary_))


def test_a_full_memo_starts_over_and_stays_exact(monkeypatch):
    vectorizer = TfidfVectorizer().fit(TRAIN)
    monkeypatch.setattr(row_memo, "MAX_TEXTS", 3)
    for batch in (ASKED[:2], ASKED[2:5], ASKED):  # the last batch alone holds more than 3 texts
        same(row_memo.transform(vectorizer, batch), vectorizer.transform(batch))
        assert len(row_memo._MEMOS[vectorizer]) <= max(3, len(set(batch)))


def test_the_memo_is_bounded_in_bytes_and_stays_exact(monkeypatch):
    """A character model's rows are ~10 times a word model's: the bound is on bytes too."""
    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5)).fit(TRAIN)
    one = vectorizer.transform(["Ohio stores."])
    monkeypatch.setattr(row_memo, "MAX_BYTES", 2 * (one.data.nbytes + one.indices.nbytes))
    held = []
    for batch in ([t] for t in ASKED * 2):
        same(row_memo.transform(vectorizer, batch), vectorizer.transform(batch))
        held.append(row_memo._BYTES[vectorizer])
    # never more than the bound plus one batch's rows (the bound is checked before adding)
    biggest = max(r.data.nbytes + r.indices.nbytes for r in (vectorizer.transform([t]) for t in ASKED))
    assert max(held) <= row_memo.MAX_BYTES + biggest
    assert len(row_memo._MEMOS[vectorizer]) < len(set(ASKED))  # it started over


def test_every_memo_of_a_process_together_is_bounded_oldest_dropped_first(monkeypatch):
    """One model per line-up: the vectorizers grow with the companies, so the bound is on all
    of a process's memos together (issue 21: a defender scoring worker grew by 1.3 GB at 100k)."""
    vectorizers = [TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5)).fit(TRAIN) for _ in range(12)]
    row = vectorizers[0].transform(["Ohio stores."])
    monkeypatch.setattr(row_memo, "MAX_TOTAL_BYTES", 5 * len(ASKED) * (row.data.nbytes + row.indices.nbytes))
    for v in vectorizers:
        same(row_memo.transform(v, ASKED), v.transform(ASKED))
        assert sum(row_memo._BYTES.get(w, 0) for w in vectorizers) <= row_memo.MAX_TOTAL_BYTES
    kept = [v in row_memo._MEMOS for v in vectorizers]
    assert kept[-1] and not kept[0] and 1 < sum(kept) < len(vectorizers)  # the oldest went first
    same(row_memo.transform(vectorizers[0], ASKED), vectorizers[0].transform(ASKED))  # exact again


@pytest.mark.parametrize("vectorizer", [
    TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
    TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5)),
    CountVectorizer(ngram_range=(1, 2)),
])
def test_counts_are_count_vectorizers_rows_and_kept_apart_from_the_transform(vectorizer):
    """``counts`` gives raw counts (also of a TF-IDF vectorizer) in a memo of their own: one
    memo for both would hand TF-IDF weights to a caller that asked for counts, or back."""
    vectorizer.fit(TRAIN)
    raw = CountVectorizer.transform(vectorizer, ASKED)
    raw.sort_indices()
    same(row_memo.transform(vectorizer, ASKED), vectorizer.transform(ASKED))
    same(row_memo.counts(vectorizer, ASKED), raw)  # after the transform memo holds the same texts
    same(row_memo.counts(vectorizer, ASKED[::-1]), CountVectorizer.transform(vectorizer, ASKED[::-1]))
    same(row_memo.transform(vectorizer, ASKED), vectorizer.transform(ASKED))
    assert row_memo.counts(vectorizer, []).shape == (0, len(vectorizer.vocabulary_))


def test_a_text_is_counted_once_for_both_its_counts_and_its_weights(monkeypatch):
    """A TF-IDF vectorizer's memo holds counts and weights them per call, as its transform does
    after counting: the defence asks for a passage's rows and then for its counts, and counting
    it twice was a sixth of its scoring (issue 21)."""
    calls: list[int] = []
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(TRAIN)
    real, counting = CountVectorizer.transform, row_memo._counted_rows

    def counted(vectorizer, texts):
        calls.append(len(texts))
        return counting(vectorizer, texts)

    monkeypatch.setattr(row_memo, "_counted_rows", counted)  # the memo's one way of counting
    same(row_memo.counts(vectorizer, ASKED), real(vectorizer, ASKED))
    same(row_memo.transform(vectorizer, ASKED[::-1]), TfidfVectorizer.transform(vectorizer, ASKED[::-1]))
    same(row_memo.counts(vectorizer, ASKED[:3]), real(vectorizer, ASKED[:3]))
    assert calls == [len(set(ASKED))]  # the memo's one count of the distinct texts
    monkeypatch.setattr(row_memo, "_counted_rows", counting)
    assert vectorizer not in row_memo._COUNTS_KEYS  # one memo, the vectorizer's own


#: Texts where a word-by-word reading could go wrong: Greek capitals whose lower case depends
#: on the end of the word (final sigma), a capital whose lower case is two characters, every
#: kind of whitespace, empty and blank texts, punctuation stuck to words.
ODD = ["ΟΔΟΣ ΣΟΦΟΣ ΣΣ Σ.", "İstanbul  İİ\u00a0x\u2003yz\tq\nr", "Hello  World,hello", "", "   ",
       "a", "ß STRASSE ǅ ǆ", "Revenue grew 12% (ex-FX) in Q3.", "ΟΔΟΣ\u00a0ΣΟΦΟΣ"]


@pytest.mark.parametrize("vectorizer", [
    TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True),
    TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 3), lowercase=False),
    CountVectorizer(analyzer="char_wb", ngram_range=(2, 4)),
])
def test_character_counts_are_the_sums_of_their_words_counts_exactly(vectorizer, monkeypatch):
    """A ``char_wb`` model's counts are summed from its words' (row_memo._word_sums): the same
    integers as its own count, each distinct word counted once (issue 21)."""
    vectorizer.fit(TRAIN + ODD)
    asked = ODD + ASKED + [t.upper() for t in ASKED]
    expected_counts = CountVectorizer.transform(vectorizer, asked)
    expected_counts.sort_indices()
    counted: list[str] = []
    real = CountVectorizer.transform

    def spy(self, texts):
        counted.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(CountVectorizer, "transform", spy)
    same(row_memo.counts(vectorizer, asked), expected_counts)
    assert set(counted) <= {w for t in asked for w in t.split()}  # words, never whole texts
    assert len(counted) == len(set(counted))  # each once
    monkeypatch.setattr(CountVectorizer, "transform", real)
    same(row_memo.transform(vectorizer, asked[::-1]), vectorizer.transform(asked[::-1]))
    binary = CountVectorizer(analyzer="char_wb", ngram_range=(2, 3), binary=True).fit(TRAIN)
    same(row_memo.counts(binary, asked), binary.transform(asked))  # clipped: counted whole


def test_a_vectorizer_with_its_own_transform_keeps_its_counts_apart():
    class Doubled(CountVectorizer):
        def transform(self, raw_documents):
            return super().transform(raw_documents) * 2

    vectorizer = Doubled().fit(TRAIN)
    same(row_memo.transform(vectorizer, ASKED), vectorizer.transform(ASKED))
    same(row_memo.counts(vectorizer, ASKED), CountVectorizer.transform(vectorizer, ASKED))
    same(row_memo.transform(vectorizer, ASKED), vectorizer.transform(ASKED))
    key = row_memo._COUNTS_KEYS[vectorizer]
    assert row_memo._BYTES[key] > 0 and row_memo._BYTES[vectorizer] > 0


def test_scores_from_remembered_rows_are_identical_and_the_pickle_carries_no_texts():
    from neswap_core.measure.attack import TextAttacker

    attacker = TextAttacker().fit(TRAIN * 3, ["A", "B", "A", "B"] * 3)
    size = len(pickle.dumps(attacker))
    first = attacker.predict_log_proba(ASKED)
    again = attacker.predict_log_proba(ASKED[::-1])[::-1]
    assert first.tobytes() == again.tobytes()
    plain = attacker.log_proba_from_features(attacker.vectorizer_.transform(ASKED))
    assert first.tobytes() == plain.tobytes()
    assert len(pickle.dumps(attacker)) == size  # the memo lives beside the model, not in it


class _PausingVectorizer(TfidfVectorizer):
    """A fitted vectorizer whose ``transform`` in the thread named "first" waits until the
    other caller has finished (or, when that caller cannot run meanwhile, a bound)."""

    paused = other_done = None

    def transform(self, raw_documents):
        import threading

        if threading.current_thread().name == "first" and self.other_done is not None:
            self.paused.set()
            self.other_done.wait(timeout=2.0)
        return super().transform(raw_documents)


def test_two_threads_sharing_one_vectorizer_get_its_rows(monkeypatch):
    """The app's sessions are threads of one process and share fitted attackers: a caller that
    started over the memo (full) while another was transforming its new texts made that one's
    lookup of a text it had found in the memo fail (KeyError). One caller at a time now."""
    import threading

    vectorizer = _PausingVectorizer(ngram_range=(1, 2)).fit(TRAIN)
    monkeypatch.setattr(row_memo, "MAX_TEXTS", 4)
    row_memo.transform(vectorizer, [ASKED[0]])  # known before both calls
    vectorizer.paused, vectorizer.other_done = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    results: dict[str, object] = {}

    def first() -> None:  # one known text and one new: pauses inside transform
        try:
            results["first"] = row_memo.transform(vectorizer, [ASKED[0], "Texas cloud."])
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    a = threading.Thread(target=first, name="first")
    a.start()
    assert vectorizer.paused.wait(timeout=60)  # the first caller is transforming its new text
    results["second"] = row_memo.transform(vectorizer, TRAIN + [ASKED[1], ASKED[3]])  # starts the memo over
    vectorizer.other_done.set()
    a.join()
    assert not errors, errors
    same(results["first"], TfidfVectorizer.transform(vectorizer, [ASKED[0], "Texas cloud."]))
    same(results["second"], TfidfVectorizer.transform(vectorizer, TRAIN + [ASKED[1], ASKED[3]]))
