"""Goals: "the most useful release whose measured risks are at most X", honoured or refused out
loud (SPEC §10, §12; issue 23).

A ``Goal`` is a list of constraints — a risk column of the candidate table and its maximum —
and a utility column to maximise. ``RunConfig``'s ``max_chunk_accuracy`` is one constraint on
``chunk_accuracy`` (the primary attacker's share of passages named) and
``max_document_accuracy`` one on ``document_accuracy`` (its share of documents named; issue 22:
the document is the unit an analyst hands over), both on the primary columns, which the panel
makes the worst case over its attackers (``CONSTRAINT_SETTINGS``).

``choose_goal``: among the candidates that meet every constraint, the most useful one (ties:
lower risk on the first constraint, then fewer swaps). When none meets the goal, the closest
(the smallest largest excess over a maximum; ties: more useful, fewer swaps) is chosen and
flagged: ``GoalChoice.met`` is False and ``sentence`` names the goal, the closest figure and
what to change. It is never called the goal's release.

``search_for_goal``: a goal needs candidates that can reach it. The document defence
(``[document] document_levels``, on by default) is such a search: at equal words it measured
below the plan grid on chunks and documents (scratch/r22/FINDINGS.md §2). When it is off and
plans are off too, the plans are switched on (``GOAL_PLAN_ROUNDS`` rounds, redaction levels
``GOAL_REDACTION_LEVELS`` when only 0 was listed) and the note says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import ConfigError

#: RunConfig setting -> (risk column it bounds, how the column reads in a sentence).
CONSTRAINT_SETTINGS: dict[str, tuple[str, str]] = {
    "max_chunk_accuracy": ("chunk_accuracy", "share of passages the attacker names"),
    "max_document_accuracy": ("document_accuracy", "share of documents the attacker names"),
}
#: Utility columns a goal may maximise.
GOAL_UTILITIES = ("words_unchanged", "du", "mean_cosine", "clusters_unchanged")
#: The plan search a goal switches on when plans are off (``search_for_goal``).
GOAL_PLAN_ROUNDS = 3
GOAL_REDACTION_LEVELS = (0.0, 0.05, 0.1, 0.2)


@dataclass(frozen=True)
class Constraint:
    """One bound of a goal: ``column`` (a risk column of the candidate table) ≤ ``maximum``."""

    column: str
    maximum: float
    label: str = ""

    def describe(self) -> str:
        return f"{self.label or self.column} at most {self.maximum:g}"


@dataclass(frozen=True)
class Goal:
    """Constraints every candidate must meet, and the utility to maximise among those that do."""

    constraints: tuple[Constraint, ...]
    utility: str = "words_unchanged"

    @classmethod
    def from_config(cls, config) -> Goal | None:
        """The goal of a ``RunConfig`` (None when no maximum is below 1)."""
        settings = config.settings()
        constraints = tuple(
            Constraint(column, float(settings[setting]), label)
            for setting, (column, label) in CONSTRAINT_SETTINGS.items()
            if float(settings[setting]) < 1.0
        )
        return cls(constraints, config.goal.goal_utility) if constraints else None

    def describe(self) -> str:
        """E.g. "share of passages the attacker names at most 0.3"."""
        return " and ".join(c.describe() for c in self.constraints)

    def check_columns(self, table: pd.DataFrame) -> None:
        for c in self.constraints:
            if c.column not in table.columns:
                raise ConfigError(
                    f"The goal bounds {c.column!r}, which the candidates do not have: measured "
                    "accuracies need an attacker (the in-corpus one is always trained by "
                    "`release`; give the corpus an attacker/ reading for an outside one)."
                )
        if self.utility not in table.columns:
            raise ConfigError(
                f"Unknown utility {self.utility!r} for the goal; choose one of {GOAL_UTILITIES}."
            )


@dataclass(frozen=True)
class GoalChoice:
    """The candidate a goal picks, whether it meets the goal, and the sentence when it does not."""

    goal: Goal
    release_id: str | None
    met: bool
    figures: dict  # the chosen candidate's value of every constrained column
    sentence: str  # "" when met


def meets(row: pd.Series, goal: Goal) -> bool:
    """Whether one candidate (a row of the table) meets every constraint of ``goal``."""
    return all(c.column in row and float(row[c.column]) <= c.maximum + 1e-12
               for c in goal.constraints)


def _excess(table: pd.DataFrame, goal: Goal) -> np.ndarray:
    """Per candidate, the largest amount by which a constrained column exceeds its maximum."""
    values = np.column_stack([table[c.column].to_numpy(float) - c.maximum for c in goal.constraints])
    return values.max(axis=1)


def choose_goal(table: pd.DataFrame, goal: Goal) -> GoalChoice:
    """The goal's candidate of ``table`` (module docstring). Candidates averaged over only some
    of the paper's draws (``all_draws`` False) and those without finite figures are skipped."""
    goal.check_columns(table)
    pool = table[table["all_draws"].astype(bool)] if "all_draws" in table else table
    excess = _excess(pool, goal) if len(pool) else np.zeros(0)
    utility = pool[goal.utility].to_numpy(float) if len(pool) else np.zeros(0)
    finite = np.isfinite(excess) & np.isfinite(utility)
    if not finite.any():
        return GoalChoice(goal, None, False, {}, "No candidate release has measured figures to "
                          "compare with the goal.")
    swaps = pool["swaps"].to_numpy(float) if "swaps" in pool else np.zeros(len(pool))
    first = pool[goal.constraints[0].column].to_numpy(float)
    ok = np.flatnonzero(finite & (excess <= 1e-12))
    met = ok.size > 0
    if met:
        best = ok[np.lexsort((swaps[ok], first[ok], -utility[ok]))[0]]
    else:
        cand = np.flatnonzero(finite)
        best = cand[np.lexsort((swaps[cand], -utility[cand], excess[cand]))[0]]
    row = pool.iloc[best]
    figures = {c.column: float(row[c.column]) for c in goal.constraints}
    sentence = "" if met else missed_sentence(goal, str(pool.index[best]), figures)
    return GoalChoice(goal, str(pool.index[best]), met, figures, sentence)


