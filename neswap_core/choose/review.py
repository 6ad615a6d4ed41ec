"""The analyst's review of a candidate, and the release it leaves (SPEC §3, §10, §11).

A review decision is keyed by the content of the change it is about, never by a position that
moves when settings change: ``"chunk_a|chunk_b"`` for a pair of the paper's sampler
(``pair_key``), ``Change.key`` for a change of a plan. A rejected change is left out of the
release (``choose.sources``: a paper release keeps its other pairs, a plan is replayed without
it); a change nobody reviewed stays in. run.toml carries the decisions as a list of tables
``{key, decision, note}`` (``decision_rows``); the workspace keeps them as
``{key: (decision, note)}`` (``decision_map`` converts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from ..corpus import Chunk
from ..generate.swapping import SwapRecord

ACCEPT, REJECT = "accept", "reject"
#: Decisions of every change: {change key: (decision, note)}.
Decisions = Mapping[str, tuple[str, str]]


def pair_key(record: SwapRecord) -> str:
    """Content key of one swapped pair of a paper release: ``"chunk_a|chunk_b"``."""
    return f"{record.chunk_a}|{record.chunk_b}"


def rejected_keys(decisions: Iterable[Mapping[str, str]]) -> frozenset[str]:
    """The keys of the rejected changes among run.toml's ``decisions`` tables."""
    return frozenset(str(d["key"]) for d in decisions if d.get("decision") == REJECT)


def decision_rows(decisions: Decisions) -> list[dict[str, str]]:
    """run.toml's ``decisions`` from the workspace's {key: (decision, note)}, sorted by key."""
    return [{"key": k, "decision": d, "note": n} for k, (d, n) in sorted(decisions.items())]


def decision_map(rows: Iterable[Mapping[str, str]]) -> dict[str, tuple[str, str]]:
    """{key: (decision, note)} from run.toml's ``decisions`` tables."""
    return {str(d["key"]): (str(d["decision"]), str(d.get("note", ""))) for d in rows}


@dataclass(frozen=True, eq=False)
class ChosenRelease:
    """The released text of one candidate after review, and what was released of it.

    ``changes``: the released units (swapped pairs or plan changes) in order; ``log``: their
    change log (``log_name`` in key/: ``swap_log.csv`` for the paper's sampler, ``changes.csv``
    for a plan); ``review``: every change of the candidate as generated with its decision
    (key/decisions.csv); ``measures``: DU, DR, … of the reviewed text; ``draws``: the
    {position: text} of each Monte Carlo draw of the candidate when nothing was rejected, else
    the reviewed text alone (attack.json's spread over draws); ``identity``: run.toml's
    ``release``, ``release_plan`` and ``release_stage`` that find this candidate again.
    """

    release_id: str
    chunks: tuple[Chunk, ...]  # every chunk of the corpus as released
    changes: tuple = ()
    generated: int = 0  # changes of the candidate before review
    rejected: int = 0  # of those, left out by the review
    log_name: str = "changes.csv"
    log: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    review: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    measures: Mapping[str, float] = field(default_factory=dict)
    draws: tuple[Mapping[int, str], ...] = ()
    identity: Mapping[str, object] = field(default_factory=dict)
    seed: tuple[int, ...] = ()  # the seed of the released draw (paper) or of the plan
    unit: str = "changes"  # what one change is called in sentences ("pairs" for the paper)

    def changed(self, base) -> dict[int, str]:
        """{position: released text} of every chunk whose text differs from ``base``."""
        return {i: c.text for i, c in enumerate(self.chunks) if c.text != base[i].text}

    def review_sentence(self) -> str:
        """E.g. "9 of 10 changes kept (1 rejected)"."""
        kept = self.generated - self.rejected
        text = f"{kept} of {self.generated} {self.unit} kept ({self.rejected} rejected)"
        if self.rejected and len(self.changes) != kept:  # a plan replayed without them
            text += f"; replayed without them, the release makes {len(self.changes)} changes"
        return text


def swap_review_frame(records, decisions: Decisions) -> pd.DataFrame:
    """key/decisions.csv of a paper release: one row per pair as generated, decision and note."""
    def decision(r):
        return decisions.get(pair_key(r), ("", ""))

    return pd.DataFrame([
        {"pair": r.step, "chunk a": r.chunk_a, "chunk b": r.chunk_b,
         "protected a": r.protected_a, "protected b": r.protected_b,
         "decision": decision(r)[0] or "not reviewed (kept)", "note": decision(r)[1]}
        for r in records
    ])  # fmt: skip


def change_review_frame(changes, released_keys: set[str], decisions: Decisions) -> pd.DataFrame:
    """key/decisions.csv of a plan release: every change (released, then rejected ones)."""
    return pd.DataFrame([
        {"kind": c.kind, "round": c.round, "chunk": c.chunk_id, "partner": c.partner_chunk_id or "",
         "before": c.before, "after": c.after, "in release": c.key in released_keys,
         "decision": decisions.get(c.key, ("", ""))[0] or "not reviewed (kept)",
         "note": decisions.get(c.key, ("", ""))[1], "key": c.key}
        for c in changes
    ])  # fmt: skip
