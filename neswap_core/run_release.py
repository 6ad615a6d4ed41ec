"""One release path: prepared data → candidates → the pinned, goal or trade-off release.

What ``python -m neswap_core release`` runs, what the benchmarks run, and what the app runs step
by step over its caches (the same functions, so both write the same files):

1. ``prepare_release``: the corpus is loaded and checked (two documents, two protected values,
   publishable columns) before any model runs, then prepared (SPEC §1–§2);
2. ``search_for_goal``: a goal switches on the plan search that can reach it (choose/goals.py);
3. ``release_context``: roles applied, changed chunks re-embedded, mixture fitted (SPEC §3–§4);
4. ``sweep_for_config``: the paper's candidates (J, t) and their M draws (SPEC §3, §5–§6);
5. ``build_scorers``: the attackers (the reading one and the rest of the attacker panel when
   the corpus has an ``attacker/`` folder, the in-corpus one always; SPEC §8, §12);
6. ``build_candidates``: every candidate, the paper's and the plans', in one measured table;
7. ``finish_release`` (choose/finish.py): the choice (pinned, goal or line; choose/chosen.py)
   and the release with the analyst's review applied, as a ``ReleaseResult``
   (choose/result.py), which ``publish.writer`` turns into ``released/`` and ``key/``.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable
from typing import Any

from .choose.candidates import build_candidates
from .choose.chosen import check_pinned_plan
from .choose.document_candidates import defence_base
from .choose.finish import finish_release
from .choose.goals import search_for_goal
from .choose.prefetch import prefetch_candidates
from .choose.result import ReleaseResult
from .choose.scorers import FITS_BESIDE_MIN_CHUNKS, attacker_fits, build_scorers
from .config import RunConfig
from .generate.context import release_context
from .generate.releases import sweep_for_config
from .measure.lineups import lineup_statement
from .measure.reading import reading_to_tag
from .paths import resolve_cache_dir
from .prepare.lanes import default_processes
from .prepare.pipeline import Prepared, prepare
from .prepare.ray_engine import RayOptions, embed_jobs_ray, prepare_ray
from .publish.adaptive_attack import reading_prep_in_background
from .publish.bundle import check_publishable
from .publish.evaluate import fit_reading, load_reading
from .text.entity_cache import forget_read_spans
from .text.loading import check_swappable, load_corpus

Progress = Callable[[float, str], None]
#: What a run without an attacker reading cannot measure (issue 23: the default says so).
NO_READING_NOTE = (
    "No attacker reading (an attacker/ folder beside the corpus): the document defence ranked "
    "each document's types by the corpus's own log-odds instead of a defender cross-fitted on a "
    "reading, and every figure is the in-corpus attacker's; what an outside reader of other "
    "quarters would name could not be measured."
)


def _quiet(fraction: float, message: str) -> None:
    return None


def prepare_release(config: RunConfig, *, embedder=None, progress: Progress | None = None,
                    processes: int | None = None, ray: RayOptions | None = None,
                    tag_reading: bool = False) -> Prepared:
    """Load ``config.corpus``, refuse what cannot be released (fewer than two documents or
    protected values, an identifying publishable column) before any model runs, then prepare it
    (on the local engine, or on Ray with ``ray``: the same chunks and vectors).

    ``tag_reading``: the caller fits the reading attacker next (``fit_reading``), so the people
    detection of its reading runs here, in the preparation's processes (issue 21)."""
    check_pinned_plan(config)
    corpus = load_corpus(config.corpus, protect=config.protect, text_column=config.prepare.text_column)
    check_swappable(corpus)
    check_publishable(config.bundle.publishable_columns, corpus)
    if ray is not None:
        return prepare_ray(corpus, config, ray)
    ahead = None
    if tag_reading:
        reading = load_reading(config.corpus, config.protect, config.prepare.cache_dir)
        ahead = reading_to_tag(reading, corpus, config.prepare.cache_dir, config.prepare.spacy_model)
    return prepare(corpus, config, embedder=embedder, progress=progress,
                   processes=default_processes() if processes is None else processes,
                   tag_ahead=ahead)


