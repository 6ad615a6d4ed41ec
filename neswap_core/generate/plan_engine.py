"""Running a plan (SPEC §10): the rounds, one-vs-many, term tagging and redaction, in order.

``run_plan`` keeps the current chunks, which positions any step changed and which a swap
changed, the pairs used so far and the last round's leftovers; after every round (or other
changing step) it stores a ``PlanStage`` snapshot, so a plan of R rounds yields the candidate
releases after round 1, 2, …, R without re-running anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..config import DEFAULT_TARGETED_FOLDS, TERM_CATEGORY
from ..corpus import Chunk
from .plans import Change, OneVsMany, Plan, Redact, SwapRound, TermSwap, swap_change
from .rewrite import swap_pair
from .rounds import Floors, Leftover, exchange_one, round_codes, round_pairs


@dataclass
class PlanResources:
    """Models a plan fits on the pre-plan chunks once and reuses (terms, redactors)."""

    base: Sequence[Chunk]
    terms: dict = field(default_factory=dict)  # (min_z, top_k) -> DistinctiveTerms
    redactors: dict = field(default_factory=dict)  # method -> fitted redactor

    def term_model(self, step: TermSwap):
        from ..models.log_odds import fit_terms

        key = (step.min_z, step.top_k)
        if key not in self.terms:
            self.terms[key] = fit_terms(self.base, min_z=step.min_z, top_k=step.top_k)
        return self.terms[key]

    def redactor(self, method: str, level: float):
        """The word scorer of a redaction method, fitted once on the pre-plan chunks.

        The smarter redactor does not depend on the level; the learned ranker is trained for
        the level it will mask (paper 002), with the chunks' protected values as groups.
        """
        key = (method, float(level) if method == "ranker" else None)
        if key not in self.redactors:
            texts, labels = [c.text for c in self.base], [c.protected for c in self.base]
            if method == "targeted":
                from .targeted import TargetedRedactor

                self.redactors[key] = TargetedRedactor(n_folds=DEFAULT_TARGETED_FOLDS).fit(
                    texts, labels, [c.doc_id for c in self.base]
                )
            elif method == "smarter":
                from .redaction import SmarterRedactor

                self.redactors[key] = SmarterRedactor().fit(texts, labels)
            else:
                from .ranker import LearnedRanker

                self.redactors[key] = LearnedRanker(level=level).fit(texts, labels)
        return self.redactors[key]


@dataclass(frozen=True)
class PlanStage:
    """The release after one round or changing step: a prefix of the plan's changes."""

    label: str
    step: int  # 1-based plan step
    round: int  # swap rounds done so far
    n_changes: int  # the stage's changes are result.changes[:n_changes]
    changed: dict  # {position: chunk} of every chunk changed so far
    swapped: frozenset[str]  # chunk ids changed by a swap, term swap or one-vs-many
    coverage: float  # share of the current swap step's swappable chunks changed
    message: str = ""


@dataclass(frozen=True)
class PlanResult:
    plan: Plan
    base: tuple[Chunk, ...]
    changes: tuple[Change, ...]
    stages: tuple[PlanStage, ...]

    def chunks_at(self, stage: PlanStage | None = None) -> list[Chunk]:
        stage = stage or (self.stages[-1] if self.stages else None)
        out = list(self.base)
        for position, chunk in (stage.changed if stage else {}).items():
            out[position] = chunk
        return out

    @property
    def chunks(self) -> list[Chunk]:
        return self.chunks_at()


@dataclass
class _State:
    chunks: list[Chunk]
    changed: dict[int, Chunk] = field(default_factory=dict)
    swapped: set[int] = field(default_factory=set)
    used: set[tuple[int, int]] = field(default_factory=set)
    changes: list[Change] = field(default_factory=list)
    leftovers: list[Leftover] = field(default_factory=list)
    rounds: int = 0
    origins: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    def note_origins(self) -> None:
        """Remember which protected values held each (category, value) before any exchange.

        Only distinctive terms are tracked (compared case-insensitively): a term belongs to one
        company, so a later round must not hand it back to that company's chunks. Entity values
        are often shared by several companies ("U.S."), so they are not restricted.
        """
        for chunk in self.chunks:
            for span in chunk.entities:
                if span.category == TERM_CATEGORY:
                    self.origins.setdefault(_origin_key(span.category, span.text), set()).add(
                        chunk.protected
                    )

    def put(self, position: int, chunk: Chunk, swap: bool = True) -> None:
        self.chunks[position] = chunk
        self.changed[position] = chunk
        if swap:
            self.swapped.add(position)

    def returns(self, chunk: Chunk, category: str, value: str) -> bool:
        """True when ``value`` would come back to a chunk of a company that held it originally."""
        return chunk.protected in self.origins.get(_origin_key(category, value), ())


