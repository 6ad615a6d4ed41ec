"""Plans: ordered operator steps on the pre-swap data, and every change they make (SPEC §10).

A ``Plan`` is a tuple of small frozen steps, each serialisable with ``to_dict``/``from_dict``:

* ``SwapRound``: up to ``rounds`` rounds of swapping J (own budget per round). Within a round a
  chunk is swapped at most once (constraint 5), a pair is never repeated across rounds, z is
  recomputed from the current chunks (their entity spans follow every rewrite, no re-NER)
  before each round, so constraint 4 uses the current text; rounds stop at the coverage target
  (share of the chunks holding an entity of J at the step's start that any step changed) or
  when no valid pair is left. Floors: pair cosine (pre-plan embeddings) and cluster ρ.
* ``OneVsMany``: the leftover values of the previous round (the larger side's unmatched
  entities) are each exchanged with a value of a further valid partner, drawn uniformly.
* ``TermSwap``: distinctive terms (terms.py) of each chunk's own company become spans of the
  category ``Term``; later rounds that list ``Term`` exchange them.
* ``Redact``: the "redact" helper's operators (generate/redaction.py), at a level K %.

Every applied change is a ``Change`` keyed by its content (chunk ids and exchanged strings, not
the step number or a release index), so an analyst's reject decision survives another release
choice. ``apply_plan(..., rejected=keys)`` replays the plan with the same seed and skips every
drawn change whose key is rejected (its pair still counts as used), so a rejected change is
never in the released text; later changes may then differ and are new keys.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from ..config import (
    DEFAULT_CONCENTRATION_FLOOR,
    DEFAULT_PLAN_COVERAGE,
    DEFAULT_SIMILARITY_FLOOR,
    DEFAULT_TARGETED_MARGIN,
    DEFAULT_TERM_MIN_Z,
    DEFAULT_TERM_TOP_K,
    TERM_CATEGORY,
)
from ..corpus import Chunk
from ..errors import ConfigError
from .pairs import REQUIRE_OPTIONS


# --- the reviewable unit --------------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """One reviewable change: ``before`` → ``after`` in ``chunk_id`` (and its partner, if any).

    kind: 'swap' | 'term' | 'one-vs-many' | 'redact'. For a swap, ``before`` lists what left
    ``chunk_id`` and ``after`` what came in from ``partner_chunk_id``; ``detail`` holds the
    exchanged (category, value in chunk, value in partner) triples.
    """

    step: int  # 1-based position of the plan step (a round of a SwapRound counts as its step)
    kind: str
    chunk_id: str
    before: str
    after: str
    partner_chunk_id: str | None = None
    detail: tuple = ()
    round: int = 0  # 1-based swap round of the plan (0: not a round)

    @property
    def key(self) -> str:
        """Content key: the same exchange in another release or step has the same key."""
        content = [self.kind, self.chunk_id, self.partner_chunk_id, self.before, self.after,
                   [list(d) if isinstance(d, tuple) else d for d in self.detail]]  # fmt: skip
        return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:20]

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        return (self.chunk_id,) if self.partner_chunk_id is None else (self.chunk_id, self.partner_chunk_id)

    def to_dict(self) -> dict[str, Any]:
        row = asdict(self)
        row["detail"] = "; ".join(" | ".join(map(str, d)) if isinstance(d, tuple) else str(d)
                                  for d in self.detail)  # fmt: skip
        row["key"] = self.key
        return row


# --- steps --------------------------------------------------------------------------------------
def _floor_checks(similarity: float, concentration: float) -> None:
    if not -1.0 <= similarity <= 1.0:
        raise ConfigError(f"similarity_floor is a cosine in [-1, 1], got {similarity}.")
    if not 0.0 <= concentration < 1.0:
        raise ConfigError(f"concentration_floor is a ρ in [0, 1), got {concentration}.")


@dataclass(frozen=True)
class SwapRound:
    """Rounds of swapping the categories J (may include ``Term``), see the module docstring.

    budget: max pairs per round (0 = as many as valid). rounds: max rounds (>= 1).
    coverage: proportion in (0, 1] of the chunks with an entity of J to change before stopping.
    """

    kind: ClassVar[str] = "swap"
    categories: tuple[str, ...] = ("Organization", "Location")
    budget: int = 0
    rounds: int = 1
    require: str = "any"
    coverage: float = 1.0
    similarity_floor: float = -1.0
    concentration_floor: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", tuple(self.categories))
        if not self.categories:
            raise ConfigError("A swap round needs at least one category.")
        if self.require not in REQUIRE_OPTIONS:
            raise ConfigError(f"require must be 'all' or 'any', got {self.require!r}.")
        if self.budget < 0 or self.rounds < 1:
            raise ConfigError("A swap round needs budget >= 0 (0 = no limit) and rounds >= 1.")
        if not 0.0 < self.coverage <= 1.0:
            raise ConfigError(f"coverage is a proportion in (0, 1], got {self.coverage}.")
        _floor_checks(self.similarity_floor, self.concentration_floor)


@dataclass(frozen=True)
class OneVsMany:
    """Move the previous round's leftover entities to further valid partners."""

    kind: ClassVar[str] = "one-vs-many"
    similarity_floor: float = -1.0

    def __post_init__(self) -> None:
        _floor_checks(self.similarity_floor, 0.0)


