"""From prepared chunks to a chosen release: roles, mixture, sweep, choice (SPEC §3–§7).

The steps after preprocessing, shared by the CLI's ``release`` command and the app:
1. ``release_inputs``: C categories become placeholders in every chunk (and U ones are
   suppressed when asked), and the changed chunks are re-embedded through the cache;
2. ``fit_mixture``: the spherical mixture on those embeddings (MAP labels = clusters);
3. ``sweep_releases`` (releases.py) and ``choose_release`` (frontier.py).
The released text of a candidate (J, t) is the first t pairs of draw 0 (the first seed); the
table reports that draw's own DU and DR (``du_released``, ``dr_released``) beside the means over
the draws that reached t, and only rows reached by every draw can be chosen (releases.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .choose.candidates import (
    PlanCandidates,
    PlanGrid,
    candidate_table,
    choose_candidate,
    paper_rows,
    plan_candidates,
)
from .choose.frontier import TradeOffChoice, choose_release, describe_release, frontier_mask
from .config import RunConfig
from .corpus import Chunk
from .errors import FitError, NoValidPairsError
from .generate.releases import ReleaseContext, Sweep, sweep_releases
from .generate.rewrite import apply_roles
from .models.mixture import SphericalMixture
from .models.mixture_init import count_distinct_rows
from .text.duplicates import cluster_count_advice, duplicates_message

Progress = Callable[[float, str], None]


def release_inputs(
    chunks: Sequence[Chunk],
    embeddings: np.ndarray,
    roles: Mapping[str, str],
    embed,
    suppress_untouched: bool = False,
) -> tuple[list[Chunk], np.ndarray]:
    """Apply the C (and optional U) operators and re-embed only the chunks whose text changed."""
    applied = apply_roles(list(chunks), dict(roles), suppress_untouched=suppress_untouched)
    changed = [i for i, (a, b) in enumerate(zip(chunks, applied, strict=True)) if a.text != b.text]
    if not changed:
        return applied, embeddings
    out = np.array(embeddings, copy=True)
    out[changed] = embed([applied[i].text for i in changed])
    return applied, out


def fit_mixture(embeddings: np.ndarray, config: RunConfig,
                progress: Progress | None = None) -> SphericalMixture:
    """Fit the spherical mixture of the config; K larger than the data is a clear error.

    ``progress(fraction, message)`` is told after each EM iteration."""
    n = len(embeddings)
    if n < 2:
        raise FitError(f"Only {n} chunk(s): a mixture needs at least 2. Load more text.")
    if config.n_components > n:
        raise FitError(
            f"K = {config.n_components} clusters but only {n} chunks: choose K of at most {n}."
        )
    distinct = count_distinct_rows(np.asarray(embeddings, dtype=np.float64))
    if config.n_components > distinct:
        raise FitError(
            f"K = {config.n_components} clusters but the {n} chunks hold only {distinct} distinct "
            f"texts: {cluster_count_advice(n, distinct, config.n_components)}."
        )
    return SphericalMixture(
        family=config.family,
        n_components=config.n_components,
        min_weight=config.min_weight,
        max_iter=config.max_iter,
        tol=config.tol,
        n_init=config.n_init,
        random_state=config.mixture_seed,
    ).fit(embeddings, progress=progress)


def release_context(chunks: Sequence[Chunk], embeddings: np.ndarray, embed,
                    config: RunConfig) -> ReleaseContext:
    """The pre-swap data every sweep starts from: roles applied, mixture fitted (SPEC §3–§4)."""
    pre_chunks, pre_x = release_inputs(chunks, embeddings, config.roles, embed)
    return ReleaseContext(pre_chunks, pre_x, fit_mixture_naming_copies(pre_chunks, pre_x, config),
                          embed)


def fit_mixture_naming_copies(chunks: Sequence[Chunk], x: np.ndarray,
                              config: RunConfig) -> SphericalMixture:
    """``fit_mixture``; when it fails and documents repeat each other, the error names them
    and says what to do (``text.duplicates``) instead of the mixture's own sentence."""
    try:
        return fit_mixture(x, config)
    except FitError as exc:
        passages: dict[str, list[str]] = {}
        for ch in chunks:
            passages.setdefault(ch.doc_id, []).append(ch.text)
        raise FitError(duplicates_message(passages, config.n_components) or str(exc)) from exc


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


def sweep_for_config(ctx: ReleaseContext, config: RunConfig, progress: Progress | None = None) -> Sweep:
    """The candidate releases R_cand for the release settings of ``config`` (SPEC §3)."""
    check_swap_entities(ctx.chunks, config.swap_categories)
    return sweep_releases(
        ctx, config.swap_categories, combination_size=config.combination_size,
        max_swaps=config.max_swaps, draws=config.draws, require=config.require,
        suppress_leftovers=config.suppress_leftovers, seed=config.seed,
        population=config.population, progress=progress,
    )


