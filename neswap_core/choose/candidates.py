"""Every candidate release of a run in one table (SPEC §3, §7, §10): key/candidates.csv.

A candidate is a stage of a plan; the paper's releases (J, t) are one-round plans drawn by the
paper's own sampler (``choose.sources``). ``build_candidates`` lists them all — the paper's
sweep, then the plan grid when ``plan_rounds`` > 0 — and measures each one the same way:
``Candidates.table`` has one row per candidate and the columns of ``COLUMNS`` (one meaning each:
every measure describes the **written** text, i.e. the paper's draw 0 or the plan's one text;
``_mean``/``_sd`` columns summarise the paper's M Monte Carlo draws) and, with attackers, the
measured columns of ``choose.attack_columns`` (keyed by attacker and level).
``Candidates.source(release_id)`` gives back how a candidate's text is made and reviewed.

The trade-off line (SPEC §7) chooses among the paper's candidates (``line_pool``): their DR is
the paper's and their DU/DR are means over the draws, as the paper reports them; a goal
(``choose.goals``) or a pin chooses among all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import pandas as pd

from ..disk_memo import DiskMemo
from ..errors import ConfigError
from ..generate.releases import Sweep
from ..measure.tone import ToneScorer
from ..paths import resolve_cache_dir
from .attack_columns import draws_columns, measured_row, single_draw_columns
from .document_candidates import DocumentCandidates, DocumentStage, document_candidates
from .dp_sources import DPWordsRelease, dp_words_sources
from .frontier import frontier_mask, near_one
from .memo_keys import derived_key, run_key
from .plan_grid import (
    PlanCandidates,
    PlanGrid,
    changed_texts,
    one_plan_candidates,
    plan_candidates,
    total_words,
)
from .sources import PAPER, PaperRound, PlanStage

Progress = Callable[[float, str], None]
Source = PaperRound | PlanStage | DocumentStage | DPWordsRelease

#: The candidate table's columns before the measured ones, and what each means.
COLUMNS: dict[str, str] = {
    "release_id": "the candidate: 'J @ t' (the paper's) or 'plan k · stage'",
    "sampler": "'paper': one round of the paper's sequential swaps; 'plan': a plan of the grid; "
    "'document': the document defence at one level (choose/document_candidates.py); "
    "'dp_words': the word-level DP baseline (generate/dp_words.py, sweep.dp_epsilons)",
    "combination": "the categories the candidate swaps",
    "swaps": "pairs swapped (a plan: entity, term and one-vs-many exchanges)",
    "rounds": "swap rounds",
    "description": "what the candidate does, in words",
    "plan": "the plan as JSON (run.toml's release_plan; empty for the paper's)",
    "plan_index": "position of the plan in the grid (-1: the paper's)",
    "stage_index": "stage of the plan (-1: the paper's)",
    "du": "DU of the written text (SPEC §6)",
    "dr": "DR of the written text (SPEC §5; a plan's as in plan_grid.py)",
    "du_mean": "DU, mean over the draws that reached the candidate (SPEC §3; a plan: 1 draw)",
    "du_sd": "DU, s.d. over those draws",
    "dr_mean": "DR, mean over the draws that reached the candidate",
    "dr_sd": "DR, s.d. over those draws",
    "draws": "draws that reached the candidate",
    "draws_total": "draws made",
    "all_draws": "reached by every draw (the line chooses only such candidates)",
    "swap_rate": "r = 2t/n, share of passages swapped (the paper's)",
    "p_hat": "share of sample uniques that are population uniques (the paper's Pitman fit)",
    "risk_status": "status of that fit",
    "words_unchanged": "share of words unchanged in the written text",
    "mean_cosine": "mean cosine of each passage's embedding before and after",
    "clusters_unchanged": "share of passages whose cluster is unchanged",
    "chunks_changed": "share of passages changed",
    "tone_correlation": "Loughran–McDonald net tone of each document before vs after: Pearson r",
    "tone_kept": "share of Loughran–McDonald tone words kept (per document and polarity)",
}
UTILITY_AXES = ("words_unchanged", "du", "mean_cosine", "clusters_unchanged")
#: The columns the population size N changes (SPEC §5: N enters p̂ only): a candidate's text,
#: utility and measured attacks are the same at any N, so a table kept on disk under a key
#: without N (``memo_keys.candidate_settings``) is given these columns at the run's N.
RISK_COLUMNS = ("dr", "dr_mean", "dr_sd", "p_hat", "risk_status")


@dataclass(eq=False)
class Candidates:
    """The one table of a run's candidates, and each candidate's source (module docstring)."""

    table: pd.DataFrame
    sweep: Sweep
    sources: dict[str, Source] = field(repr=False)
    plans: PlanCandidates | None = field(default=None, repr=False)
    documents: DocumentCandidates | None = field(default=None, repr=False)
    key: str | None = None  # the run's memo key (choose.memo_keys.run_key), None: not kept

    def source(self, release_id: str) -> Source:
        try:
            return self.sources[release_id]
        except KeyError:
            raise ConfigError(f"{release_id!r} is not a candidate of these settings.") from None

    def at_population(self, population: float) -> Candidates:
        """The same candidates with their DR at another population size N: the paper's rounds
        from the sweep's table at N, the plans' stages from their changes (no text is made or
        measured again: N only enters p̂, SPEC §5); itself when every source is at N."""
        population = float(population)
        moved: dict[int, PlanCandidates] = {}
        sources: dict[str, Source] = {}
        paper: dict[str, PaperRound] | None = None
        for rid, source in self.sources.items():
            if isinstance(source, PaperRound) and source.population != population:
                paper = paper_sources(self.sweep, population) if paper is None else paper
                source = paper[rid]
            elif isinstance(source, PlanStage) and source.plans.population != population:
                if id(source.plans) not in moved:
                    moved[id(source.plans)] = source.plans.at_population(population)
                source = PlanStage(moved[id(source.plans)], source.release_id)
            sources[rid] = source
        if paper is None and not moved:
            return self
        own = self.plans
        if own is not None:
            own = moved[id(own)] if id(own) in moved else own.at_population(population)
        return replace(self, table=with_risk_columns(self.table, sources), sources=sources, plans=own)

    def line_pool(self) -> pd.DataFrame:
        """The candidates the trade-off line chooses among: the paper's (module docstring)."""
        return self.table[self.table["sampler"] == PAPER] if len(self.table) else self.table

    def frontier(self) -> pd.DataFrame:
        """The line pool's risk–utility frontier (DU and DR means; key/frontier.csv)."""
        pool = self.line_pool()
        if len(pool) == 0:
            return pool
        return pool[frontier_mask(pool["du_mean"].to_numpy(float), pool["dr_mean"].to_numpy(float))]

    @property
    def ctx(self):
        return self.sweep.ctx


