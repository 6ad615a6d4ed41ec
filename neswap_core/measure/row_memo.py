"""A fitted vectorizer's rows remembered by text (SPEC §12, issue 21: re-score only what changed).

The panel scores every candidate's changed passages, and the candidates of one run share most
of them (a plan's rounds are cumulative, the document defence's levels nest, the attack report
scores the chosen candidate again). A vectorizer's row depends on its text alone, so each
distinct text is transformed once per fitted vectorizer and process; the matrix handed back has
exactly the rows ``transform`` gives (same values, same column order), so every score computed
from it is the same to the last bit. The memo lives beside the vectorizer, never inside it: a
pickled attacker (the panel's disk cache) carries no texts.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from .word_counts import plain_words, word_counts

#: Distinct texts kept per vectorizer, and the bytes their rows may hold: a row costs 1–1.5 kB
#: for word 1–2-grams but about 11 kB for character 2–5-grams of a 560-byte passage (dev
#: corpus), so a bound on texts alone let the character model's memo grow to about 1 GB per
#: 100,000 passages (issue 21: the sweep's memory). The memo starts over when either is full.
MAX_TEXTS = 100_000
MAX_BYTES = 96_000_000
#: Bytes all of a process's memos may hold together. Attackers and the defender fit one model
#: per line-up of companies (``measure/lineups.py``), so their vectorizers grow with the
#: companies: at 100k synthetic passages each defender scoring worker held ~64 vectorizers'
#: memos and grew by 1.3 GB (issue 21). Past this, the memos used longest ago are dropped.
MAX_TOTAL_BYTES = 384_000_000

_MEMOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_BYTES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # vectorizer -> bytes held
_USED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # vectorizer -> last use (a count)
_CLOCK = [0]
#: The memos are shared by the threads of a process (the app's sessions share fitted
#: attackers): one caller at a time, or a caller that starts a full memo over takes away a row
#: another caller found there a moment before (KeyError), and listing the memos while another
#: thread adds one can raise "dictionary changed size during iteration".
_LOCK = threading.RLock()


def held_bytes() -> int:
    """Bytes every memo of this process holds."""
    return sum(_BYTES.values())


def _make_room(vectorizer, incoming: int) -> None:
    """Drop other vectorizers' memos, used longest ago first, until ``incoming`` more bytes fit
    in ``MAX_TOTAL_BYTES``."""
    total = held_bytes()
    for other in sorted((v for v in list(_BYTES.keys()) if v is not vectorizer), key=lambda v: _USED.get(v, 0)):
        if total + incoming <= MAX_TOTAL_BYTES:
            return
        total -= _BYTES.get(other, 0)
        _MEMOS.pop(other, None)
        _BYTES.pop(other, None)


def transform(vectorizer, texts: Sequence[str]) -> sparse.csr_matrix:
    """``vectorizer.transform(texts)`` as CSR, each distinct text transformed once per process
    (thread-safe: one caller at a time). A scikit-learn count or TF-IDF vectorizer keeps the
    counts (``counts``) and weights them on each call, which is what its ``transform`` does
    after counting, row by row: the same floats, and one memo for its rows and its counts."""
    texts = [str(t) for t in texts]
    if not texts or not _counted(vectorizer):
        with _LOCK:
            return _transform(vectorizer, texts)
    rows = counts(vectorizer, texts)  # a new array each call: weighting it in place is safe
    tfidf = getattr(vectorizer, "_tfidf", None)
    return rows if tfidf is None else sparse.csr_matrix(tfidf.transform(rows, copy=False))


def _counted(vectorizer) -> bool:
    """Whether ``vectorizer.transform`` is scikit-learn's own count (``CountVectorizer``) or
    count-then-weight (``TfidfVectorizer``), not a subclass's."""
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    kind = getattr(type(vectorizer), "transform", None)
    return kind is CountVectorizer.transform or kind is TfidfVectorizer.transform


class _CountsKey:
    """The key of the counts memo of a vectorizer whose ``transform`` is not a count
    (``counts``): it holds no reference to the vectorizer, so the memo goes when the vectorizer
    does."""

    __slots__ = ("__weakref__",)


_COUNTS_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # vectorizer -> _CountsKey


def counts(vectorizer, texts: Sequence[str]) -> sparse.csr_matrix:
    """``CountVectorizer.transform(vectorizer, texts)`` (raw counts, also of a TF-IDF
    vectorizer) as CSR with sorted rows, each distinct text counted once per process.

    The document defence counts the words around every occurrence of every candidate type
    (``measure.count_delta``'s windows) under each member of its defender; on the dev corpus
    one in 5 of the word model's windows and one in 9 of the character model's are new texts
    (the same type's window recurs in each passage and document that has it), and counting
    them was three quarters of the defence's scoring (issue 21). Kept under the vectorizer with
    its ``transform`` rows when those are weighted counts (``_counted``), else apart; bounded
    as every memo is."""
    from sklearn.feature_extraction.text import CountVectorizer

    if not len(texts):
        return sparse.csr_matrix(CountVectorizer.transform(vectorizer, []))
    with _LOCK:
        if _counted(vectorizer):
            key = vectorizer
        else:
            key = _COUNTS_KEYS.get(vectorizer)
            if key is None:
                key = _COUNTS_KEYS[vectorizer] = _CountsKey()
        if _summed_over_words(vectorizer):
            return _transform(vectorizer, [str(t) for t in texts], key,
                              lambda new: _word_sums(vectorizer, new))
        return _transform(vectorizer, [str(t) for t in texts], key, lambda new: _counted_rows(vectorizer, new))


