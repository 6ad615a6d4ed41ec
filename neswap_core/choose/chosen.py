"""Which candidate a run writes, and why: pinned in run.toml, a goal's, or the line's (SPEC §7, §10).

In that order: a release pinned in run.toml (``release``; a plan release by its plan and stage,
``release_plan`` + ``release_stage``, never by a position that moves when settings change); else
the goal's candidate (``choose.goals``: met, or the closest one flagged as missed); else the
trade-off line's choice among the paper's candidates (``frontier.choose_release``). The line's
own choice is always computed: the report says what the line alone would pick. The analyst's
review (run.toml's ``decisions``) is applied to a pinned release only: a release the run chose
by itself has not been reviewed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ConfigError
from ..generate.plans import Plan
from .candidates import Candidates, with_plan
from .document_candidates import DOCUMENT
from .frontier import TradeOffChoice, choose_release
from .goals import Goal, GoalChoice, choose_goal, meets

PINNED, GOAL, LINE = "pinned", "goal", "line"


@dataclass(frozen=True)
class Choice:
    """The candidate to write (``release_id``; None when there is none) and why.

    ``why``: ``PINNED``, ``GOAL`` (met or not: see ``goal``) or ``LINE``; ``reason``: one
    sentence; ``line``: the trade-off line's own choice; ``goal``: the goal's choice, if any.
    """

    release_id: str | None
    why: str
    reason: str
    line: TradeOffChoice
    goal: GoalChoice | None = None
    goal_met: bool | None = None  # does the release written meet the goal (None: no goal)

    @property
    def goal_sentence(self) -> str:
        """Why the release written does not meet the goal, in one sentence ("" when it does)."""
        if self.goal_met is not False or self.goal is None:
            return ""
        if self.why == GOAL:
            return self.goal.sentence
        return (f"The release written, {self.release_id} ({self.reason}), does not meet the goal "
                f"({self.goal.goal.describe()}); remove the pin to let the goal choose"
                + (f", which would pick {self.goal.release_id}." if self.goal.met else "."))


def check_pinned_plan(config) -> None:
    """A ``ConfigError`` naming the bad step when run.toml's ``release_plan`` is not a plan
    (checked before any work: the config layer knows settings, not plans)."""
    if config.review.release_plan:
        Plan.from_dict(config.review.release_plan)


def find_plan_release(candidates: Candidates, plan: Mapping, stage_index: int) -> str | None:
    """The id of the candidate with this plan and stage, or None."""
    table = candidates.table
    if not len(table):
        return None
    target = json.dumps(dict(plan), sort_keys=True)
    hit = table[(table["plan"] == target) & (table["stage_index"] == int(stage_index))]
    return None if hit.empty else str(hit.index[0])


def pinned_release(candidates: Candidates, config, scorers=None) -> tuple[Candidates, str | None]:
    """(candidates, the id of the release run.toml pins, or None when nothing is pinned).

    A pinned plan the grid does not list is applied on its own and added to the candidates.
    Raises ``ConfigError`` when the pin names no candidate of these settings."""
    if config.review.release_plan:
        found = find_plan_release(candidates, config.review.release_plan, config.review.release_stage)
        if found is None:
            candidates = with_plan(candidates, config.review.release_plan, config, scorers)
            found = find_plan_release(candidates, config.review.release_plan, config.review.release_stage)
        if found is None:
            raise ConfigError(
                f"The plan release of run.toml ({config.review.release!r}, stage {config.review.release_stage}) "
                "has no such stage on this corpus: the plan stops earlier. Choose the release "
                "again in the app and export run.toml again, or remove release_plan."
            )
        return candidates, found
    if not config.review.release:
        return candidates, None
    if config.review.release in candidates.table.index and \
            candidates.table.loc[config.review.release, "sampler"] == DOCUMENT:
        return candidates, config.review.release  # a document-defence level, found by its name
    if config.review.release not in candidates.line_pool().index:
        known = ", ".join(map(str, list(candidates.line_pool().index)[:5]))
        raise ConfigError(
            f"run.toml pins the release {config.review.release!r}, which is not a candidate of these "
            f"settings (e.g. {known}). Export run.toml again from the app, or set release = \"\" "
            "to let the trade-off line choose."
        )
    return candidates, config.review.release


def line_choice(candidates: Candidates, config) -> TradeOffChoice:
    """The trade-off line's choice among the paper's candidates (DU, DR: means over draws)."""
    sweep = candidates.sweep
    return choose_release(candidates.line_pool(), config.goal.trade_off_a, config.goal.trade_off_c,
                          utility="du_mean", risk="dr_mean",
                          more_swaps_possible=not sweep.exhausted())  # fmt: skip


def choose(candidates: Candidates, config, scorers=None) -> tuple[Candidates, Choice]:
    """(candidates, the choice of ``config``: pinned, goal or line; see the module docstring)."""
    line = line_choice(candidates, config)
    goal = Goal.from_config(config)
    goal_choice = choose_goal(candidates.table, goal) if goal is not None and len(candidates.table) else None
    candidates, pinned = pinned_release(candidates, config, scorers)
    if pinned is not None:
        met = None if goal is None else meets(candidates.table.loc[pinned], goal)
        return candidates, Choice(pinned, PINNED, "pinned in run.toml", line, goal_choice, met)
    if goal is not None and goal_choice is not None and goal_choice.release_id is not None:
        reason = (f"the goal: {goal.describe()}" if goal_choice.met else
                  f"the closest candidate to the goal, which no candidate meets ({goal.describe()})")
        return candidates, Choice(goal_choice.release_id, GOAL, reason, line, goal_choice,
                                  goal_choice.met)  # fmt: skip
    if line.index is None:
        return candidates, Choice(None, LINE, line.message, line, goal_choice)
    met = None if goal is None else meets(candidates.table.loc[line.index], goal)
    return candidates, Choice(str(line.index), LINE, "the trade-off line's choice", line,
                              goal_choice, met)  # fmt: skip
