"""The protection verdict (choose/verdict.py): the worst attacker's figures against the goal, one
colour that is never green while the goal is missed, unmeasured or absent."""

import math

from neswap_core.choose.goals import Constraint, Goal
from neswap_core.choose.verdict import (
    GREEN,
    GREY,
    ORANGE,
    RED,
    figures_of_attack,
    protection_verdict,
    worst_case,
)

CHUNK_GOAL = Goal((Constraint("chunk_accuracy", 0.3),))
BOTH_GOAL = Goal((Constraint("chunk_accuracy", 0.3), Constraint("document_accuracy", 0.5)))


def row(**values):
    return {"chance": 0.1, **values}


def test_worst_case_is_the_largest_over_attackers_with_its_name():
    figures = row(**{"chunk_accuracy": 0.2, "attacker": "reading",
                     "chunk_accuracy.reading": 0.2, "chunk_accuracy.char": 0.35,
                     "chunk_accuracy_mean.char": 0.9, "document_accuracy.retrieval": 1.0,
                     "document_accuracy.word": 0.4})
    assert worst_case(figures, "chunk").value == 0.35
    assert worst_case(figures, "chunk").attacker == "char"  # not the _mean column
    assert worst_case(figures, "document").attacker == "retrieval"


def test_single_attacker_fallback_uses_the_unsuffixed_column_and_its_attacker():
    w = worst_case(row(chunk_accuracy=0.4, attacker="in-corpus"), "chunk")
    assert (w.value, w.attacker) == (0.4, "in-corpus")


def test_missed_goal_is_red_and_names_documents_and_passages():
    v = protection_verdict(row(**{"chunk_accuracy.reading": 0.62,
                                  "document_accuracy.reading": 0.9}), CHUNK_GOAL, n_documents=10)
    assert v.colour == RED and v.met is False
    assert "9 of 10 documents (90 %)" in v.sentence and "62 % of passages" in v.sentence
    assert "outside reader" in v.sentence and "30 %" in v.sentence


def test_one_attacker_over_the_goal_is_enough_to_miss_it():
    figures = row(**{"chunk_accuracy.word": 0.25, "chunk_accuracy.char": 0.31,
                     "document_accuracy.word": 0.3, "document_accuracy.char": 0.3})
    v = protection_verdict(figures, BOTH_GOAL, n_documents=10)
    assert v.colour == RED and "character model" in v.sentence


def test_met_goal_on_both_levels_is_green():
    figures = row(**{"chunk_accuracy.word": 0.25, "document_accuracy.word": 0.4})
    v = protection_verdict(figures, BOTH_GOAL, n_documents=10)
    assert v.colour == GREEN and v.met and "4 of 10 documents" in v.sentence


def test_passage_goal_met_while_documents_are_named_is_not_green():
    figures = row(**{"chunk_accuracy.word": 0.2, "document_accuracy.word": 1.0})
    v = protection_verdict(figures, CHUNK_GOAL, n_documents=10)
    assert v.colour == ORANGE and "no bound on documents" in v.sentence
    at_chance = row(**{"chunk_accuracy.word": 0.2, "document_accuracy.word": 0.1})
    assert protection_verdict(at_chance, CHUNK_GOAL, n_documents=10).colour == GREEN


def test_no_goal_and_no_measure_are_never_green():
    figures = row(**{"chunk_accuracy.word": 0.0, "document_accuracy.word": 0.0})
    assert protection_verdict(figures, None).colour == ORANGE
    assert protection_verdict(row(), CHUNK_GOAL).colour == GREY
    nan = row(**{"chunk_accuracy.word": math.nan, "document_accuracy.word": math.nan})
    assert protection_verdict(nan, CHUNK_GOAL).colour == GREY


def test_goal_level_unmeasured_is_grey():
    figures = row(**{"chunk_accuracy.word": 0.1})  # documents not measured
    assert protection_verdict(figures, BOTH_GOAL).colour == GREY


def test_attack_summary_gives_the_same_figures():
    summary = {"chance": 0.1, "attackers": {
        "reading": {"release": {"chunk_top1": 0.5, "document_accuracy": 0.8, "n_documents": 5}},
        "in-corpus": {"release": {"chunk_top1": 0.6, "document_accuracy": 0.6, "n_documents": 5}}}}
    v = protection_verdict(figures_of_attack(summary), CHUNK_GOAL)
    assert v.colour == RED
    assert "4 of 5 documents" in v.sentence and "60 % of passages" in v.sentence
    assert v.worst["chunk"].attacker == "in-corpus" and v.worst["document"].attacker == "reading"
