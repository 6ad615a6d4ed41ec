"""ε shown with how to read it (issue 20: "ε of 157 and 462 with no scale to read them"): one
sentence from ``measure.audit.epsilon_reading``, used by the Check page and the report."""

from __future__ import annotations

import math

import pytest

from neswap_core.measure.audit import EPSILON_STRONG, EPSILON_WEAK, epsilon_reading
from neswap_core.publish.report_parts import protection_facts


@pytest.mark.parametrize("epsilon", [157.0, 462.0, EPSILON_WEAK + 0.01])
def test_a_large_epsilon_is_no_meaningful_guarantee(epsilon):
    assert epsilon_reading(epsilon) == ("no meaningful formal guarantee; the measured attack is "
                                        "the figure to read")


def test_small_epsilons_give_the_bound_on_the_odds():
    # e^ε bounds the change of an observer's odds: e^0.5 = 1.65, e^5 = 148.4
    assert "strong" in epsilon_reading(0.5) and "×1.6" in epsilon_reading(0.5)
    assert f"×{math.exp(EPSILON_STRONG):.1f}" in epsilon_reading(EPSILON_STRONG)
    assert "weak" in epsilon_reading(5.0) and "×148" in epsilon_reading(5.0)


def test_an_epsilon_at_the_permutation_floor_is_no_evidence():
    assert epsilon_reading(40.0, floor=38.0).startswith("at the permutation floor: no evidence")
    assert epsilon_reading(60.0, floor=38.0).startswith("no meaningful")  # well above it
    assert epsilon_reading(float("nan")) == "no estimate (too few passages)"


def test_the_report_reads_the_corpus_epsilon():
    audit = {"corpus_epsilon_before": 170.2, "corpus_epsilon_after": 157.0,
             "documents": [{"epsilon_floor": 35.0}, {"epsilon_floor": 41.5}]}
    text = protection_facts(None, audit)["divergence audit"]
    assert "how to read ε = 157: no meaningful formal guarantee" in text


def test_the_report_says_when_a_large_corpus_was_audited_on_a_sample():
    from neswap_core.measure.audit import sample_statement

    audit = {"corpus_epsilon_before": 170.2, "corpus_epsilon_after": 157.0,
             "documents": [{"epsilon_floor": 35.0}],
             "after": {"sample": sample_statement(100, 6_300, 4_000, 100_000)}}
    text = protection_facts(None, audit)["divergence audit"]
    assert "100 of 6,300 documents, each against 4,000 of 100,000 passages" in text
    assert "with 95 % confidence at most 3.0 % of all documents exceed" in text
    assert "sample" not in protection_facts(None, {**audit, "after": {}})["divergence audit"]
