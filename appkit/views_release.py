"""View helpers of the Swaps and Export pages: the release under review with the analyst's
accept/reject decisions, its pairs side by side, and the export files (SPEC §3, §5, §6).

Nothing here refits or re-embeds. A release is read from the cached ``Sweep``; the review only
re-sums the stored per-pair δ and h (``releases.evaluate_records``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import streamlit as st

from neswap_core import Chunk
from neswap_core.choose.frontier import TradeOffChoice, choose_release
from neswap_core.choose.review import pair_key as _pair_key
from neswap_core.choose.sources import PaperRound
from neswap_core.generate.releases import DrawResult, Sweep, evaluate_records
from neswap_core.generate.swapping import SwapRecord

from .state import plain_message
from .widgets import highlight


# --- keys -----------------------------------------------------------------------------------------
def release_key(sweep_key: str, release_id: str) -> str:
    """Workspace namespace of a paper release's review decisions: the sweep's settings plus the
    release's category combination, not its number of swaps ("Organization + Location @ 7" and
    "@ 6" share it). Release t of a combination is the first t pairs of the same draw, so a pair
    and the entities it exchanges are the same in every t: a decision belongs to the pair
    (issue 13), and choosing another t on the line keeps it."""
    return f"{sweep_key}/{release_id.rsplit(' @ ', 1)[0]}"


def pair_key(record: SwapRecord) -> str:
    """Workspace key of one swapped pair: ``"chunk_a|chunk_b"`` (choose/chosen.py)."""
    return _pair_key(record)


def pick_release(table: pd.DataFrame, stored: str | None, a: float, c: float) -> tuple[str | None, TradeOffChoice]:
    """The release in use (the analyst's stored pick if it still exists, else the line's) and the line's choice."""
    choice = choose_release(table, a, c)
    if stored and len(table) and stored in table.index:
        return stored, choice
    return choice.index, choice


def release_label(row: pd.Series) -> str:
    """Selector label of a release, e.g. "Organization + Product @ 28 · DR 0.962, DU 0.9981"."""
    return f"{row['release_id']} · DR {row['dr']:.3f}, DU {row['du']:.4f}"


# --- the release under review ---------------------------------------------------------------------
@dataclass
class ReviewedRelease:
    """One candidate release (J, t) of a sweep with the analyst's accept/reject decisions.

    The released text is draw 0's first t pairs (analysis.py); undecided pairs stay in the
    release, rejected ones are left out and their δ and h no longer count.
    """

    sweep: Sweep
    row: pd.Series
    key: str
    decisions: dict[str, tuple[str, str]]
    population: float

    def __post_init__(self) -> None:
        # The namespace holds the decisions of every t of the combination: keep this release's.
        mine = {pair_key(r) for r in self.records}
        self.decisions = {k: v for k, v in self.decisions.items() if k in mine}

    @property
    def pair_keys(self) -> list[str]:
        return [pair_key(r) for r in self.records]

    @property
    def draw(self) -> DrawResult:
        return self.sweep.draws_for(tuple(self.row["categories"]))[0]

    @property
    def records(self) -> tuple[SwapRecord, ...]:
        return self.draw.run.records[: int(self.row["swaps"])]

    def decision(self, record: SwapRecord) -> str:
        """"accept", "reject" or "" (not reviewed yet)."""
        return self.decisions.get(pair_key(record), ("", ""))[0]

    def note(self, record: SwapRecord) -> str:
        return self.decisions.get(pair_key(record), ("", ""))[1]

    @property
    def accepted_positions(self) -> list[int]:
        return [i for i, r in enumerate(self.records) if self.decision(r) != "reject"]

    @property
    def accepted_records(self) -> list[SwapRecord]:
        return [self.records[i] for i in self.accepted_positions]

    @property
    def n_rejected(self) -> int:
        return len(self.records) - len(self.accepted_positions)

    def as_generated(self) -> tuple[float, float]:
        """(DU, DR) of the released draw with every pair."""
        return evaluate_records(self.sweep, self.draw, range(len(self.records)), self.population)

    def after_review(self) -> tuple[float, float]:
        """(DU, DR) with the rejected pairs left out."""
        return evaluate_records(self.sweep, self.draw, self.accepted_positions, self.population)

    def released_chunks(self) -> list[Chunk]:
        """Every chunk of the corpus as released: accepted pairs swapped, the rest pre-swap
        (``choose.sources.PaperRound.review``, as the CLI writes it)."""
        return list(PaperRound(self.sweep, self.row, self.population).review(self.decisions).chunks)

    def review_rows(self) -> dict[str, tuple[str, str]]:
        """pair → (decision, note) for every pair, "accept (not reviewed)" for undecided ones."""
        return {
            f"{r.step}: {pair_key(r)}": (self.decision(r) or "accept (not reviewed)", self.note(r))
            for r in self.records
        }


def reviewed_release(sweep: Sweep, sweep_key: str, table: pd.DataFrame, release_id: str,
                     decisions_of: Callable[[str], dict], population: float) -> ReviewedRelease:
    """The release ``release_id`` of ``table`` with its stored decisions."""
    key = release_key(sweep_key, release_id)
    return ReviewedRelease(sweep, table.loc[release_id], key, decisions_of(key), float(population))


