"""Candidate releases: sequential swaps per category combination, M draws, DU and DR (SPEC §3, §5–§7).

For every combination J of the S-eligible categories (size ``combination_size``) and every draw
m, one sequential swap run of up to ``max_swaps`` pairs is made; the release after swap t is the
first t pairs. Because a chunk is swapped at most once, each pair's effect is additive:

* utility: δ_r = Σ over its two chunks of log f(x̃|φ_l) − log f(x|φ_l), DU = 1 + Σ δ_r / |L0|;
* risk: h_r = how many of its two chunks are sample uniques of z_J, DR = 1 − Σ h_r / s₁ · min(p̂, 1).

Storing δ_r and h_r per pair makes the release table for another population N, or a release
with some pairs rejected by the analyst, a sum — no re-swapping, no re-embedding.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations

import numpy as np
import pandas as pd

from ..config import DEFAULT_COMBINATION_SIZE, DEFAULT_DRAWS, DEFAULT_MAX_SWAPS
from ..corpus import Chunk
from ..errors import ConfigError, NoValidPairsError
from ..measure import risk as risk_mod
from ..measure.candidate_sample import MeasurementSample, measurement_sample
from ..measure.utility import (
    FittedMixture,
    UtilityBaseline,
    data_utility,
    utility_baseline,
    utility_deltas,
)
from ..text.contingency import contingency_table
from .swapping import SwapRun, swap_sequence

Embed = Callable[[list[str]], np.ndarray]
Progress = Callable[[float, str], None]


@dataclass
class ReleaseContext:
    """The pre-swap data a sweep works on: chunks (C roles applied), z, x, fitted mixture."""

    chunks: list[Chunk]
    embeddings: np.ndarray
    mixture: FittedMixture  # a fitted SphericalMixture
    embed: Embed
    z: pd.DataFrame = field(init=False)
    baseline: UtilityBaseline = field(init=False)
    position: dict[str, int] = field(init=False)
    #: the documents every candidate is measured on (None: all; ``measure.candidate_sample``)
    sample: MeasurementSample | None = field(init=False)

    def __post_init__(self) -> None:
        if len(self.chunks) != len(self.embeddings):
            raise ConfigError(f"{len(self.chunks)} chunks but {len(self.embeddings)} embeddings.")
        self.z = contingency_table(self.chunks)
        self.baseline = utility_baseline(self.mixture, self.embeddings)
        self.position = {ch.chunk_id: i for i, ch in enumerate(self.chunks)}
        self.sample = measurement_sample([ch.doc_id for ch in self.chunks])

    @classmethod
    def restored(cls, chunks: list[Chunk], embeddings: np.ndarray, mixture: FittedMixture, embed: Embed,
                 z: pd.DataFrame, baseline: UtilityBaseline) -> ReleaseContext:
        """The context of these inputs with its table z and utility baseline given (kept from
        an earlier ``ReleaseContext`` of the same inputs: ``SweepState``), not computed again."""
        if len(chunks) != len(embeddings) or len(z) != len(chunks) or len(baseline.labels) != len(chunks):
            raise ConfigError(f"{len(chunks)} chunks, {len(embeddings)} embeddings, {len(z)} rows of z "
                              f"and {len(baseline.labels)} labels: not the same inputs.")
        ctx = cls.__new__(cls)
        ctx.chunks, ctx.embeddings, ctx.mixture, ctx.embed = chunks, embeddings, mixture, embed
        ctx.z, ctx.baseline = z, baseline
        ctx.position = {ch.chunk_id: i for i, ch in enumerate(chunks)}
        ctx.sample = measurement_sample([ch.doc_id for ch in chunks])
        return ctx

    @property
    def labels(self) -> np.ndarray:
        return self.baseline.labels

    @property
    def n_chunks(self) -> int:
        return len(self.chunks)

    @property
    def measured(self) -> np.ndarray | None:
        """Positions the candidates are measured on (None: every chunk)."""
        return None if self.sample is None else self.sample.positions


@dataclass
class DrawResult:
    """One sequential swap run for combination J and draw m, with per-pair δ and h."""

    combination: tuple[str, ...]
    draw: int
    seed: tuple[int, ...]
    run: SwapRun
    deltas: np.ndarray  # (T,) utility change of each pair
    hits: np.ndarray  # (T,) number of sample uniques of z_J among the pair's chunks (0, 1, 2)

    @property
    def n_swaps(self) -> int:
        return len(self.deltas)


def draw_steps(draw: DrawResult) -> list[dict[int, str]]:
    """One step per swap of a draw: {position: released text} of its two chunks."""
    return [
        {rec.index_a: new_a.text, rec.index_b: new_b.text}
        for rec, (new_a, new_b) in zip(draw.run.records, draw.run.swapped, strict=True)
    ]


def combination_name(categories: Sequence[str]) -> str:
    return " + ".join(categories)


def category_combinations(swap_categories: Sequence[str], size: int) -> list[tuple[str, ...]]:
    """All combinations J of the S-eligible categories of the given size (paper: 6 of size 2)."""
    if size < 1:
        raise ConfigError("The combination size must be at least 1.")
    if len(swap_categories) < size:
        raise ConfigError(
            f"Only {len(swap_categories)} categories have role S ({', '.join(swap_categories) or 'none'}); "
            f"combinations of size {size} need at least {size}. Give more categories the role S "
            "or lower the combination size."
        )
    return list(combinations(swap_categories, size))


def run_draw(
    ctx: ReleaseContext,
    combination: tuple[str, ...],
    seed: tuple[int, ...],
    draw: int,
    sample_uniques: frozenset[str],
    *,
    max_swaps: int,
    require: str,
    suppress_leftovers: bool,
) -> DrawResult:
    """Swap sequentially for one (J, draw) and compute every pair's δ and h."""
    rng = np.random.default_rng(list(seed))
    run = swap_sequence(
        ctx.chunks,
        ctx.labels,
        combination,
        rng,
        max_swaps=max_swaps,
        require=require,
        suppress_leftovers=suppress_leftovers,
    )
    ids = [cid for rec in run.records for cid in (rec.chunk_a, rec.chunk_b)]
    if ids:
        new_texts = [ch.text for pair in run.swapped for ch in pair]
        new_x = ctx.embed(new_texts)
        idx = [ctx.position[cid] for cid in ids]
        per_chunk = utility_deltas(ctx.mixture, ctx.baseline, idx, new_x)
        deltas = per_chunk.reshape(-1, 2).sum(axis=1)
        is_unique = np.array([cid in sample_uniques for cid in ids], dtype=np.int64)
        moved = np.array([rec.moved for rec in run.records], dtype=np.int64)
        hits = is_unique.reshape(-1, 2).sum(axis=1) * moved
    else:
        deltas, hits = np.zeros(0), np.zeros(0, dtype=np.int64)
    return DrawResult(combination, draw, seed, run, deltas, hits)


