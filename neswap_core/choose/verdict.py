"""The protection verdict of a release: one sentence and one colour (SPEC §8, §12; issue 20).

Everywhere a release is shown (the app's sidebar, Frontier and Export pages, key/report.html)
the same function says how well it hides, so the CLI's report and the app never disagree.

The figures are the **worst attacker's**: for each level (passages, documents) the largest
measured accuracy over every attacker of the figures (``chunk_accuracy.<attacker>``,
``document_accuracy.<attacker>``, and the unsuffixed ``chunk_accuracy`` /
``document_accuracy``, which name their attacker in ``attacker``; issue 22 makes those the
panel's worst case). They are read against the analyst's goal (``choose.goals.Goal``).

The colour is never green unless a goal is set, every level is measured and the goal is met:

* ``grey``: no attacker measured the release;
* ``orange``: no goal is set, or the goal is met but bounds passages only while the worst
  attacker names documents more often than chance (the document is the unit that must not be
  named, SPEC §12: a goal silent on documents leaves them unjudged);
* ``red``: the goal is missed by the worst attacker;
* ``green``: the goal is met by the worst attacker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .attack_columns import LEVELS
from .goals import Goal

GREEN, ORANGE, RED, GREY = "green", "orange", "red", "grey"
#: Readable names of the attackers (issue 22's panel families included).
ATTACKER_NAMES: dict[str, str] = {
    "reading": "the outside reader (word model)",
    "in-corpus": "the in-corpus attacker",
    "word": "the word model",
    "char": "the character model",
    "embedding": "the sentence-embedding model",
    "retrieval": "whole-document retrieval",
    "bm25": "BM25 retrieval",
    "svm": "the linear SVM",
    "nb": "naive Bayes",
    "word_c1": "the word model (C = 1)",
}
#: What a level is called in a sentence.
LEVEL_WORDS = {"chunk": "passages", "document": "documents"}
#: A share below chance + this is "no better than chance".
CHANCE_SLACK = 1e-9


def attacker_name(name: str | None) -> str:
    """A readable name of an attacker column's suffix ("the outside reader (word model)")."""
    if not name:
        return "the attacker"
    return ATTACKER_NAMES.get(str(name), f"the {name} attacker")


@dataclass(frozen=True)
class Worst:
    """The worst attacker at one level: its accuracy (NaN: unmeasured) and its name."""

    value: float
    attacker: str | None


def worst_case(figures: Mapping, level: str) -> Worst:
    """The largest finite ``<level>_accuracy[.<attacker>]`` of ``figures`` (module docstring)."""
    stem = f"{level}_accuracy"
    best = Worst(float("nan"), None)
    for key, value in figures.items():
        key = str(key)
        if key == stem:
            name = figures.get("attacker")
        elif key.startswith(stem + "."):
            name = key[len(stem) + 1:]
        else:
            continue
        try:
            value = float(value)
        except (TypeError, ValueError):
            continue
        if np.isfinite(value) and not (value <= best.value):
            best = Worst(value, str(name) if name is not None else None)
    return best


def figures_of_attack(summary: Mapping) -> dict:
    """attack.json's summary (``publish.attack_report``) as verdict figures: every attacker's
    accuracies on the written text, ``chance`` and ``n_documents``."""
    figures: dict = {"chance": summary.get("chance")}
    for name, entry in (summary.get("attackers") or {}).items():
        release = entry.get("release") or {}
        figures[f"chunk_accuracy.{name}"] = release.get("chunk_top1")
        figures[f"document_accuracy.{name}"] = release.get("document_accuracy")
        figures["n_documents"] = release.get("n_documents")
    return figures


@dataclass(frozen=True)
class Verdict:
    """How well a release hides: ``colour`` (module docstring), ``sentence``, ``met`` (None: no
    goal or nothing measured) and the worst attacker per level."""

    colour: str
    sentence: str
    met: bool | None
    worst: dict  # level -> Worst

    @property
    def headline(self) -> str:
        return {GREEN: "Goal met", RED: "Goal missed", ORANGE: "Not judged against a goal",
                GREY: "Protection not measured"}[self.colour]  # fmt: skip


def _share(value: float) -> str:
    return f"{100 * value:.0f} %"


def _documents(value: float, n_documents: int | None) -> str:
    if n_documents:
        return f"{int(round(value * n_documents))} of {n_documents} documents ({_share(value)})"
    return f"{_share(value)} of documents"


def _measured(worst: dict, n_documents: int | None, chance: float | None) -> str:
    """"the outside reader names 9 of 10 documents (90 %) and 62 % of passages (chance 10 %)"."""
    doc, chunk = worst["document"], worst["chunk"]
    same = doc.attacker == chunk.attacker
    parts = []
    if np.isfinite(doc.value):
        parts.append(f"{attacker_name(doc.attacker)} names {_documents(doc.value, n_documents)}")
    if np.isfinite(chunk.value):
        who = "" if same and parts else f"{attacker_name(chunk.attacker)} names "
        parts.append(f"{who}{_share(chunk.value)} of passages")
    text = " and ".join(parts)
    if chance is not None and np.isfinite(chance):
        text += f" (chance: {_share(chance)})"
    return text


def _goal_text(goal: Goal) -> str:
    return " and ".join(
        f"at most {_share(c.maximum)} of {LEVEL_WORDS.get(c.column.split('_')[0], c.column)}"
        for c in goal.constraints)


def protection_verdict(figures: Mapping, goal: Goal | None, n_documents: int | None = None
                       ) -> Verdict:
    """The verdict of one release's ``figures`` (a candidate row or ``figures_of_attack``)
    against ``goal`` (None: no goal set). ``n_documents`` defaults to ``figures["n_documents"]``."""
    worst = {level: worst_case(figures, level) for level in LEVELS}
    if n_documents is None and figures.get("n_documents") is not None:
        n_documents = int(figures["n_documents"])
    chance = figures.get("chance")
    chance = float(chance) if chance is not None else float("nan")
    if not any(np.isfinite(w.value) for w in worst.values()):
        return Verdict(GREY, "Protection not measured: no attacker has scored this release yet "
                       "(open 7 · Check, or give the corpus an attacker reading).", None, worst)
    measured = _measured(worst, n_documents, chance)
    if goal is None:
        return Verdict(ORANGE, f"No goal set: the strongest attacker, {measured}. Set a goal (the "
                       "most a release may let an attacker name) to judge this release.",
                       None, worst)
    excess = []
    for c in goal.constraints:
        level = c.column.split("_")[0]
        value = worst[level].value if level in worst else float(figures.get(c.column, np.nan))
        if not np.isfinite(value):
            return Verdict(GREY, f"Protection not measured at the goal's level: {measured}; "
                           f"your goal is {_goal_text(goal)}.", None, worst)
        if value > c.maximum + 1e-12:
            excess.append(f"{_share(value)} of {LEVEL_WORDS.get(level, level)} named, more than "
                          f"the {_share(c.maximum)} your goal allows")
    if excess:
        return Verdict(RED, f"Goal missed: {measured}; that is {'; '.join(excess)}.", False, worst)
    bounded = {c.column.split("_")[0] for c in goal.constraints}
    doc = worst["document"].value
    if "document" not in bounded and np.isfinite(doc) and not (
            np.isfinite(chance) and doc <= chance + CHANCE_SLACK):
        return Verdict(ORANGE, f"Goal met for passages ({_goal_text(goal)}), but it sets no bound "
                       f"on documents: {measured}.", True, worst)
    return Verdict(GREEN, f"Goal met ({_goal_text(goal)}): {measured}.", True, worst)