def candidate_table(sources: Mapping[str, Source], ctx, scorers=None, sweep=None,
                    progress: Progress | None = None, *, embeddings_only: bool = False) -> pd.DataFrame:
    """One row per candidate: ``COLUMNS`` and, with ``scorers``, the measured columns.

    The paper's candidates take their measured figures from their draws (``draws_columns``:
    each draw scored once, step by step); any other candidate is one text, scored on its own
    (``measured_row``; its mean over draws is that value, s.d. 0). ``embeddings_only``: the
    prefetch's walk, which needs only the calls that embed (each candidate's utility): the rows
    have no tone and no measured columns (issue 21: at 100k passages the walk read every
    document level back from disk and counted tone words for nothing)."""
    words = total_words(ctx)
    if scorers and getattr(ctx, "measured", None) is not None:  # a large corpus: its sample
        scorers = {name: scorer.scoped(ctx.measured) for name, scorer in scorers.items()}
    over = draws_columns(sweep, scorers) if scorers and sweep is not None else pd.DataFrame()
    tone = None if embeddings_only else ToneScorer([c.text for c in ctx.chunks], [c.doc_id for c in ctx.chunks])
    rows = []
    for k, source in enumerate(sources.values()):
        if progress and k % 10 == 0:
            progress(k / max(len(sources), 1), "Measuring every candidate")
        row = source.row()
        row.update(source.utility(words))
        if tone is None:
            rows.append(row)
            continue
        texts = changed_texts(ctx, source.changed())  # once: a document level reads it from disk
        row.update(tone.score(texts))
        if scorers and source.release_id in over.index:
            row.update(over.loc[source.release_id].to_dict())
        elif scorers:
            row.update(measured_row(scorers, texts))
            row.update(single_draw_columns(row, scorers))
        rows.append(row)
    table = pd.DataFrame(rows)
    return table.set_index("release_id", drop=False) if len(table) else table