@dataclass
class Sweep:
    """All draws for all combinations; turns into a releases table for any population N."""

    ctx: ReleaseContext
    combinations: list[tuple[str, ...]]
    draws: list[DrawResult]
    max_swaps: int
    n_draws: int
    _profiles: dict[tuple[tuple[str, ...], float], risk_mod.RiskProfile] = field(default_factory=dict)

    def profile(self, combination: tuple[str, ...], population: float) -> risk_mod.RiskProfile:
        """The Pitman risk profile of z_J at N; the fit is made once per J (it does not depend on N)."""
        key = (tuple(combination), float(population))
        if key not in self._profiles:
            fitted = next((p for (c, _), p in self._profiles.items() if c == key[0]), None)
            self._profiles[key] = (
                fitted.at_population(population) if fitted is not None
                else risk_mod.fit_risk(self.ctx.z, list(combination), population)
            )
        return self._profiles[key]

    def draws_for(self, combination: tuple[str, ...]) -> list[DrawResult]:
        return [d for d in self.draws if d.combination == tuple(combination)]

    def table(self, population: float) -> pd.DataFrame:
        """One row per candidate release (J, t), for t = 1 … the released draw's number of swaps.

        The released text of (J, t) is one concrete draw: draw 0 (the first seed), its first t
        pairs. ``du_released``/``dr_released`` are that draw's own values; ``du``/``dr`` (± s.d.)
        are means over the ``draws`` draws that reached t, out of ``draws_total``;
        ``all_draws`` says whether that is every draw. A row with ``all_draws`` False is
        averaged over fewer draws: it is shown but never chosen (``frontier.choose_release``).
        With M = 1 both pairs of columns are equal.
        """
        rows = []
        n = self.ctx.n_chunks
        for combo in self.combinations:
            prof = self.profile(combo, population)
            draws = self.draws_for(combo)
            if not draws:
                continue
            released = draws[0]
            for t in range(1, released.n_swaps + 1):
                reach = [d for d in draws if d.n_swaps >= t]
                du = np.array([data_utility(self.ctx.baseline, d.deltas[:t].sum()) for d in reach])
                dr = np.array([release_risk(prof, d, slice(0, t)) for d in reach])
                rows.append(
                    {
                        "release_id": f"{combination_name(combo)} @ {t}",
                        "combination": combination_name(combo),
                        "categories": combo,
                        "swaps": t,
                        "swap_rate": 2 * t / n,
                        "du": du.mean(),
                        "du_sd": du.std(ddof=1) if du.size > 1 else 0.0,
                        "dr": dr.mean(),
                        "dr_sd": dr.std(ddof=1) if dr.size > 1 else 0.0,
                        "draws": len(reach),
                        "draws_total": len(draws),
                        "all_draws": len(reach) == len(draws),
                        "du_released": float(du[0]),
                        "dr_released": float(dr[0]),
                        "p_hat": prof.p_hat,
                        "risk_status": prof.status,
                    }
                )
        table = pd.DataFrame(rows)
        return table.set_index("release_id", drop=False) if len(table) else table

    def exhausted(self) -> bool:
        """True when every draw stopped before ``max_swaps``: the valid pairs were used up."""
        return bool(self.draws) and all(d.run.exhausted for d in self.draws)

    def messages(self) -> list[str]:
        """Why each combination stopped (the released draw's run message), one per combination."""
        out = []
        for combo in self.combinations:
            ds = self.draws_for(combo)
            if ds and ds[0].run.message not in out:
                out.append(ds[0].run.message)
        return out

    def pitman_table(self, population: float) -> pd.DataFrame:
        """The paper's Table 1 for the combinations of this sweep."""
        return risk_mod.profile_table(self.profile(c, population) for c in self.combinations)

    def valid_pair_counts(self) -> dict[str, int]:
        """Number of valid pairs before any swap, per combination (first draw's count)."""
        out = {}
        for combo in self.combinations:
            ds = self.draws_for(combo)
            out[combination_name(combo)] = int(ds[0].run.initial_valid_pairs) if ds else 0
        return out