def _origin_key(category: str, value: str) -> tuple[str, str]:
    return (category, value.lower() if category == TERM_CATEGORY else value)


def _stage(state: _State, label: str, step: int, coverage: float, message: str = "") -> PlanStage:
    ids = frozenset(state.chunks[p].chunk_id for p in state.swapped)
    return PlanStage(label, step, state.rounds, len(state.changes), dict(state.changed), ids,
                     coverage, message)  # fmt: skip


def _one_round(ctx, state: _State, step_no: int, s: SwapRound, rng, rejected, rho) -> int:
    """One round of ``s``: draws pairs in uniform random order, greedily; returns pairs swapped."""
    codes = round_codes(state.chunks, ctx.labels, s.categories, s.require)
    floors = Floors(s.similarity_floor, s.concentration_floor)
    pairs = round_pairs(codes, ctx.embeddings, floors, rho, frozenset(state.used))
    free = np.ones(len(state.chunks), dtype=bool)
    done = 0
    state.leftovers = []
    for k in rng.permutation(len(pairs)):
        if s.budget and done >= s.budget:
            break
        i, j = int(pairs[k, 0]), int(pairs[k, 1])
        if not (free[i] and free[j]):
            continue
        a, b = state.chunks[i], state.chunks[j]
        new_a, new_b, exchanges = swap_pair(a, b, s.categories)
        if not any(ex.pairs for ex in exchanges):
            continue  # nothing can move without duplicating a value: not a swap
        if any(state.returns(a, ex.category, vb) or state.returns(b, ex.category, va)
               for ex in exchanges for va, vb in ex.pairs):  # fmt: skip
            continue  # a later round must not give a company its own values back
        state.used.add((i, j))
        change = swap_change(step_no, state.rounds + 1, a, b, exchanges)
        if change.key in rejected:
            continue
        state.put(i, new_a)
        state.put(j, new_b)
        state.changes.append(change)
        free[i] = free[j] = False
        done += 1
        for ex in exchanges:
            state.leftovers += [Leftover(i, ex.category, v) for v in ex.leftovers_a]
            state.leftovers += [Leftover(j, ex.category, v) for v in ex.leftovers_b]
    return done


def _swap_rounds(ctx, state: _State, step_no: int, s: SwapRound, rng, rejected, stages) -> None:
    rho = np.asarray(ctx.mixture.concentrations_, dtype=float)
    holds = np.array([any(c.values(cat) for cat in s.categories) for c in state.chunks])
    swappable = np.flatnonzero(holds)
    for _ in range(s.rounds):
        done = _one_round(ctx, state, step_no, s, rng, rejected, rho)
        if done == 0:
            break  # no valid pair left
        state.rounds += 1
        cov = _coverage(state, swappable)
        stages.append(_stage(state, f"round {state.rounds}", step_no, cov,
                             f"{done} pairs swapped, {100 * cov:.0f} % of swappable chunks changed"))  # fmt: skip
        if cov >= s.coverage:
            break


def _coverage(state: _State, swappable: np.ndarray) -> float:
    if swappable.size == 0:
        return 0.0
    return float(np.isin(swappable, list(state.changed)).mean())


def _members(labels: np.ndarray) -> dict:
    """Cluster label -> its chunks' positions in increasing order, in one sort (a scan of
    every chunk per leftover value was leftovers × chunks)."""
    labels = np.asarray(labels)
    order = np.argsort(labels, kind="stable")
    values, starts = np.unique(labels[order], return_index=True)
    return {v: order[a:b] for v, a, b in zip(values.tolist(), starts, [*starts[1:], len(order)],
                                               strict=True)}  # fmt: skip


