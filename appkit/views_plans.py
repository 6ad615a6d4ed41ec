"""View helpers of the Swaps page for plan candidates (SPEC §10): every step's changes to review.

A plan release is reviewed change by change — a swapped pair of any round, a swapped term, a
one-vs-many move, a redacted word. Decisions are stored under the pre-swap data's review key
and the change's content key (``Change.key``), so a decision follows the change into every
release that contains it. Rejected changes leave the release: the plan is replayed without
them (``PlanCandidates.replay``) and the measures are recomputed on the replayed text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from neswap_core import Chunk
from neswap_core.choose.chosen import find_plan_release
from neswap_core.choose.plan_grid import PlanCandidates
from neswap_core.choose.sources import PlanStage as PlanCandidate
from neswap_core.config import MASK_PLACEHOLDER
from neswap_core.generate.plan_engine import PlanResult, PlanStage
from neswap_core.generate.plans import Change

from .widgets import delta, highlight

#: Setting of a pinned plan release: {"release_id", "plan", "stage_index"} (its identity).
PLAN_SETTING = "chosen_plan"

KIND_LABELS = {"swap": "swapped entities", "term": "swapped distinctive terms",
               "one-vs-many": "leftover moved (one-vs-many)", "redact": "redacted word"}  # fmt: skip


@dataclass
class ReviewedPlan:
    """A plan candidate with the analyst's content-keyed decisions."""

    candidates: PlanCandidates
    release_id: str
    decisions: dict[str, tuple[str, str]]  # change key -> (decision, note)

    @property
    def row(self) -> pd.Series:
        return self.candidates.table.loc[self.release_id]

    @property
    def rejected(self) -> frozenset[str]:
        return frozenset(k for k, (d, _) in self.decisions.items() if d == "reject")

    @cached_property
    def generated(self) -> tuple[PlanResult, PlanStage]:
        return self.candidates.stage(self.release_id)

    @cached_property
    def reviewed(self) -> tuple[PlanResult, PlanStage]:
        return self.candidates.replay(self.release_id, self.rejected)

    def decision(self, change: Change) -> str:
        return self.decisions.get(change.key, ("", ""))[0]

    def note(self, change: Change) -> str:
        return self.decisions.get(change.key, ("", ""))[1]

    @cached_property
    def released_changes(self) -> tuple[Change, ...]:
        result, stage = self.reviewed
        return result.changes[: stage.n_changes]

    @cached_property
    def changes(self) -> list[Change]:
        """Every change to show: those in the release after review, then the rejected ones."""
        result, stage = self.generated
        released = list(self.released_changes)
        keys = {c.key for c in released}
        rejected = [c for c in result.changes[: stage.n_changes]
                    if c.key in self.rejected and c.key not in keys]  # fmt: skip
        return released + rejected

    def in_release(self, change: Change) -> bool:
        return change.key in {c.key for c in self.released_changes}

    @cached_property
    def measures_after(self) -> dict:
        return self.candidates.measures(*self.reviewed)

    def released_chunks(self) -> list[Chunk]:
        result, stage = self.reviewed
        return result.chunks_at(stage)

    def chunk(self, chunk_id: str, after: bool) -> Chunk:
        ctx = self.candidates.ctx
        position = ctx.position[chunk_id]
        if not after:
            return ctx.chunks[position]
        _, stage = self.reviewed
        return stage.changed.get(position, ctx.chunks[position])


def _emphasis(chunk: Chunk, strings: list[str]) -> list[tuple[int, int]]:
    """(start, end) of whole occurrences of ``strings`` in the chunk's text."""
    out = []
    for s in strings:
        if not s:
            continue
        start = chunk.text.find(s)
        while start >= 0:
            out.append((start, start + len(s)))
            start = chunk.text.find(s, start + len(s))
    return out


def change_strings(change: Change, side: int, after: bool) -> list[str]:
    """The strings of ``change`` to outline in chunk ``side`` (0 = chunk, 1 = partner)."""
    if change.kind == "redact":
        return [change.after or MASK_PLACEHOLDER] if after else [change.before]
    values = [(a, b) for _, a, b in change.detail] if change.detail else [(change.before, change.after)]
    if side == 0:
        return [b for _, b in values] if after else [a for a, _ in values]
    return [a for a, _ in values] if after else [b for _, b in values]


def chunk_html(review: ReviewedPlan, change: Change, side: int, after: bool) -> str:
    """HTML of one side of a change, before (pre-plan text) or after (text as released now)."""
    chunk = review.chunk(change.chunk_ids[side], after)
    return highlight(chunk.text, chunk.entities, _emphasis(chunk, change_strings(change, side, after)))


def change_title(change: Change) -> str:
    what = KIND_LABELS.get(change.kind, change.kind)
    where = f"round {change.round} · " if change.round and change.kind != "redact" else ""
    if change.kind == "redact":
        return f"{where}{what}: “{change.before}” → {change.after or MASK_PLACEHOLDER}"
    pairs = "; ".join(f"{a} ↔ {b}" for _, a, b in change.detail) or f"{change.before} ↔ {change.after}"
    return f"{where}{what}: {pairs}"