def _counted_rows(vectorizer, texts: list[str]):
    """``CountVectorizer.transform(vectorizer, texts)``: a plain word n-gram vectorizer's in one
    pass over all the texts (``word_counts``: the same integers), any other by scikit-learn."""
    from sklearn.feature_extraction.text import CountVectorizer

    if plain_words(vectorizer):
        rows = word_counts(vectorizer, texts)
        if rows is not None:
            return rows
    return CountVectorizer.transform(vectorizer, texts)


def _summed_over_words(vectorizer) -> bool:
    """Whether the counts of a text are the sum of the counts of its whitespace-separated words:
    scikit-learn's ``char_wb`` analyzer (its n-grams are taken within each word, padded with a
    space) with the default preprocessing and no ``binary`` (which clips the sum)."""
    return (getattr(vectorizer, "analyzer", None) == "char_wb"
            and getattr(vectorizer, "input", None) == "content"
            and getattr(vectorizer, "preprocessor", 0) is None
            and getattr(vectorizer, "strip_accents", 0) is None
            and getattr(vectorizer, "binary", True) is False)  # fmt: skip


class _WordsKey(_CountsKey):
    """The key of a ``char_wb`` vectorizer's memo of single words' counts (``_word_sums``)."""

    __slots__ = ()


_WORDS_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # vectorizer -> _WordsKey


def _word_sums(vectorizer, texts: list[str]) -> sparse.csr_matrix:
    """``CountVectorizer.transform(vectorizer, texts)`` of a ``char_wb`` vectorizer
    (``_summed_over_words``) as the sum of its words' counts, each distinct word counted once
    per process. The analyzer lower-cases the whole text and splits it on whitespace; a word
    lower-cased alone is the same word (Python's one context rule, the final sigma, never looks
    across whitespace), so the integer sums are its counts exactly. The character model counts
    2,000 n-grams of a 560-byte passage one by one in Python; its 100 words are mostly known
    (issue 21: counting was most of the character family's scoring)."""
    from sklearn.feature_extraction.text import CountVectorizer

    key = _WORDS_KEYS.get(vectorizer)
    if key is None:
        key = _WORDS_KEYS[vectorizer] = _WordsKey()
    split = [t.split() for t in texts]
    column: dict[str, int] = {}
    for words in split:
        for w in words:
            if w not in column:
                column[w] = len(column)
    if not column:  # no words at all: every row is empty
        return sparse.csr_matrix(CountVectorizer.transform(vectorizer, texts))
    per_word = _transform(vectorizer, list(column), key, lambda new: CountVectorizer.transform(vectorizer, new))
    indptr = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(words) for words in split], out=indptr[1:])
    at = np.fromiter((column[w] for words in split for w in words), dtype=np.int64, count=int(indptr[-1]))
    occurs = sparse.csr_matrix((np.ones(len(at), dtype=per_word.dtype), at, indptr),
                               shape=(len(texts), len(column)))
    out = sparse.csr_matrix(occurs @ per_word)
    out.sum_duplicates()
    out.sort_indices()
    out.eliminate_zeros()
    return out


def _transform(vectorizer, texts: list[str], key=None, compute=None) -> sparse.csr_matrix:
    """The rows of ``texts``, from the memo kept under ``key`` (default: the vectorizer) and
    ``compute(new texts)`` (default: ``vectorizer.transform``) for those it lacks."""
    key = vectorizer if key is None else key
    _CLOCK[0] += 1
    _USED[key] = _CLOCK[0]
    memo: dict[str, tuple[np.ndarray, np.ndarray]] = _MEMOS.setdefault(key, {})
    new = list(dict.fromkeys(t for t in texts if t not in memo))
    if len(memo) + len(new) > MAX_TEXTS or _BYTES.get(key, 0) > MAX_BYTES:
        memo.clear()
        _BYTES[key] = 0
        new = list(dict.fromkeys(texts))
    if new:
        fresh = sparse.csr_matrix((vectorizer.transform if compute is None else compute)(new))
        fresh.sort_indices()
        _make_room(key, fresh.data.nbytes + fresh.indices.nbytes)
        # each row a view of the block (its bytes are counted once above, and the block goes
        # when the memo starts over or is dropped: every row of it is in this memo)
        bounds, data, indices = fresh.indptr.tolist(), fresh.data, fresh.indices
        for text, lo, hi in zip(new, bounds, bounds[1:], strict=False):  # bounds: one more
            memo[text] = (data[lo:hi], indices[lo:hi])
        _BYTES[key] = _BYTES.get(key, 0) + fresh.data.nbytes + fresh.indices.nbytes
        dtype, width = fresh.dtype, fresh.shape[1]
    else:
        dtype = memo[texts[0]][0].dtype if texts else np.float64
        width = len(vectorizer.vocabulary_)
    rows = [memo[t] for t in texts]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(d) for d, _ in rows], out=indptr[1:])
    data = np.concatenate([d for d, _ in rows]) if rows else np.zeros(0, dtype)
    indices = np.concatenate([i for _, i in rows]) if rows else np.zeros(0, np.int32)
    return sparse.csr_matrix((data.astype(dtype, copy=False), indices, indptr),
                             shape=(len(rows), width))


_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # vectorizer -> (vocabulary, names)


def feature_names(vectorizer) -> np.ndarray:
    """``vectorizer.get_feature_names_out()``, made once per fitted vocabulary and process.

    scikit-learn sorts the whole vocabulary on every call; the attack report asked for it once
    per document, attacker and fold (at 10,000 passages: 193 s of sorting a character model's
    vocabulary, seen with py-spy). A refitted vectorizer has a new vocabulary and new names."""
    vocabulary = vectorizer.vocabulary_
    with _LOCK:
        kept = _NAMES.get(vectorizer)
        if kept is None or kept[0] is not vocabulary:
            kept = (vocabulary, vectorizer.get_feature_names_out())
            _NAMES[vectorizer] = kept
    return kept[1]