@dataclass(frozen=True)
class TermSwap:
    """Mark each chunk's company-distinctive terms as the swappable category ``Term``."""

    kind: ClassVar[str] = "term"
    min_z: float = DEFAULT_TERM_MIN_Z
    top_k: int = DEFAULT_TERM_TOP_K

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ConfigError(f"top_k (terms per company) must be >= 1, got {self.top_k}.")


REDACT_METHODS = ("smarter", "ranker", "targeted")


@dataclass(frozen=True)
class Redact:
    """Mask ``level`` of the words (SPEC §9): the top share of each chunk ("smarter", paper 001;
    "ranker", paper 002) or one corpus-wide budget spent where it flips the defender's guess
    ("targeted", generate/targeted.py; ``margin`` is its flip margin in log-probability)."""

    kind: ClassVar[str] = "redact"
    level: float = 0.1
    method: str = "smarter"
    margin: float = DEFAULT_TARGETED_MARGIN
    fill: str = "mask"  # "mask" (placeholder) or "decoy" (targeted only: targeted.with_decoys)

    def __post_init__(self) -> None:
        if self.fill not in ("mask", "decoy") or (self.fill == "decoy" and self.method != "targeted"):
            raise ConfigError(f"fill must be 'mask', or 'decoy' with method 'targeted'; got {self.fill!r}.")
        if not 0.0 <= self.level <= 1.0:
            raise ConfigError(f"redaction level is a proportion in [0, 1], got {self.level}.")
        if self.method not in REDACT_METHODS:
            raise ConfigError(f"redaction method must be one of {REDACT_METHODS}, got {self.method!r}.")
        if not self.margin >= 0.0:
            raise ConfigError(f"the targeted redaction margin is a log-probability gap >= 0, got {self.margin}.")


Step = SwapRound | OneVsMany | TermSwap | Redact
STEP_TYPES: dict[str, type] = {t.kind: t for t in (SwapRound, OneVsMany, TermSwap, Redact)}


