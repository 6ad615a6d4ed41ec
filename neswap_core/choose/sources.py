"""How a candidate's text is made, reviewed and named again: one interface, two samplers.

Every candidate is a stage of a plan. ``PaperRound`` is the paper's single round (SPEC §3): the
first t pairs of draw 0 of combination J, drawn by the paper's sequential sampler
(generate/releases.py), its spread over M draws; ``PlanStage`` is a stage of a plan of the grid
(SPEC §10, plan_grid.py). Both answer the same questions, so nothing downstream asks which one
it holds:

* ``row()``: the candidate's columns that depend on how it was made (description, DU and DR,
  the M draws), see ``choose.candidates.COLUMNS``;
* ``changed()``: {position: chunk} of the text as generated;
* ``review(decisions)``: the ``ChosenRelease`` left by the analyst's decisions (a rejected pair
  is left out, a plan is replayed without its rejected changes);
* ``identity()``: what run.toml stores to find the candidate again (``release`` for a paper
  release, its plan and stage for a plan).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..generate.releases import DrawResult, Sweep, draw_steps, evaluate_records
from ..generate.swapping import swap_log
from .plan_grid import PlanCandidates, measure_row, plan_seed
from .review import (
    ChosenRelease,
    Decisions,
    change_review_frame,
    pair_key,
    swap_review_frame,
)

#: Utility measures of a written text besides DU (plan_grid.measure_row).
UTILITY_COLUMNS = ("words_unchanged", "mean_cosine", "clusters_unchanged", "chunks_changed")
#: The ``sampler`` column: the paper's sequential swaps, or a plan of the grid.
PAPER, PLAN = "paper", "plan"


@dataclass(frozen=True, eq=False)
class PaperRound:
    """The paper's release (J, t): the first t pairs of draw 0 of combination J."""

    sweep: Sweep
    row_: pd.Series  # its row of ``Sweep.table``
    population: float

    @property
    def release_id(self) -> str:
        return str(self.row_["release_id"])

    @property
    def draw(self) -> DrawResult:
        return self.sweep.draws_for(tuple(self.row_["categories"]))[0]

    @property
    def records(self) -> tuple:
        return self.draw.run.records[: int(self.row_["swaps"])]

    def row(self) -> dict:
        r = self.row_
        return {"release_id": self.release_id, "sampler": PAPER, "combination": r["combination"],
                "swaps": int(r["swaps"]), "rounds": 1,
                "description": f"1 round of swapping {r['combination']} (paper)",
                "plan": "", "plan_index": -1, "stage_index": -1,
                "du": float(r["du_released"]), "dr": float(r["dr_released"]),
                "du_mean": float(r["du"]), "du_sd": float(r["du_sd"]), "dr_mean": float(r["dr"]),
                "dr_sd": float(r["dr_sd"]), "draws": int(r["draws"]),
                "draws_total": int(r["draws_total"]), "all_draws": bool(r["all_draws"]),
                "swap_rate": float(r["swap_rate"]), "p_hat": float(r["p_hat"]),
                "risk_status": r["risk_status"]}  # fmt: skip

    def changed(self) -> dict:
        draw = self.draw
        return draw.run.changed_after(min(int(self.row_["swaps"]), draw.n_swaps))

    def utility(self, total_words: int | None = None) -> dict:
        """Utility of the written text (its DU is the sweep's: sums of per-pair deltas)."""
        measures = measure_row(self.sweep.ctx, self.changed(), total_words)
        measures.pop("du")
        return measures

    def identity(self) -> dict:
        return {"release": self.release_id}

    def review(self, decisions: Decisions) -> ChosenRelease:
        records = self.records
        keep = [i for i, r in enumerate(records) if decisions.get(pair_key(r), ("",))[0] != "reject"]
        kept = tuple(records[i] for i in keep)
        chunks = tuple(self.draw.run.release(kept))
        du, dr = evaluate_records(self.sweep, self.draw, keep, self.population)
        log = swap_log(kept)
        log["review"] = [decisions.get(pair_key(r), ("",))[0] or "not reviewed" for r in kept]
        log["note"] = [decisions.get(pair_key(r), ("", ""))[1] for r in kept]
        base = self.sweep.ctx.chunks
        if len(kept) == len(records):  # the candidate as generated: its M draws are its spread
            draws = tuple(_prefix(d, len(records)) for d in self.sweep.draws_for(self.draw.combination))
        else:
            draws = ({i: c.text for i, c in enumerate(chunks) if c.text != base[i].text},)
        return ChosenRelease(
            self.release_id, chunks, kept, len(records), len(records) - len(kept),
            "swap_log.csv", log, swap_review_frame(records, decisions), {"du": du, "dr": dr},
            draws, self.identity(), tuple(self.draw.seed), "pairs")


def _prefix(draw: DrawResult, t: int) -> dict[int, str]:
    """{position: text} of the first t pairs of a draw (fewer when the draw stopped earlier)."""
    merged: dict[int, str] = {}
    for step in draw_steps(draw)[:t]:
        merged.update(step)
    return merged


@dataclass(frozen=True, eq=False)
class PlanStage:
    """A stage of an applied plan: the release after round r (or one-vs-many, redaction)."""

    plans: PlanCandidates
    release_id: str

    def row(self) -> dict:
        r = self.plans.table.loc[self.release_id]
        return {"release_id": self.release_id, "sampler": PLAN, "combination": r["combination"],
                "swaps": int(r["swaps"]),
                "rounds": int(r["rounds"]), "description": r["description"], "plan": r["plan"],
                "plan_index": int(r["plan_index"]), "stage_index": int(r["stage_index"]),
                "du": float(r["du"]), "dr": float(r["dr"]), "du_mean": float(r["du"]),
                "du_sd": 0.0, "dr_mean": float(r["dr"]), "dr_sd": 0.0, "draws": 1,
                "draws_total": 1, "all_draws": True, "swap_rate": np.nan, "p_hat": np.nan,
                "risk_status": ""}  # fmt: skip

    def changed(self) -> dict:
        return self.plans.stage(self.release_id)[1].changed

    def utility(self, total_words: int | None = None) -> dict:
        """Utility of the written text, as the grid measured it (plan_grid.plan_candidates)."""
        row = self.plans.table.loc[self.release_id]
        return {k: float(row[k]) for k in UTILITY_COLUMNS}

    def identity(self) -> dict:
        row = self.plans.table.loc[self.release_id]
        return {"release": self.release_id, "release_plan": json.loads(row["plan"]),
                "release_stage": int(row["stage_index"])}

    def review(self, decisions: Decisions) -> ChosenRelease:
        rejected = frozenset(k for k, (d, *_) in decisions.items() if d == "reject")
        generated, stage = self.plans.stage(self.release_id)
        result, reviewed = self.plans.replay(self.release_id, rejected)
        released = tuple(result.changes[: reviewed.n_changes])
        before = generated.changes[: stage.n_changes]
        keys = {c.key for c in released}
        shown = list(released) + [c for c in before if c.key in rejected and c.key not in keys]
        chunks = tuple(result.chunks_at(reviewed))
        base = self.plans.ctx.chunks
        changed = {i: c.text for i, c in enumerate(chunks) if c.text != base[i].text}
        return ChosenRelease(
            self.release_id, chunks, released, len(before),
            sum(1 for c in before if c.key in rejected), "changes.csv",
            pd.DataFrame([c.to_dict() for c in released]),
            change_review_frame(shown, keys, decisions), self.plans.measures(result, reviewed),
            (changed,), self.identity(), tuple(plan_seed(self.plans.seed, result.plan)))