def missed_sentence(goal: Goal, release_id: str, figures: dict) -> str:
    """One sentence: the goal, the closest candidate's figure, and what to change."""
    closest = ", ".join(f"{c.label or c.column} {figures[c.column]:.3g}" for c in goal.constraints)
    relax = " or ".join(f"{setting} to {figures[column]:.3g}"
                        for setting, (column, _) in CONSTRAINT_SETTINGS.items()
                        if any(c.column == column for c in goal.constraints))  # fmt: skip
    return (f"No candidate meets the goal ({goal.describe()}): the closest, {release_id}, has "
            f"{closest}. Search further (higher document_levels such as 0.4 or 0.5, more "
            f"plan_rounds, higher plan_redaction_levels such as 0.2 or 0.3, plan_terms = [true]) "
            f"or relax the goal ({relax}).")


def search_for_goal(config):
    """(config, note): plans switched on when a goal is set and plans are off (module docstring);
    the note says what changed ("" when nothing did). ``config`` itself is not modified."""
    if Goal.from_config(config) is None or config.plans.plan_rounds > 0 or config.document.document_levels:
        return config, ""
    levels = list(config.plans.plan_redaction_levels)
    changes = {"plan_rounds": GOAL_PLAN_ROUNDS}
    if all(v == 0 for v in levels):
        changes["plan_redaction_levels"] = list(GOAL_REDACTION_LEVELS)
    searched = config.replace(**changes)
    levels_text = ", ".join(f"{v:g}" for v in searched.plans.plan_redaction_levels)
    note = (f"The goal needs more than the paper's single round: plans were off (plan_rounds = 0), "
            f"so this run searches {GOAL_PLAN_ROUNDS} rounds with redaction levels {levels_text} "
            "(set plan_rounds and plan_redaction_levels to choose the search yourself).")
    return searched, note
