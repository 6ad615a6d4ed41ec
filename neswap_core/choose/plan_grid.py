"""The plan grid and its applied plans: every stage of every plan, with its measures (SPEC §10).

``PlanGrid`` lists plans (rounds × category sets × term swapping on/off × redaction level);
``plan_candidates`` applies each plan once (seeded by ``plan_seed``) and turns every stage (the
release after round 1, 2, …, after one-vs-many, after redaction) into a row with DU, DR and the
readable utility measures (``measure_row``); ``choose.candidates`` puts these rows in the one
candidate table beside the paper's and adds the measured accuracies.

DR of a plan (decision, SPEC §10 leaves it open): the paper's formula with J = the entity
categories of the plan's first swap round, z_J of the pre-swap data, and as "swapped sample
uniques" every sample unique of z_J that any swap, term swap or one-vs-many exchange changed,
in any round, counted once. A one-round plan gives the paper's DR exactly; later rounds can
only lower it (more uniques swapped); redaction alone leaves DR at 1 (it is measured by the
attack instead). A plan whose first round swaps only terms has no J: its DR is 1.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np
import pandas as pd

from ..corpus import Chunk
from ..errors import ConfigError
from ..generate.plan_engine import PlanResources, PlanResult, PlanStage
from ..generate.plans import Plan, Redact, apply_plan, default_plan, step_to_dict
from ..generate.releases import ReleaseContext
from ..measure import risk as risk_mod
from ..measure.release_measures import ReleaseMeasures, release_measures

Progress = Callable[[float, str], None]
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class PlanGrid:
    """The plans of a sweep: rounds × category sets × terms on/off × redaction levels."""

    categories: tuple[tuple[str, ...], ...]
    rounds: int = 3
    terms: tuple[bool, ...] = (False, True)
    redaction_levels: tuple[float, ...] = (0.0,)
    redaction_method: str = "targeted"
    redaction_fill: str = "mask"
    redaction_alone: bool = True
    require: str = "any"
    coverage: float = 0.9
    similarity_floor: float = 0.3
    concentration_floor: float = 0.0
    one_vs_many: bool = True
    seed: int = 0

    def plans(self) -> list[Plan]:
        if self.rounds < 1:
            raise ConfigError(f"plan_rounds must be >= 1 to build plans, got {self.rounds}.")
        return [
            default_plan(cats, rounds=self.rounds, terms=t, redaction=level,
                         redaction_method=self.redaction_method, fill=self.redaction_fill,
                         require=self.require,
                         coverage=self.coverage, similarity_floor=self.similarity_floor,
                         concentration_floor=self.concentration_floor,
                         one_vs_many=self.one_vs_many)  # fmt: skip
            for cats in self.categories
            for t in self.terms
            for level in self.redaction_levels
        ] + self.redaction_plans()

    def redaction_plans(self) -> list[Plan]:
        """Redaction alone at each level > 0 (``redaction_alone``), after the swap plans so their
        numbers do not move: on the dev corpus targeted redaction alone is on the frontier near
        85 % of words unchanged, where every swap-first plan has already spent words on swaps."""
        if not self.redaction_alone:
            return []
        levels = dict.fromkeys(v for v in self.redaction_levels if v > 0)
        return [Plan((Redact(level, self.redaction_method, fill=self.redaction_fill),))
                for level in levels]

    @classmethod
    def from_config(cls, config) -> PlanGrid:
        """The grid a ``RunConfig`` asks for (``plan_*`` settings)."""
        params = config.plans.as_params(prefix="plan_")
        params["categories"] = (params["categories"] or tuple(config.swap_categories),)
        return cls(**params, seed=config.sweep.seed)


@dataclass
class PlanCandidates:
    """Applied plans and one table row per stage (``results[k]`` holds plan k's stages)."""

    ctx: ReleaseContext
    results: list[PlanResult]
    table: pd.DataFrame
    resources: PlanResources | None = field(repr=False, default=None)
    seed: int = 0
    population: float = 1e20

    def stage(self, release_id: str) -> tuple[PlanResult, PlanStage]:
        row = self.table.loc[release_id]
        result = self.results[int(row["plan_index"])]
        return result, result.stages[int(row["stage_index"])]

    def replay(self, release_id: str, rejected: frozenset[str]) -> tuple[PlanResult, PlanStage]:
        """The release ``release_id`` with the ``rejected`` change keys left out (same seed).

        Nothing is recomputed when no change of the release is rejected. Otherwise the plan is
        re-applied skipping rejected changes; the stage is the same one (round r, or the last
        the replay reached).
        """
        result, stage = self.stage(release_id)
        if not rejected & {c.key for c in result.changes[: stage.n_changes]}:
            return result, stage
        index = int(self.table.loc[release_id, "stage_index"])
        again = apply_plan(self.ctx, result.plan, np.random.default_rng(plan_seed(self.seed, result.plan)),
                           frozenset(rejected), self.resources)  # fmt: skip
        if not again.stages:
            return again, PlanStage("nothing left", 0, 0, 0, {}, frozenset(), 0.0)
        return again, again.stages[min(index, len(again.stages) - 1)]

    def at_population(self, population: float) -> PlanCandidates:
        """The same plans and stages with their DR at another population size N (SPEC §5: N
        enters p̂ only, so no plan is applied or measured again); itself at its own N."""
        population = float(population)
        if population == self.population:
            return self
        if not len(self.table):
            return replace(self, population=population)
        profiles: dict = {}
        dr = [plan_risk(self.ctx, self.results[int(i)].plan,
                        self.results[int(i)].changes[: self.results[int(i)].stages[int(j)].n_changes],
                        population, profiles)
              for i, j in zip(self.table["plan_index"], self.table["stage_index"], strict=True)]  # fmt: skip
        return replace(self, table=self.table.assign(dr=dr), population=population)

    def measures(self, result: PlanResult, stage: PlanStage) -> dict:
        """DU, DR, words unchanged, … of a (reviewed) stage."""
        row = measure_row(self.ctx, stage.changed)
        row["dr"] = plan_risk(self.ctx, result.plan, result.changes[: stage.n_changes],
                              self.population, {})  # fmt: skip
        return row


def plan_seed(seed: int, plan: Plan) -> list[int]:
    """The random seed of a plan: the run's seed and a checksum of its steps before redaction.

    Plans that differ only in their redaction level draw the same swaps, so their swap stages
    are the same text (embedded once, through the cache); a replay after review uses it too.
    """
    swap_part = [step_to_dict(s) for s in plan.steps if s.kind != "redact"]
    return [int(seed), zlib.crc32(json.dumps(swap_part, sort_keys=True).encode())]


def plan_risk(ctx, plan: Plan, changes: Sequence, population: float, profiles: dict) -> float:
    """DR of a plan stage (module docstring): J = the first round's entity categories.

    A chunk counts as swapped when a change exchanged one of its values of a category in J
    (both chunks of the exchange); a term swap or a redaction alone leaves its z_J cell as it was.
    """
    cats = plan.risk_categories
    if not cats:
        return 1.0
    if cats not in profiles:
        profiles[cats] = risk_mod.fit_risk(ctx.z, list(cats), population)
    swapped = {cid for c in changes if c.kind != "redact" and any(d[0] in cats for d in c.detail)
               for cid in c.chunk_ids}  # fmt: skip
    return risk_mod.disclosure_risk(profiles[cats], swapped)


def changed_texts(ctx, changed: Mapping[int, Chunk]) -> dict[int, str]:
    """{position: released text} of the chunks whose text ``changed`` really changes."""
    return {p: c.text for p, c in changed.items() if c.text != ctx.chunks[p].text}


def total_words(ctx) -> int:
    """Words of the pre-swap text (the denominator of ``words_unchanged``), counted once per
    context (the plan grid, the document levels and the candidate table each ask: ~2 s a time
    at 100,000 passages; a context's pre-swap chunks never change)."""
    known = getattr(ctx, "total_words_", None)
    if known is None:
        known = sum(len(_WORD.findall(c.text)) for c in ctx.chunks)
        try:
            ctx.total_words_ = known
        except AttributeError:  # a context that takes no attribute counts every time
            pass
    return known


def measure_row(ctx, changed: Mapping[int, Chunk], total_words: int | None = None) -> dict:
    """The utility measures of one release (``changed``: {position: released chunk})."""
    m: ReleaseMeasures = release_measures(ctx, changed, total_words)
    row = {"du": m.du, "words_unchanged": m.words_unchanged, "mean_cosine": m.mean_cosine,
           "clusters_unchanged": m.clusters_unchanged, "chunks_changed": m.chunks_changed}  # fmt: skip
    return row


class PlanSource(Protocol):
    """What ``plan_candidates`` reads of a grid: its ``plans()`` and its ``seed``."""

    @property
    def seed(self) -> int: ...

    def plans(self) -> list[Plan]: ...


def plan_candidates(
    ctx,
    grid: PlanSource,
    population: float,
    progress: Progress | None = None,
    rejected: frozenset[str] = frozenset(),
) -> PlanCandidates:
    """Apply every plan of ``grid`` (seed ``grid.seed``) and measure every stage (see module)."""
    plans = grid.plans()
    resources = PlanResources(ctx.chunks)
    words = total_words(ctx)
    profiles: dict = {}
    results, rows = [], []
    for k, plan in enumerate(plans):
        within = None
        if progress:  # within a plan too: a grid of two plans is not at 0 % for half the time

            def within(f: float, message: str, k: int = k, plan=plan) -> None:
                progress((k + f) / len(plans), f"plan {k + 1} of {len(plans)}, {plan.describe()}: "
                         f"{message}")

            within(0.0, "starting")
        result = apply_plan(ctx, plan, np.random.default_rng(plan_seed(grid.seed, plan)), rejected,
                            resources, within)  # fmt: skip
        results.append(result)
        redacts = any(s.kind == "redact" for s in plan.steps)
        for s_index, stage in enumerate(result.stages):
            if redacts and stage is not result.stages[-1]:
                continue  # the swap stages are the same as the plan without redaction
            row = {
                "release_id": f"plan {k + 1} · {stage.label}",
                "plan_index": k,
                "stage_index": s_index,
                "combination": " + ".join(plan.steps_categories()),
                "swaps": sum(1 for c in result.changes[: stage.n_changes] if c.kind != "redact"),
                "rounds": stage.round,
                "description": plan.describe(),
                "dr": plan_risk(ctx, plan, result.changes[: stage.n_changes], population, profiles),
                "plan": json.dumps(plan.to_dict(), sort_keys=True),
            }
            row.update(measure_row(ctx, stage.changed, words))
            rows.append(row)
    if progress:
        progress(1.0, "done")
    table = pd.DataFrame(rows)
    if len(table):
        table = table.set_index("release_id", drop=False)
    return PlanCandidates(ctx, results, table, resources, grid.seed, population)


@dataclass(frozen=True)
class _OnePlan:
    """A grid of one plan (``plan_candidates`` needs only ``plans()`` and ``seed``)."""

    plan: Plan
    seed: int

    def plans(self) -> list[Plan]:
        return [self.plan]


def one_plan_candidates(ctx, plan: Mapping, seed: int, population: float) -> PlanCandidates:
    """The stages of one plan (given as ``Plan.to_dict``) on the pre-swap data ``ctx``.

    A plan's draws depend on the run's seed and the plan's content only (``plan_seed``), so its
    stages are the same as in any grid that holds it (a release pinned in run.toml whose plan
    the current grid does not list is made this way)."""
    return plan_candidates(ctx, _OnePlan(Plan.from_dict(plan), int(seed)), population)
