"""A word n-gram vectorizer's counts of many texts at once (issue 21: re-score only what changed).

``CountVectorizer.transform`` counts one text at a time, one n-gram at a time in Python: on the
10k synthetic corpus the word models' counts of new texts (the defence's windows, the
candidates' passages) were about 67 of the run's CPU-seconds. This module gives the same matrix
from one pass over all the texts: each text preprocessed as the vectorizer does, the texts
joined by a NUL character (never a word character, so no token and no word boundary changes),
tokenised by one ``findall`` of the vectorizer's pattern (or a NUL), every n-gram looked up in
the vocabulary by C-level ``map``; an n-gram that spans a NUL is not in the vocabulary. The
counts are integers, the same as scikit-learn's to the last bit (``tests/test_word_counts.py``
checks them against ``CountVectorizer.transform`` as a second method).

Only scikit-learn's own word analyzer with its default token pattern qualifies (``plain_words``);
any other vectorizer, or a text holding a NUL, is counted by scikit-learn.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
from scipy import sparse

#: scikit-learn's default ``token_pattern``: runs of two or more word characters.
DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
SEPARATOR = "\x00"
TOKENS_OR_SEPARATOR = re.compile(DEFAULT_TOKEN_PATTERN + "|" + SEPARATOR)
#: Texts counted at once: a block of dev windows is a few MB of tokens; all of a 100k run's
#: windows at once would be GBs (issue 21: the sweep's memory).
BLOCK_TEXTS = 4096


def default_words(vectorizer) -> bool:
    """Whether ``vectorizer`` makes scikit-learn's word n-grams of its default token pattern:
    analyzer ``word``, no custom tokenizer, content given as strings (any preprocessing, stop
    words, n-gram range or ``binary``: those are applied here as scikit-learn applies them)."""
    return (getattr(vectorizer, "analyzer", None) == "word"
            and getattr(vectorizer, "tokenizer", 0) is None
            and getattr(vectorizer, "token_pattern", None) == DEFAULT_TOKEN_PATTERN
            and getattr(vectorizer, "input", None) == "content")  # fmt: skip


def plain_words(vectorizer) -> bool:
    """``default_words`` and fitted (it has a vocabulary to count)."""
    return default_words(vectorizer) and hasattr(vectorizer, "vocabulary_")


def word_counts(vectorizer, texts: list[str]) -> sparse.csr_matrix | None:
    """``CountVectorizer.transform(vectorizer, texts)`` of a ``plain_words`` vectorizer as CSR
    with sorted rows (the same integers, dtype and shape), or None when a preprocessed text
    holds a NUL (the caller counts those texts with scikit-learn). Counted ``BLOCK_TEXTS`` at a
    time: the tokens of one block are held at once, not those of every text asked for."""
    blocks = []
    for start in range(0, len(texts), BLOCK_TEXTS):
        block = _block_counts(vectorizer, texts[start:start + BLOCK_TEXTS])
        if block is None:
            return None
        blocks.append(block)
    if len(blocks) == 1:
        return blocks[0]
    out = sparse.csr_matrix(sparse.vstack(blocks, format="csr"))
    out.has_sorted_indices = True  # each block's rows are
    return out


def _block_counts(vectorizer, texts: list[str]) -> sparse.csr_matrix | None:
    """``word_counts`` of one block of texts."""
    vocabulary = vectorizer.vocabulary_
    get = vocabulary.get
    joined = SEPARATOR.join(map(vectorizer.build_preprocessor(), texts))
    if joined.count(SEPARATOR) != len(texts) - 1:
        return None
    tokens = TOKENS_OR_SEPARATOR.findall(joined)
    stop = vectorizer.get_stop_words()
    if stop:  # scikit-learn drops stop words before making n-grams
        tokens = [t for t in tokens if t not in stop]
    separators = np.fromiter(map(SEPARATOR.__eq__, tokens), dtype=bool, count=len(tokens))
    text_of = np.cumsum(separators)  # a token's text: the separators before it
    lo, hi = vectorizer.ngram_range
    rows, columns = [], []
    for n in range(lo, hi + 1):
        size = len(tokens) - n + 1
        if size <= 0:
            break
        grams = tokens if n == 1 else map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False))
        found = np.fromiter(map(get, grams, itertools.repeat(-1)), dtype=np.int64, count=size)
        keep = found >= 0
        columns.append(found[keep])
        rows.append(text_of[:size][keep])
    width = len(vocabulary)
    if rows:
        cells, counts = np.unique(np.concatenate(rows) * width + np.concatenate(columns),
                                  return_counts=True)  # fmt: skip
    else:
        cells, counts = np.zeros(0, np.int64), np.zeros(0, np.int64)
    row = cells // width
    index_type = np.int32 if len(cells) <= np.iinfo(np.int32).max else np.int64
    indptr = np.searchsorted(row, np.arange(len(texts) + 1)).astype(index_type)
    out = sparse.csr_matrix((counts.astype(vectorizer.dtype), (cells % width).astype(index_type), indptr),
                            shape=(len(texts), width))  # fmt: skip
    if vectorizer.binary:
        out.data.fill(1)
    out.has_sorted_indices = True  # np.unique ordered the cells by row, then by column
    return out