def with_risk_columns(table: pd.DataFrame, sources: Mapping[str, Source]) -> pd.DataFrame:
    """``table`` with the ``RISK_COLUMNS`` of its paper and plan candidates read from their
    ``sources`` (made at the run's N); the other candidates' risk does not depend on N."""
    rows = {rid: s.row() for rid, s in sources.items()
            if isinstance(s, PaperRound | PlanStage) and rid in table.index}  # fmt: skip
    if not rows or not len(table):
        return table
    out = table.copy()
    ids = list(rows)
    for column in RISK_COLUMNS:
        if column in out.columns:
            out.loc[ids, column] = [rows[rid][column] for rid in ids]
    return out


def paper_sources(sweep: Sweep, population: float) -> dict[str, PaperRound]:
    """The paper's candidates (J, t) of a sweep, in the order of ``Sweep.table``."""
    table = sweep.table(population)
    return {rid: PaperRound(sweep, row, population) for rid, row in table.iterrows()}


def plan_sources(plans: PlanCandidates | None) -> dict[str, PlanStage]:
    if plans is None or not len(plans.table):
        return {}
    return {rid: PlanStage(plans, rid) for rid in plans.table.index}


def document_sources(documents: DocumentCandidates | None) -> dict[str, DocumentStage]:
    if documents is None or not len(documents.table):
        return {}
    return {rid: DocumentStage(documents, rid) for rid in documents.table.index}


#: Fewer chunks, and ``build_candidates(processes=...)`` embeds serially: the prefetch's walk
#: repeats the candidates' swaps, plans and document defence without the model, which pays only
#: when their embedding is most of the build (on dev, 1,122 chunks: a 45 s walk spread a 170 s
#: serial embedding over two cores); on small corpora, whose vectors are mostly cached, the
#: walk doubled every build (the app's tests on the sample).
PREFETCH_MIN_CHUNKS = 1_000


