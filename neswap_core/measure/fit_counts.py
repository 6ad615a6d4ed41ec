"""A vectorizer's fit with its counting step done in bulk (issue 21: the attackers' fits).

``CountVectorizer.fit_transform`` (and ``TfidfVectorizer``'s) spends most of its time in
``_count_vocab``: every n-gram of every text looked up one by one in Python (at 10k synthetic
passages about 60 CPU-seconds of the defender's and the attackers' fits, most of it the
character model's 2–5-grams). ``counting_in_bulk`` lets scikit-learn's own ``fit_transform``
run — validation, ``min_df``/``max_df``/``max_features``, sorting, TF-IDF — and replaces only
that step, for the fit's duration, with one that gives the same vocabulary (the same indices,
assigned in order of first appearance as scikit-learn does) and the same matrix, for the
``char_wb`` analyzer: the n-grams of a text are its whitespace-separated words' n-grams in turn
(scikit-learn lower-cases the whole text, then takes each word apart), so each distinct word's
n-grams are made once, by scikit-learn's own ``_char_wb_ngrams``, and a text's counts are the
sum of its words' (an integer sparse product): 2–2.5 times faster on dev passages. A word
analyzer was tried the same way (one ``findall``, n-grams ordered as scikit-learn meets them)
and was slower than scikit-learn's own count: word fits stay scikit-learn's.

Anything else (another analyzer, a text that is not a string, a fixed vocabulary) is counted by
scikit-learn. ``tests/test_fit_counts.py`` checks vocabulary, matrix and the pickled fitted
vectorizer against scikit-learn's as a second method.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter

import numpy as np
from scipy import sparse


def _char_wb_plain(vectorizer) -> bool:
    """scikit-learn's own ``char_wb`` analyzer on string content."""
    return (getattr(vectorizer, "analyzer", None) == "char_wb"
            and getattr(vectorizer, "input", None) == "content")  # fmt: skip


@contextlib.contextmanager
def counting_in_bulk(vectorizer):
    """Within the block, ``vectorizer.fit_transform`` counts in bulk (module docstring) when
    its analyzer allows it; the vectorizer carries nothing of it afterwards."""
    if not _char_wb_plain(vectorizer):
        yield vectorizer
        return
    vectorizer._count_vocab = lambda documents, fixed: count_vocab(vectorizer, documents, fixed)
    try:
        yield vectorizer
    finally:
        del vectorizer._count_vocab


def count_vocab(vectorizer, documents, fixed_vocab: bool):
    """scikit-learn's ``vectorizer._count_vocab(documents, fixed_vocab)``: (vocabulary, counts)."""
    from sklearn.feature_extraction.text import CountVectorizer

    texts = documents if isinstance(documents, list) else list(documents)
    found = None
    if not fixed_vocab and _char_wb_plain(vectorizer) and texts and all(type(t) is str for t in texts):
        vectorizer.build_analyzer()  # its checks and what they leave on the vectorizer, as in a fit
        found = _char_wb_features(vectorizer, texts)
    if found is None:
        return CountVectorizer._count_vocab(vectorizer, texts, fixed_vocab)
    vocabulary, counts = found
    if not vocabulary:
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    return vocabulary, _as_scikit_learn_does(vectorizer, counts, len(texts), len(vocabulary))


def _as_scikit_learn_does(vectorizer, counts: sparse.csr_matrix, rows: int, width: int):
    """The counts as ``_count_vocab`` builds its matrix: int32 indices (int64 past 2**31 cells),
    ``intc`` values cast to the vectorizer's dtype, rows sorted, in scikit-learn's sparse API."""
    from sklearn.feature_extraction.text import _align_api_if_sparse

    counts = sparse.csr_matrix(counts)
    counts.sum_duplicates()
    counts.sort_indices()
    index_type = np.int64 if counts.nnz > np.iinfo(np.int32).max else np.int32
    x = sparse.csr_array((counts.data.astype(np.intc), counts.indices.astype(index_type),
                          counts.indptr.astype(index_type)), shape=(rows, width), dtype=vectorizer.dtype)
    x.sort_indices()
    return _align_api_if_sparse(x)


def _first_met(terms) -> dict[str, int]:
    """Each distinct term numbered in order of first appearance (scikit-learn's numbering)."""
    vocabulary: dict[str, int] = dict.fromkeys(terms, 0)
    for i, term in enumerate(vocabulary):
        vocabulary[term] = i
    return vocabulary


def _char_wb_features(vectorizer, texts: list[str]):
    """(vocabulary, text × term counts) of a ``char_wb`` vectorizer: each distinct word's
    n-grams made once by scikit-learn's ``_char_wb_ngrams``, a text's the sum of its words'."""
    preprocess, spaces = vectorizer.build_preprocessor(), vectorizer._white_spaces
    split = [spaces.sub(" ", preprocess(t)).split() for t in texts]  # as _char_wb_ngrams splits
    words = _first_met(itertools.chain.from_iterable(split))
    grams = [vectorizer._char_wb_ngrams(w) for w in words]
    vocabulary = _first_met(itertools.chain.from_iterable(grams))  # a later word adds only new ones
    if not vocabulary:
        return vocabulary, None
    per_word = [Counter(map(vocabulary.__getitem__, g)) for g in grams]
    word_ptr = np.zeros(len(per_word) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in per_word], out=word_ptr[1:])
    cells = int(word_ptr[-1])
    word_terms = sparse.csr_matrix(
        (np.fromiter(itertools.chain.from_iterable(c.values() for c in per_word), np.int64, cells),
         np.fromiter(itertools.chain.from_iterable(per_word), np.int64, cells), word_ptr),
        shape=(len(words), len(vocabulary)))  # fmt: skip
    at = np.fromiter(map(words.__getitem__, itertools.chain.from_iterable(split)), np.int64)
    text_ptr = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(ws) for ws in split], out=text_ptr[1:])
    occurs = sparse.csr_matrix((np.ones(len(at), np.int64), at, text_ptr), shape=(len(texts), len(words)))
    return vocabulary, occurs @ word_terms