def after_label(review: ReviewedPlan, change: Change) -> str:
    """Never "as released" for a change the release does not contain."""
    if review.in_release(change):
        return "AFTER · as released"
    return "AFTER · rejected: not in the release (the text keeps the original)"


def plan_label(row: pd.Series) -> str:
    """Selector label of a plan candidate."""
    return (f"{row['release_id']} · {100 * row['chunks_changed']:.0f} % chunks changed, "
            f"{100 * row['words_unchanged']:.0f} % words kept, DR {row['dr']:.3f}")  # fmt: skip


CHANGES_PER_PAGE = 10
DECISION_LABELS = {"": "not reviewed", "accept": "✓ accept", "reject": "✗ reject"}


def _metrics(review: ReviewedPlan) -> None:
    import streamlit as st

    row, after = review.row, review.measures_after
    kept = sum(1 for c in review.changes if review.in_release(c))
    cols = st.columns(5)
    cols[0].metric("Changes in the release", f"{kept} of {len(review.changes)}",
                   help="Rejected changes are left out; the plan is replayed without them.")
    cols[1].metric("Words unchanged as generated", f"{100 * row['words_unchanged']:.1f} %")
    cols[2].metric("Words unchanged after your review", f"{100 * after['words_unchanged']:.1f} %",
                   delta=delta(after['words_unchanged'] - row['words_unchanged'], 1, " points", 100))
    cols[3].metric("DR after your review", f"{after['dr']:.4f}",
                   delta=delta(after['dr'] - row['dr'], 4), delta_color="inverse")
    cols[4].metric("DU after your review", f"{after['du']:.5f}", delta=delta(after['du'] - row['du'], 5))
    st.caption(f"{row['description']} · chunks changed after review: "
               f"{100 * after['chunks_changed']:.0f} % · mean cosine before/after "
               f"{after['mean_cosine']:.3f} · clusters kept {100 * after['clusters_unchanged']:.0f} %")


def render_plan_review(candidates: PlanCandidates, release_id: str, stage, ws) -> None:
    """The review of a plan candidate: measures as generated / after review, every change."""
    import streamlit as st

    from .state import save_decision

    review = ReviewedPlan(candidates, release_id, ws.decisions(stage.review_key))
    if pinned_plan(stage, candidates) != release_id:
        st.button("Use this release for export", key="plan_use", on_click=pin_plan,
                  args=(ws, candidates, release_id),
                  help="Pin this plan release: the Export page writes it, and run.toml records "
                  "its plan and stage so the command line writes the same files.")
    _metrics(review)

    changes = review.changes
    n_pages = max(1, -(-len(changes) // CHANGES_PER_PAGE))
    page = 1
    if n_pages > 1:
        page = st.number_input(f"Page of changes (1–{n_pages}, {CHANGES_PER_PAGE} per page)", 1,
                               n_pages, key="plan_page")  # fmt: skip
    for change in changes[(page - 1) * CHANGES_PER_PAGE : page * CHANGES_PER_PAGE]:
        decision_key, note_key = f"pdec::{change.key}", f"pnote::{change.key}"
        with st.container(border=True, key=f"change_{change.key}"):
            st.markdown(f"**{change_title(change)}**")
            sides = range(len(change.chunk_ids))
            for after, label in ((False, "BEFORE"), (True, after_label(review, change))):
                st.caption(label)
                for side, column in zip(sides, st.columns(len(change.chunk_ids)), strict=True):
                    column.markdown(chunk_html(review, change, side, after), unsafe_allow_html=True)
            st.session_state[decision_key] = review.decision(change)
            st.session_state[note_key] = review.note(change)
            left, right = st.columns([1, 2])
            left.radio("Decision", list(DECISION_LABELS), format_func=DECISION_LABELS.get,
                       key=decision_key, horizontal=True, on_change=save_decision,
                       args=(ws, stage.review_key, change.key, decision_key, note_key))  # fmt: skip
            right.text_input("Note (optional)", key=note_key, disabled=not review.decision(change),
                             on_change=save_decision,
                             args=(ws, stage.review_key, change.key, decision_key, note_key))  # fmt: skip


def pinned_plan(stage, plans) -> str | None:
    """The plan release the analyst pinned, found by its plan and stage (None if none or gone)."""
    pinned = stage.settings.get(PLAN_SETTING) or {}
    if plans is None or pinned.get("release_id") != stage.settings.get("chosen_release"):
        return None
    return find_plan_release(plans, pinned.get("plan", {}), int(pinned.get("stage_index", 0)))


def pin_plan(ws, plans, release_id: str) -> None:
    """Pin a plan candidate for export: its id for the pages, its plan and stage as identity."""
    from .state import save_settings

    identity = PlanCandidate(plans, release_id).identity()
    save_settings(ws, chosen_release=release_id,
                  **{PLAN_SETTING: {"release_id": release_id, "plan": identity["release_plan"],
                                    "stage_index": identity["release_stage"]}})


# --- the release to export ----------------------------------------------------------------------------