@dataclass(frozen=True)
class PairView:
    """A swapped pair before and after, with the swapped mentions to emphasise."""

    record: SwapRecord
    before: tuple[Chunk, Chunk]
    after: tuple[Chunk, Chunk]
    similarity: float  # cosine of the two chunks' pre-swap embeddings

    def emphasis(self, side: int, after: bool) -> list[tuple[int, int]]:
        """(start, end) of the entities that moved out of (before) or into (after) chunk ``side``."""
        rec = self.record
        out_a = {(cat, va) for cat, va, _ in rec.exchanged}
        out_b = {(cat, vb) for cat, _, vb in rec.exchanged}
        if rec.suppress_leftovers:
            out_a |= set(rec.leftovers_a)
            out_b |= set(rec.leftovers_b)
        if after:
            values = out_b if side == 0 else out_a
            chunk = self.after[side]
        else:
            values = out_a if side == 0 else out_b
            chunk = self.before[side]
        return [(s.start, s.end) for s in chunk.entities if (s.category, s.text) in values]

    def excerpt_html(self, side: int, after: bool) -> str:
        """HTML of the parts of one chunk around its swapped mentions."""
        chunk = (self.after if after else self.before)[side]
        return highlight(*excerpt(chunk, self.emphasis(side, after)))

    def full_html(self, side: int, after: bool) -> str:
        chunk = (self.after if after else self.before)[side]
        return highlight(chunk.text, chunk.entities, self.emphasis(side, after))

    def exchange_text(self) -> str:
        """E.g. "Apple ↔ Microsoft (Organization); iPhone ↔ Surface (Product)"."""
        parts = [f"{va} ↔ {vb} ({cat})" for cat, va, vb in self.record.exchanged]
        return "; ".join(parts) or "nothing exchanged (every value is shared or left over)"


def excerpt(chunk: Chunk, emphasis: Sequence[tuple[int, int]], context: int = 100):
    """The parts of ``chunk`` around the emphasised spans (± ``context`` characters, cut at
    spaces, joined by " … "), with entity spans and emphasis shifted: (text, spans, emphasis)."""
    text, n = chunk.text, len(chunk.text)
    if not emphasis:
        emphasis_windows = [(0, min(n, 2 * context))]
    else:
        emphasis_windows = [(max(0, a - context), min(n, b + context)) for a, b in sorted(emphasis)]
    windows: list[list[int]] = []
    for start, end in emphasis_windows:
        if start > 0:
            k = text.find(" ", start)
            start = k + 1 if 0 <= k < start + context else start
        if end < n:
            k = text.rfind(" ", start, end)
            end = k if k > start else end
        if windows and start <= windows[-1][1] + 1:
            windows[-1][1] = max(windows[-1][1], end)
        else:
            windows.append([start, end])
    pieces, shift, cursor = [], [], 0
    for i, (start, end) in enumerate(windows):
        lead = " … " if i > 0 else ("… " if start > 0 else "")
        pieces.append(lead + text[start:end])
        cursor += len(lead)
        shift.append((start, end, cursor - start))
        cursor += end - start
    tail = " …" if windows[-1][1] < n else ""

    def moved(a: int, b: int) -> tuple[int, int] | None:
        for start, end, d in shift:
            if start <= a and b <= end:
                return a + d, b + d
        return None

    spans = [replace(s, start=m[0], end=m[1]) for s in chunk.entities if (m := moved(s.start, s.end))]
    marks = [m for a, b in emphasis if (m := moved(a, b))]
    return "".join(pieces) + tail, spans, marks


def pair_views(release: ReviewedRelease) -> list[PairView]:
    """Side-by-side views of every pair of the release, in swap order."""
    run, x = release.draw.run, release.sweep.ctx.embeddings
    views = []
    for rec, (new_a, new_b) in zip(release.records, run.swapped, strict=False):
        xa, xb = x[rec.index_a], x[rec.index_b]
        cos = float(xa @ xb / max(np.linalg.norm(xa) * np.linalg.norm(xb), 1e-12))
        views.append(PairView(rec, (run.base[rec.index_a], run.base[rec.index_b]), (new_a, new_b), cos))
    return views


def progress_bar(label: str) -> Callable[[float, str], None]:
    """A (fraction, message) callback showing stage, percent and time left (``progress_display``)."""
    from .widgets import progress_display

    return progress_display(label)


def ensure_sweep(stage) -> Sweep:
    """The stage's sweep; the first time, with progress bars for the fit and the releases."""
    stage.mixture(progress_bar("Fitting the clusters (once per setting; see 3 · Clusters)"))
    return stage.sweep(progress_bar("Building candidate releases"))


def sweep_table_or_stop(stage, population: float, what: str, advice: str = "") -> tuple[Sweep, pd.DataFrame]:
    """The sweep and its release table, or stop the page saying why there is nothing to ``what``
    (e.g. "check"): the runs' own reasons and where to go back. Errors become sentences."""
    from .widgets import user_errors

    with user_errors():
        sweep = ensure_sweep(stage)
        table = stage.table(population)
    if len(table) == 0:
        st.warning(f"There is no release to {what}: no combination had a valid pair to swap. "
                   + plain_message(" ".join(sweep.messages())) + " Go back to **2 · Entities & roles** or "
                   "**3 · Clusters**" + (f" {advice}" if advice else "") + ".")
        st.stop()
    return sweep, table