@dataclass(frozen=True)
class SweepState:
    """What a sweep computed from its inputs (chunks, vectors, mixture, settings): the table z,
    the utility baseline, every draw and the risk profiles fitted. Kept, it gives the same ``Sweep`` back for the same
    inputs without swapping or predicting again (issue 21: a restarted app made the paper's
    sweep again for each page's first draw, about 5 s at 100k passages).

    The draws are kept without the chunks they swapped when those are the sweep's own
    (``base_shared``, the paper's sweep): ``restore`` gives them back the caller's chunks.
    Kept with the draws, every chunk was pickled a second time (78 MB and 1 s to read back at
    100k passages) and read back as a second copy."""

    z: pd.DataFrame
    baseline: UtilityBaseline
    combinations: list[tuple[str, ...]]
    draws: list[DrawResult]
    max_swaps: int
    n_draws: int
    profiles: dict[tuple[tuple[str, ...], float], risk_mod.RiskProfile]
    base_shared: bool = False

    @classmethod
    def of(cls, sweep: Sweep) -> SweepState:
        chunks = sweep.ctx.chunks
        shared = all(len(d.run.base) == len(chunks) and all(map(operator.is_, d.run.base, chunks))
                     for d in sweep.draws)
        draws = [replace(d, run=replace(d.run, base=())) for d in sweep.draws] if shared else list(sweep.draws)
        return cls(sweep.ctx.z, sweep.ctx.baseline, list(sweep.combinations), draws,
                   sweep.max_swaps, sweep.n_draws, dict(sweep._profiles), shared)

    def restore(self, chunks: list[Chunk], embeddings: np.ndarray, mixture: FittedMixture,
                embed: Embed) -> Sweep:
        """The sweep of ``chunks``, ``embeddings`` and ``mixture`` (the inputs this state was
        computed from: the caller's key says so)."""
        ctx = ReleaseContext.restored(chunks, embeddings, mixture, embed, self.z, self.baseline)
        draws = list(self.draws)
        if self.base_shared:
            base = tuple(ctx.chunks)
            draws = [replace(d, run=replace(d.run, base=base)) for d in draws]
        return Sweep(ctx, list(self.combinations), draws, self.max_swaps, self.n_draws,
                     dict(self.profiles))