def step_to_dict(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": step.kind}
    for f in fields(step):
        value = getattr(step, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def step_from_dict(data: Mapping[str, Any]) -> Step:
    data = dict(data)
    kind = data.pop("kind", None)
    if kind not in STEP_TYPES:
        raise ConfigError(f"Unknown plan step kind {kind!r}; known: {sorted(STEP_TYPES)}.")
    cls = STEP_TYPES[kind]
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ConfigError(f"Unknown settings {sorted(unknown)} for a {kind!r} step; known: {sorted(names)}.")
    if "categories" in data:
        data["categories"] = tuple(data["categories"])
    return cls(**data)


@dataclass(frozen=True)
class Plan:
    """An ordered tuple of steps (SPEC §10); ``Plan.paper(J)`` is the paper's single round."""

    steps: tuple[Step, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        for step in self.steps:
            if not isinstance(step, tuple(STEP_TYPES.values())):
                raise ConfigError(f"Not a plan step: {step!r}.")
        swaps = [s for s in self.steps if isinstance(s, SwapRound)]
        if any(TERM_CATEGORY in s.categories for s in swaps) and not any(
            isinstance(s, TermSwap) for s in self.steps
        ):
            raise ConfigError("A round swaps 'Term' but the plan has no TermSwap step before it.")

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [step_to_dict(s) for s in self.steps]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        return cls(tuple(step_from_dict(s) for s in data.get("steps", ())))

    @property
    def swap_rounds(self) -> int:
        """The largest number of swap rounds the plan may make."""
        return sum(s.rounds for s in self.steps if isinstance(s, SwapRound))

    def steps_categories(self) -> tuple[str, ...]:
        """Every category some swap round of the plan exchanges, in first-use order."""
        seen: dict[str, None] = {}
        for s in self.steps:
            if isinstance(s, SwapRound):
                seen.update(dict.fromkeys(s.categories))
        return tuple(seen)

    @property
    def risk_categories(self) -> tuple[str, ...]:
        """J of the DR (first swap round's entity categories; see ``plan_risk`` in candidates)."""
        for s in self.steps:
            if isinstance(s, SwapRound):
                return tuple(c for c in s.categories if c != TERM_CATEGORY)
        return ()

    def describe(self) -> str:
        """E.g. "3 rounds of swapping Organization + Location + Term, one-vs-many, 8 % of words masked"."""
        parts = []
        for s in self.steps:
            if isinstance(s, SwapRound):
                rounds = "1 round" if s.rounds == 1 else f"up to {s.rounds} rounds"
                names = " + ".join("distinctive terms" if c == TERM_CATEGORY else c for c in s.categories)
                parts.append(f"{rounds} of swapping {names}")
            elif isinstance(s, OneVsMany):
                parts.append("leftovers moved one-vs-many")
            elif isinstance(s, Redact):
                how = ("targeted: where they flip a company model's guess" if s.method == "targeted"
                       else s.method)  # fmt: skip
                filled = ", filled with decoy terms" if s.fill == "decoy" else ""
                parts.append(f"{100 * s.level:g} % of words masked ({how}{filled})")
        return ", ".join(parts) or "no change"


def default_plan(categories: Sequence[str], *, rounds: int = 3, terms: bool = True,
                 redaction: float = 0.0, redaction_method: str = "targeted", fill: str = "mask",
                 require: str = "any",
                 coverage: float = DEFAULT_PLAN_COVERAGE,
                 similarity_floor: float = DEFAULT_SIMILARITY_FLOOR,
                 concentration_floor: float = DEFAULT_CONCENTRATION_FLOOR,
                 one_vs_many: bool = True) -> Plan:  # fmt: skip
    """The plan of the grid: [terms] → rounds of J (+ Term) → [one-vs-many] → [redaction]
    (targeted by default: one corpus budget spent where it flips the defender, targeted.py)."""
    cats = tuple(categories) + ((TERM_CATEGORY,) if terms else ())
    steps: list[Step] = [TermSwap()] if terms else []
    steps.append(SwapRound(cats, rounds=rounds, require=require, coverage=coverage,
                           similarity_floor=similarity_floor,
                           concentration_floor=concentration_floor))  # fmt: skip
    if one_vs_many:
        steps.append(OneVsMany(similarity_floor=similarity_floor))
    if redaction > 0:
        steps.append(Redact(redaction, redaction_method, fill=fill))
    return Plan(tuple(steps))


def swap_change(step: int, round_: int, a: Chunk, b: Chunk, exchanges) -> Change:
    """The Change of one swapped pair from its ``rewrite.Exchange`` objects."""
    detail = tuple((ex.category, va, vb) for ex in exchanges for va, vb in ex.pairs)
    kind = "term" if detail and all(c == TERM_CATEGORY for c, _, _ in detail) else "swap"
    return Change(step, kind, a.chunk_id, "; ".join(v for _, v, _ in detail),
                  "; ".join(v for _, _, v in detail), b.chunk_id, detail, round_)  # fmt: skip


def apply_plan(ctx, plan: Plan, rng: np.random.Generator, rejected: frozenset[str] = frozenset(),
               resources=None, progress=None):  # fmt: skip
    """Apply ``plan`` to the pre-swap data of ``ctx`` (a ``ReleaseContext``); see plan_engine.
    ``progress(fraction, message)``: told before each step."""
    from .plan_engine import run_plan

    if not isinstance(rng, np.random.Generator):
        raise ConfigError("Pass a numpy.random.Generator, e.g. numpy.random.default_rng(seed).")
    return run_plan(ctx, plan, rng, frozenset(rejected), resources, progress)