def _one_vs_many(ctx, state: _State, step_no: int, s: OneVsMany, rng, rejected) -> int:
    """Each leftover value goes to a further valid partner (same cluster, other company)."""
    x = np.asarray(ctx.embeddings, dtype=np.float32)
    labels = ctx.labels
    taken: set[int] = set()
    moved = 0
    members = _members(labels) if state.leftovers else {}
    for left in state.leftovers:
        a = state.chunks[left.position]
        if left.value not in a.values(left.category):
            continue  # already moved by an earlier exchange of this step
        own = set(a.values(left.category))
        same = members[labels[left.position]]
        if s.similarity_floor > -1.0:
            same = same[x[same] @ x[left.position] >= s.similarity_floor]
        options = []
        for k in same:
            c = int(k)
            other = state.chunks[c]
            if c in taken or c == left.position or other.protected == a.protected:
                continue
            if (min(left.position, c), max(left.position, c)) in state.used:
                continue
            values = other.values(left.category)
            give = next((v for v in values if v not in own), None)
            if give is not None and left.value not in values and not (
                state.returns(a, left.category, give) or state.returns(other, left.category, left.value)
            ):
                options.append((c, give))
        if not options:
            continue
        c, give = options[int(rng.integers(len(options)))]
        state.used.add((min(left.position, c), max(left.position, c)))
        change = Change(step_no, "one-vs-many", a.chunk_id, left.value, give,
                        state.chunks[c].chunk_id, ((left.category, left.value, give),),
                        state.rounds)  # fmt: skip
        if change.key in rejected:
            continue
        new_a, new_c = exchange_one(a, state.chunks[c], left.category, left.value, give)
        state.put(left.position, new_a)
        state.put(c, new_c)
        state.changes.append(change)
        taken.add(c)
        moved += 1
    state.leftovers = []
    return moved


def _redact(state: _State, step_no: int, s: Redact, resources: PlanResources, rejected, rng) -> int:
    """Mask the top ``s.level`` of each chunk's words; one ``Change`` per masked word.

    A redaction's key is (chunk, word, which occurrence of the word in the chunk's current
    text), so rejecting it keeps that word whatever step number the plan gives the redaction.
    """
    from .redaction import apply_redactions, redact_chunks

    redactor = resources.redactor(s.method, s.level)
    if s.method == "targeted":
        records = redactor.select(state.chunks, s.level, margin=s.margin)
        if s.fill == "decoy":
            from .targeted import with_decoys

            terms = resources.term_model(TermSwap()).terms_
            records = with_decoys(state.chunks, records, redactor, terms, rng)
    else:
        _, records = redact_chunks(state.chunks, redactor, s.level)
    by_chunk: dict[str, list] = {}
    for record in records:
        by_chunk.setdefault(record.chunk_id, []).append(record)
    masked = 0
    for position, chunk in enumerate(list(state.chunks)):
        kept = []
        for r in by_chunk.get(chunk.chunk_id, ()):
            occurrence = chunk.text[: r.start].count(r.word)
            change = Change(step_no, "redact", chunk.chunk_id, r.word, r.replacement, None,
                            (("occurrence", occurrence),), state.rounds)  # fmt: skip
            if change.key in rejected:
                continue
            kept.append(r)
            state.changes.append(change)
        if kept:
            state.put(position, apply_redactions(chunk, kept), swap=False)
            masked += len(kept)
    return masked


#: What the progress display says while a step of a plan runs.
STEP_NAMES = {"TermSwap": "finding distinctive terms", "SwapRound": "swapping",
              "OneVsMany": "moving leftovers one-vs-many", "Redact": "masking words"}


def run_plan(ctx, plan: Plan, rng: np.random.Generator, rejected: frozenset[str],
             resources: PlanResources | None = None, progress=None) -> PlanResult:  # fmt: skip
    """Apply every step of ``plan`` to ``ctx.chunks``; see the module docstrings.
    ``progress(fraction, message)`` is told before each step (issue 20: a plan's bar moves)."""
    resources = resources or PlanResources(ctx.chunks)
    state = _State(list(ctx.chunks))
    state.note_origins()
    stages: list[PlanStage] = []
    for n, step in enumerate(plan.steps, start=1):
        if progress is not None:
            progress((n - 1) / len(plan.steps), f"step {n} of {len(plan.steps)}, "
                     + STEP_NAMES.get(type(step).__name__, type(step).__name__))
        if isinstance(step, TermSwap):
            from .terms import tag_terms

            state.chunks = tag_terms(state.chunks, resources.term_model(step).terms_)
            state.note_origins()
        elif isinstance(step, SwapRound):
            _swap_rounds(ctx, state, n, step, rng, rejected, stages)
        elif isinstance(step, OneVsMany):
            moved = _one_vs_many(ctx, state, n, step, rng, rejected)
            if moved:
                prev = stages[-1].coverage if stages else 0.0
                stages.append(_stage(state, "one-vs-many", n, prev, f"{moved} leftover values moved"))
        elif isinstance(step, Redact):
            masked = _redact(state, n, step, resources, rejected, rng)
            prev = stages[-1].coverage if stages else 0.0
            stages.append(_stage(state, f"{100 * step.level:g} % masked", n, prev,
                                 f"{masked} words masked"))  # fmt: skip
    return PlanResult(plan, tuple(ctx.chunks), tuple(state.changes), tuple(stages))