def release_risk(profile, draw: DrawResult, keep: np.ndarray | slice) -> float:
    """DR of the release made of the kept pairs of a draw (SPEC §5, via ``risk.disclosure_risk``)."""
    # A valid pair whose values overlap can move nothing (SwapRecord.moved is False): its
    # chunks are unchanged, so they are not counted as swapped sample uniques.
    records = np.asarray(draw.run.records, dtype=object)[keep]
    pairs = [(r.chunk_a, r.chunk_b) for r in records if r.moved]
    return risk_mod.disclosure_risk(profile, [cid for pair in pairs for cid in pair])


def sweep_releases(
    ctx: ReleaseContext,
    swap_categories: Sequence[str],
    *,
    combination_size: int = DEFAULT_COMBINATION_SIZE,
    max_swaps: int = DEFAULT_MAX_SWAPS,
    draws: int = DEFAULT_DRAWS,
    require: str = "all",
    suppress_leftovers: bool = False,
    seed: int = 0,
    population: float = 1e20,
    progress: Progress | None = None,
) -> Sweep:
    """Run every (J, draw) swap sequence of the candidate set R_cand (SPEC §3)."""
    combos = category_combinations(list(swap_categories), combination_size)
    results: list[DrawResult] = []
    profiles: dict[tuple[tuple[str, ...], float], risk_mod.RiskProfile] = {}
    total = len(combos) * draws
    for j, combo in enumerate(combos):
        prof = risk_mod.fit_risk(ctx.z, list(combo), population)
        profiles[(tuple(combo), float(population))] = prof  # the table at N uses it: fitted once
        uniques = prof.sample_unique_ids
        for m in range(draws):
            if progress:
                progress(len(results) / total, f"{combination_name(combo)}, draw {m + 1}/{draws}")
            results.append(
                run_draw(
                    ctx,
                    combo,
                    (seed, j, m),
                    m,
                    uniques,
                    max_swaps=max_swaps,
                    require=require,
                    suppress_leftovers=suppress_leftovers,
                )
            )
    if progress:
        progress(1.0, "done")
    return Sweep(ctx, combos, results, max_swaps, draws, profiles)


def evaluate_records(
    sweep: Sweep, draw: DrawResult, accepted: Iterable[int], population: float
) -> tuple[float, float]:
    """(DU, DR) of the release made of the accepted pairs (0-based record positions) of a draw."""
    keep = np.zeros(draw.n_swaps, dtype=bool)
    keep[list(accepted)] = True
    prof = sweep.profile(draw.combination, population)
    du = data_utility(sweep.ctx.baseline, draw.deltas[keep].sum())
    dr = release_risk(prof, draw, keep)
    return float(du), float(dr)


def sweep_for_config(ctx: ReleaseContext, config, progress: Progress | None = None) -> Sweep:
    """The paper's candidate releases R_cand for the settings of ``config`` (SPEC §3)."""
    check_swap_entities(ctx.chunks, config.swap_categories)
    return sweep_releases(
        ctx, config.swap_categories, combination_size=config.sweep.combination_size,
        max_swaps=config.sweep.max_swaps, draws=config.sweep.draws, require=config.sweep.require,
        suppress_leftovers=config.sweep.suppress_leftovers, seed=config.sweep.seed,
        population=config.sweep.population, progress=progress,
    )


def check_swap_entities(chunks: Sequence[Chunk], categories: Sequence[str]) -> None:
    """Raise ``NoValidPairsError`` when no chunk has an entity of any S category (nothing to swap)."""
    present = {s.category for ch in chunks for s in ch.entities}
    if not categories or present & set(categories):
        return
    found = ", ".join(sorted(present)) or "no named entity at all"
    raise NoValidPairsError(
        f"No chunk has an entity of a swappable category ({', '.join(categories)}); the "
        f"{len(chunks)} chunks contain {found}. There is nothing to swap: give role S to a "
        "category that occurs, or load transcripts that name organisations, people, products "
        "or places."
    )