def candidates_for_config(
    sweep: Sweep, config: RunConfig, scorer=None, progress: Progress | None = None
) -> tuple[pd.DataFrame, PlanCandidates | None]:
    """Every candidate release of ``config``: the paper's single rounds and the plan grid (SPEC §10).

    The one function the CLI and the app call, so both show the same candidates. ``scorer``:
    an attack ``ReleaseScorer`` (measure/attack.py) for the measured accuracies, or None. With
    ``plan_rounds = 0`` only the paper's candidates are listed.
    """
    plans = None
    if config.plan_rounds > 0:
        plans = plan_candidates(sweep.ctx, PlanGrid.from_config(config), config.population,
                                scorer, progress)  # fmt: skip
    paper = paper_rows(sweep, sweep.table(config.population), scorer)
    return candidate_table(paper, plans.table if plans else None), plans


def goal_choice(table: pd.DataFrame, config: RunConfig) -> TradeOffChoice:
    """The most useful candidate whose measured chunk accuracy is at most ``max_chunk_accuracy``.

    Without measured accuracies (no attacker) the goal cannot be checked: a clear error.
    """
    return choose_candidate(table, config.max_chunk_accuracy, "chunk_accuracy", config.goal_utility)


@dataclass
class ReleaseOutcome:
    """A sweep with its table for one N, the frontier and the choice for the line (a, c)."""

    sweep: Sweep
    table: pd.DataFrame
    choice: TradeOffChoice
    fit_warnings: list[str]
    #: attack scorers by attacker name (choose/attack_columns.py), empty when not measured
    scorers: dict = field(default_factory=dict)

    @property
    def chosen(self) -> pd.Series | None:
        return None if self.choice.index is None else self.table.loc[self.choice.index]

    def sentence(self) -> str:
        return "" if self.chosen is None else describe_release(self.chosen)

    def chosen_records(self):
        """The swap records of the chosen release (first t pairs of draw 0)."""
        row = self.chosen
        if row is None:
            return ()
        draw = self.sweep.draws_for(tuple(row["categories"]))[0]
        return draw.run.records[: int(row["swaps"])]

    def no_release_reason(self) -> str:
        """Why there is no release to write, in one or two sentences ("" when there is one)."""
        if self.chosen is not None:
            return ""
        if len(self.table) == 0:
            why = " ".join(self.sweep.messages())
            return f"No candidate release: no combination had a valid pair to swap. {why}".strip()
        return self.choice.message

    def frontier(self) -> pd.DataFrame:
        if len(self.table) == 0:
            return self.table
        return self.table[frontier_mask(self.table["du"].to_numpy(), self.table["dr"].to_numpy())]


def run_analysis(
    chunks: Sequence[Chunk],
    embeddings: np.ndarray,
    embed,
    config: RunConfig,
    progress: Progress | None = None,
    *,
    attack: bool = False,
    reading=None,
) -> ReleaseOutcome:
    """Roles → mixture → candidate releases → choice, for a prepared corpus and a config.

    ``attack``: also measure every candidate with the in-corpus attacker and, when ``reading``
    (a fitted reading attacker, measure/reading.py) is given, the reading one (SPEC §8): the
    table gains the columns of ``choose.attack_columns.attack_columns``.
    """
    say = progress or (lambda f, m: None)
    say(0.0, "Applying roles")
    pre_chunks, pre_x = release_inputs(chunks, embeddings, config.roles, embed)
    check_swap_entities(pre_chunks, config.swap_categories)
    say(0.1, "Fitting the spherical mixture")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mixture = fit_mixture_naming_copies(pre_chunks, pre_x, config)
    ctx = ReleaseContext(pre_chunks, pre_x, mixture, embed)
    sweep = sweep_for_config(ctx, config, progress=lambda f, m: say(0.3 + 0.7 * f, m))
    table = sweep.table(config.population)
    scorers = {}
    if attack or reading is not None:
        from .choose.attack_columns import build_scorers, with_attack_columns

        say(0.95, "Measuring every candidate with the attackers")
        scorers = build_scorers(ctx.chunks, reading, in_corpus=True, random_state=config.seed)
        table = with_attack_columns(table, sweep, scorers)
    choice = choose_release(table, config.trade_off_a, config.trade_off_c,
                            more_swaps_possible=not sweep.exhausted())
    return ReleaseOutcome(sweep, table, choice, [str(w.message) for w in caught], scorers)
