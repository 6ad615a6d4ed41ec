"""The release a run writes: the chosen candidate with the analyst's review applied (SPEC §3, §10, §11).

A release is named by what it is, never by a position that moves when settings change: a
paper release by its id ``"J @ t"`` (the first t pairs of draw 0 of combination J), a plan
release by its plan (``Plan.to_dict``) and the index of its stage in that plan. A review
decision is keyed by the content of the change it is about: ``"chunk_a|chunk_b"`` for a
swapped pair, ``Change.key`` for a change of a plan. A rejected change is left out: a paper
release keeps its other pairs (``SwapRun.release``), a plan is replayed without it
(``PlanCandidates.replay``). The app's Export page and the CLI's ``release`` call these
functions with what ``run.toml`` holds (``release``, ``release_plan``, ``release_stage``,
``decisions``), so both write the same released chunks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from ..corpus import Chunk
from ..errors import ConfigError
from ..generate.swapping import SwapRecord

REJECT = "reject"


def pair_key(record: SwapRecord) -> str:
    """Content key of one swapped pair of a paper release: ``"chunk_a|chunk_b"``."""
    return f"{record.chunk_a}|{record.chunk_b}"


def rejected_keys(decisions: Iterable[Mapping[str, str]]) -> frozenset[str]:
    """The keys of the rejected changes among run.toml's ``decisions`` tables."""
    return frozenset(str(d["key"]) for d in decisions if d.get("decision") == REJECT)


def decision_rows(decisions: Mapping[str, tuple[str, str]]) -> list[dict[str, str]]:
    """run.toml's ``decisions`` from the workspace's {key: (decision, note)}, sorted by key."""
    return [{"key": k, "decision": d, "note": n} for k, (d, n) in sorted(decisions.items())]


@dataclass(frozen=True)
class ChosenRelease:
    """The released chunks of one candidate after review, and what was released of it."""

    release_id: str
    source: str  # "paper" or "plan"
    chunks: tuple[Chunk, ...]  # every chunk of the corpus as released
    records: tuple[SwapRecord, ...] = ()  # the pairs released (paper)
    changes: tuple = ()  # the plan changes released (plan.Change)
    generated: int = 0  # pairs or changes of the candidate before review
    rejected: int = 0  # of those, left out by the review

    def changed(self, base) -> dict[int, str]:
        """{position: released text} of every chunk whose text differs from ``base``."""
        return {i: c.text for i, c in enumerate(self.chunks) if c.text != base[i].text}


def paper_release(sweep, row: pd.Series, rejected: frozenset[str] = frozenset()) -> ChosenRelease:
    """The paper's release ``row`` (a row of ``Sweep.table``) without its rejected pairs."""
    draw = sweep.draws_for(tuple(row["categories"]))[0]
    records = draw.run.records[: int(row["swaps"])]
    kept = tuple(r for r in records if pair_key(r) not in rejected)
    return ChosenRelease(str(row["release_id"]), "paper", tuple(draw.run.release(kept)), kept,
                         (), len(records), len(records) - len(kept))  # fmt: skip


def plan_release(plans, release_id: str, rejected: frozenset[str] = frozenset()) -> ChosenRelease:
    """The plan candidate ``release_id`` of ``plans`` (PlanCandidates), replayed without the
    rejected changes (the same call the Swaps page's review makes)."""
    generated, stage = plans.stage(release_id)
    result, reviewed = plans.replay(release_id, frozenset(rejected))
    released = tuple(result.changes[: reviewed.n_changes])
    before = generated.changes[: stage.n_changes]
    left_out = sum(1 for c in before if c.key in rejected)
    return ChosenRelease(release_id, "plan", tuple(result.chunks_at(reviewed)), (), released,
                         len(before), left_out)  # fmt: skip


def plan_identity(plans, release_id: str) -> tuple[dict, int]:
    """(plan as a dict, stage index) of a plan candidate: what run.toml stores to find it again."""
    row = plans.table.loc[release_id]
    return json.loads(row["plan"]), int(row["stage_index"])


def find_plan_release(plans, plan: Mapping, stage_index: int) -> str | None:
    """The id of the candidate of ``plans`` with this plan and stage, or None."""
    if plans is None or not len(plans.table):
        return None
    target = json.dumps(dict(plan), sort_keys=True)
    table = plans.table
    hit = table[(table["plan"] == target) & (table["stage_index"] == int(stage_index))]
    return None if hit.empty else str(hit.index[0])


@dataclass(frozen=True)
class _OnePlan:
    """A grid of one plan (``plan_candidates`` needs only ``plans()`` and ``seed``)."""

    plan: object
    seed: int

    def plans(self) -> list:
        return [self.plan]


def plan_candidates_of(ctx, plan: Mapping, seed: int, population: float, scorer=None):
    """The candidates of one plan (given as a dict) on the pre-swap data ``ctx``.

    A plan's draws depend on the run's seed and the plan's content only (``plan_seed``), so
    its stages are the same as in any grid that holds it.
    """
    from ..generate.plans import Plan
    from .candidates import plan_candidates

    return plan_candidates(ctx, _OnePlan(Plan.from_dict(plan), int(seed)), population, scorer)


def configured_release(sweep, table: pd.DataFrame, config, plans=None, scorer=None) -> ChosenRelease | None:
    """The release run.toml pins (``release``, or ``release_plan`` + ``release_stage``) with its
    ``decisions`` applied; None when nothing is pinned (the line or the goal chooses).

    Raises ``ConfigError`` when the pinned release is not a candidate of these settings.
    """
    rejected = rejected_keys(config.decisions)
    if config.release_plan:
        found = find_plan_release(plans, config.release_plan, config.release_stage)
        if found is None:
            plans = plan_candidates_of(sweep.ctx, config.release_plan, config.seed,
                                       config.population, scorer)  # fmt: skip
            found = find_plan_release(plans, config.release_plan, config.release_stage)
        if found is None:
            raise ConfigError(
                f"The plan release of run.toml ({config.release!r}, stage {config.release_stage}) "
                "has no such stage on this corpus: the plan stops earlier. Choose the release "
                "again in the app and export run.toml again, or remove release_plan."
            )
        return plan_release(plans, found, rejected)
    if not config.release:
        return None
    if config.release not in table.index:
        known = ", ".join(map(str, list(table.index)[:5]))
        raise ConfigError(
            f"run.toml pins the release {config.release!r}, which is not a candidate of these "
            f"settings (e.g. {known}). Export run.toml again from the app, or set release = \"\" "
            "to let the trade-off line choose."
        )
    return paper_release(sweep, table.loc[config.release], rejected)