def run_release(
    prepared: Prepared,
    config: RunConfig,
    embed: Callable,
    *,
    reading=None,
    progress: Progress | None = None,
    processes: int | None = None,
    ray: RayOptions | None = None,
) -> ReleaseResult:
    """Steps 2–7 on a prepared corpus (module docstring). ``embed``: the cached embedder's
    ``encode``; ``reading``: a fitted reading attacker (``reading_attacker``; or one fitting in
    the background, waited for when the attackers are built) or None;
    ``processes``: embedding workers for the sweep (default one per CPU; 1: serial;
    ``choose.prefetch``: the same vectors either way); ``ray``: embed them on Ray instead."""
    say = progress or _quiet
    timings: dict[str, float] = {}
    forget_read_spans()  # the preparation is done: its NER spans are not read again
    config, note = search_for_goal(config)
    start = time.perf_counter()
    say(0.0, "Applying roles and fitting the spherical mixture")
    ctx, warnings = release_context(prepared.chunks, prepared.embeddings, embed, config)
    timings["mixture"] = time.perf_counter() - start
    start = time.perf_counter()
    say(0.05, "Embedding the candidates' changed passages")
    runner = None if ray is None else (lambda embedder, jobs: embed_jobs_ray(embedder, jobs, ray))
    units = getattr(reading, "units_", None)
    parts: dict[str, float] = {}
    attackers: dict[str, Any] = dict(in_corpus=True, random_state=config.sweep.seed, families=config.sweep.panel_families,
                     embed=embed, cache_dir=config.prepare.cache_dir, lineup=config.sweep.lineup)  # fmt: skip
    fits = attacker_fits(ctx.chunks, reading, **attackers)
    # a large corpus's walk ends in minutes of one process: the attackers fit beside it, made
    # ready meanwhile (their keys, cache reads and calls), let go once the defence has scored
    beside = fits.start if len(ctx.chunks) >= FITS_BESIDE_MIN_CHUNKS else None
    if beside is not None:
        fits.prepare()
    try:
        prefetch_candidates(ctx, config, default_processes() if processes is None else processes,
                            runner=runner, reading_units=units, timings=parts, after_scoring=beside)  # fmt: skip
        timings["prefetch"] = time.perf_counter() - start
        timings.update({f"prefetch {part}": seconds for part, seconds in parts.items()})
        start = time.perf_counter()
        sweep = sweep_for_config(ctx, config, lambda f, m: say(0.1 + 0.4 * f, m))
        timings["sweep"] = time.perf_counter() - start
        start = time.perf_counter()
        say(0.5, "Training the attackers")
        scorers = build_scorers(ctx.chunks, reading, vectors=ctx.embeddings, fits=fits, **attackers)
    finally:
        fits.close()
    timings["attackers"] = time.perf_counter() - start
    start = time.perf_counter()
    units = getattr(reading, "units_", None)
    ahead = _adaptive_reading_ahead(config, units)  # on the core the table leaves idle
    try:
        candidates = build_candidates(sweep, config, scorers, reading_units=units, memo=True,
                                      progress=lambda f, m: say(0.55 + 0.45 * f, m))  # fmt: skip
    except BaseException:
        if ahead is not None:
            ahead.close()  # no release to write: the preparation is abandoned
        raise
    _finished(ahead)
    timings["candidates"] = time.perf_counter() - start
    say(1.0, "done")
    notes = [note] if note else []
    if ctx.sample is not None:
        notes.append(ctx.sample.statement())
    lineups = lineup_statement(len({c.protected for c in ctx.chunks}), config.sweep.lineup)
    if lineups:
        notes.append(lineups)
    if candidates.documents is not None and units is None:
        notes.append(NO_READING_NOTE)
    return finish_release(config, prepared.raw, prepared.clean.corpus, candidates, scorers,
                          fit_warnings=warnings, notes=notes,
                          timings={"prepare": dict(prepared.timings), "release": timings})


#: Readings of more units than this are prepared for the adaptive attacker by the writer, as
#: before: prepared ahead, a large reading's defence preparation (GBs at 100k passages, like the
#: corpus's: ``benchmarks/prep_memory.py``) would sit in memory beside the candidate table.
AHEAD_MAX_UNITS = 20_000


def _adaptive_reading_ahead(config: RunConfig, units: tuple | None):
    """The adaptive attacker's level-independent preparation of the reading, started in a worker
    while the candidate table is measured (``publish.adaptive_attack.reading_prep``), when the
    written release may be a document-defence one that gets adaptive.json; else None."""
    document = config.document
    if not (document.document_levels and document.document_adaptive_check):
        return None
    if units is not None and len(units[0]) > AHEAD_MAX_UNITS:
        return None  # beside a large candidate table it would add its memory to the peak
    return reading_prep_in_background(units, defence_base(config), config.sweep.seed,
                                      resolve_cache_dir(config.prepare.cache_dir))


def _finished(pending) -> None:
    """Wait for ``_adaptive_reading_ahead``'s worker; its error is not raised here (the writer's
    adaptive attacker makes the preparation again and reports what is wrong)."""
    if pending is None:
        return
    try:
        pending.result()
    except Exception:  # noqa: BLE001 - see the docstring
        pass


def release_from_config(config: RunConfig, embedder, *, progress: Progress | None = None,
                        prepare_progress: Progress | None = None,
                        ray: RayOptions | None = None) -> ReleaseResult:
    """The whole path for a config: prepare, fit the reading attacker, ``run_release``; with
    ``ray`` the preparation and the sweep's embeddings run on Ray (the same candidates)."""
    prepared = prepare_release(config, embedder=embedder, progress=prepare_progress, ray=ray,
                               tag_reading=True)
    reading = fit_reading(config.corpus, prepared.chunks, prepared.raw, config.protect,
                          resolve_cache_dir(config.prepare.cache_dir), config.sweep.lineup,
                          background=True)  # fitted during the mixture and the walk
    return run_release(prepared, config, embedder.encode, reading=reading, progress=progress, ray=ray)


class _RunReleaseModule(types.ModuleType):
    """``neswap_core.run_release`` names both this module and its function ``run_release`` (the
    public API): once the module is imported it is the package's attribute of that name, so a
    call on it runs the function and ``from neswap_core import run_release`` works either way."""

    def __call__(self, *args, **kwargs) -> ReleaseResult:
        return run_release(*args, **kwargs)


sys.modules[__name__].__class__ = _RunReleaseModule