def build_candidates(sweep: Sweep, config, scorers=None, *, plans: PlanCandidates | None = None,
                     documents: DocumentCandidates | None = None, reading_units: tuple | None = None,
                     progress: Progress | None = None, memo: bool = False,
                     table_key: str | None = None, processes: int | None = None,
                     after_scoring: Callable[[], None] | None = None, walk: bool = False) -> Candidates:
    """Every candidate of ``config``: the paper's sweep, the plan grid (``plan_rounds`` > 0) and
    the document defence (``document_levels``).

    ``scorers``: attack ``ReleaseScorer`` objects by attacker name (``build_scorers``) for the
    measured columns, or None. ``plans``, ``documents``: already applied (the app caches them).
    ``reading_units``: the attacker's reading (texts, labels, doc ids) the document defence's
    defender is cross-fitted on; None: the corpus-only fallback. ``memo``: keep the measured
    table on disk under the run's key (``choose.memo_keys``; ``run_release`` sets it, whose
    ``scorers`` are ``build_scorers``' of that same run; a caller with other scorers or its own
    sources must not). ``table_key``: the disk key of the measured table for a caller that
    passes ``plans``/``documents`` from a memoised build and names its ``scorers`` itself (the
    app measures the candidates it built before: their ``key`` and its attackers' key); it is
    also the returned candidates' ``key``, under which their release's measures are kept.
    ``processes``: when the table is not kept and the corpus has ``PREFETCH_MIN_CHUNKS`` chunks
    or more, first embed every text the candidates will embed in that many worker processes
    (``choose.prefetch``: the same vectors; the app's path, whose sweep is made before;
    ``run_release`` prefetches before its sweep instead). ``after_scoring()``: called once the
    document defence's scoring is done (``document_candidates``; the prefetch's walk starts the
    attackers' fits there). ``walk``: the prefetch's walk (``choose.prefetch``), whose table is
    only read for the texts it embeds (``candidate_table(embeddings_only=True)``)."""
    say = progress or (lambda f, m: None)
    built_here = plans is None and documents is None
    if plans is not None:  # the app's plans, built once: their DR at this run's N
        plans = plans.at_population(config.sweep.population)
    key = run_key(sweep.ctx, config, reading_units) if memo and built_here else None
    tables = DiskMemo(resolve_cache_dir(config.prepare.cache_dir), "candidate_tables")
    if table_key is None:
        table_key = derived_key(key, "table", sorted(scorers or {}))
    elif key is None:
        key = table_key
    if (processes is not None and processes > 1 and built_here
            and len(sweep.ctx.chunks) >= PREFETCH_MIN_CHUNKS
            and (table_key is None or not tables.has(table_key))):
        say(0.0, "Embedding the candidates' changed passages")
        prefetch.prefetch_candidates(sweep.ctx, config, processes, reading_units=reading_units)
    if plans is None and config.plans.plan_rounds > 0:
        plans = plan_candidates(sweep.ctx, PlanGrid.from_config(config), config.sweep.population,
                                lambda f, m: say(0.6 * f, m))  # fmt: skip
    if documents is None:
        documents = document_candidates(sweep.ctx, config, reading_units,
                                        lambda f, m: say(0.6 + 0.2 * f, m), after_scoring)  # fmt: skip
    sources: dict[str, Source] = {
        **paper_sources(sweep, config.sweep.population), **plan_sources(plans),
        **document_sources(documents),
        **dp_words_sources(sweep.ctx, config.sweep.dp_epsilons, config.sweep.seed)}  # fmt: skip
    if walk:
        table = candidate_table(sources, sweep.ctx, progress=lambda f, m: say(0.8 + 0.2 * f, m),
                                embeddings_only=True)  # fmt: skip
        return Candidates(table, sweep, sources, plans, documents, None)
    table = tables.get_or_compute(
        table_key, lambda: candidate_table(sources, sweep.ctx, scorers, sweep,
                                           lambda f, m: say(0.8 + 0.2 * f, m)))  # fmt: skip
    # kept under a key without N (memo_keys): the risk columns of this run's N
    return Candidates(with_risk_columns(table, sources), sweep, sources, plans, documents, key)


def with_plan(candidates: Candidates, plan: Mapping, config, scorers=None) -> Candidates:
    """``candidates`` and the stages of one more plan (a pinned plan the grid does not list),
    named "pinned plan · stage" so they never take a grid candidate's name."""
    extra = one_plan_candidates(candidates.ctx, plan, config.sweep.seed, config.sweep.population)
    names = {rid: "pinned " + rid for rid in extra.table.index}
    table = extra.table.rename(index=names).assign(release_id=lambda t: t.index)
    extra = replace(extra, table=table)
    sources = plan_sources(extra)
    rows = candidate_table(sources, candidates.ctx, scorers)
    merged = pd.concat([candidates.table, rows]) if len(candidates.table) else rows
    return Candidates(merged, candidates.sweep, {**candidates.sources, **sources}, candidates.plans,
                      candidates.documents)


def describe_candidate(row: pd.Series) -> str:
    """E.g. "3 rounds of swapping …, 8 % of words masked: 71 % of chunks changed, 89 % of words
    unchanged, DR 0.962, DU 0.9981; the attacker names the company of 28 % of passages and 60 %
    of documents"."""
    text = (f"{row['description']}: {100 * row['chunks_changed']:.0f} % of chunks changed, "
            f"{100 * row['words_unchanged']:.0f} % of words unchanged, DR "
            f"{near_one(row['dr'], 3)}, DU {near_one(row['du'], 4)}")  # fmt: skip
    if "chunk_accuracy" in row and pd.notna(row.get("chunk_accuracy")):
        text += (f"; the attacker names the company of {100 * row['chunk_accuracy']:.0f} % of "
                 f"passages and {100 * row['document_accuracy']:.0f} % of documents")  # fmt: skip
    return text


# the prefetch walks ``build_candidates``: imported once this module's names exist (either
# module may be imported first), not inside the function (tests/test_public_api.py)
from . import prefetch  # noqa: E402
