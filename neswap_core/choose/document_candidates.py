"""The document defence as candidates of the one table (SPEC §12, issue 22).

One candidate per level of ``[document] document_levels`` (a share of every document's words):
the corpus's documents are paired across companies once, each candidate type gets its
replacement once, and the types are ranked once — by the defender cross-fitted on the two halves
of the attacker's reading when there is one (``generate.document_budget``), else by the corpus's
own log-odds (the fallback; the report says so). Each level is then a cheap selection, so the
levels are nested: a stronger level treats every type a weaker one treats.

``DocumentStage`` answers the questions of every candidate (``choose.sources``): its row, its
text, its review (a rejected document-and-type decision leaves every occurrence of that type in
that document: a half-treated type names the document again) and its identity (run.toml's
``release``). Its DR is 1: the defence exchanges no entity value of z_J (SPEC §5), so the paper's
risk measure cannot see it — the measured attackers do.
"""

from __future__ import annotations

import contextvars
import pickle
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from .. import mapped_pickle
from ..config.defaults import LINEUP_COMPANIES
from ..disk_memo import DiskMemo, content_key, repr_digest
from ..generate.document import DefenceParams, DefenceResult
from ..generate.document_budget import (
    DefencePrep,
    DocumentDefender,
    defence_terms,
    defend,
    rank_by_defender,
)
from ..generate.document_terms import TermModel
from ..generate.releases import ReleaseContext
from ..measure.lineups import effective_size, lineup_key
from ..models.fit_processes import fit_processes
from ..paths import resolve_cache_dir
from .memo_keys import build_key, derived_key, run_key
from .plan_grid import measure_row, total_words
from .review import ChosenRelease, Decisions

Progress = Callable[[float, str], None]
#: Memo folders of a defence's build: each level's row, each level's text (one entry per level,
#: read when that level is asked for: ``LevelResults``) and the shared preparation (read only by
#: a review that rejects changes: ``DocumentCandidates.prep``).
BUILD_MEMO, LEVEL_MEMO, PREP_MEMO, BUILD_ENTRIES = "document_builds", "document_levels", "document_preps", 6
#: Level entries kept: ``BUILD_ENTRIES`` builds of up to this many levels each.
LEVELS_PER_BUILD = 12
#: Levels a kept build holds in memory at once, the ones used last (``LevelResults``): the
#: candidate table and the measures go through the levels one after the other, and all six held
#: were 161 MB of the 10k corpus's candidate stage, ~1.6 GB at 100k (issue 21); a level read
#: again costs one memo entry's read (~0.3 s at 10k).
LEVELS_HELD = 2
#: The ``sampler`` column of a document-defence candidate.
DOCUMENT = "document"
#: DR of a document-defence candidate (module docstring).
DOCUMENT_DR = 1.0


def document_release_id(level: float) -> str:
    """E.g. "document 14 %": the candidate that changes up to 14 % of each document's words."""
    return f"document {100 * level:g} %"


@dataclass(eq=False)
class DocumentCandidates:
    """The defence at every level: each level's result and measured row, and the shared
    preparation a review needs to apply a level again (``prep``: read on first use)."""

    ctx: ReleaseContext
    prep_source: PrepSource | DefencePrep = field(repr=False)
    params: dict[str, DefenceParams]
    results: Mapping[str, DefenceResult] = field(repr=False)  # a ``LevelResults`` once kept
    table: pd.DataFrame = field(repr=False)
    ranked_by: str = ""  # "a defender cross-fitted on the attacker's reading" or the fallback
    seed: int = 0  # the pairing's seed is (seed, 22)
    measured: dict[str, dict] = field(default_factory=dict, repr=False)  # release id -> measure_row

    @property
    def prep(self) -> DefencePrep:
        """The documents' scored terms, pairing, fills and plans (all a level, or a review that
        rejects some of its changes, needs): kept on disk apart from the levels and read only
        when asked for (issue 21: 0.4 of the 0.53 GB of the 10k corpus's defence; a release
        that is not reviewed never needs it)."""
        if isinstance(self.prep_source, PrepSource):
            self.prep_source = self.prep_source.load()
        return self.prep_source

    def result(self, release_id: str, rejected: frozenset[str] = frozenset()) -> DefenceResult:
        """The release ``release_id`` with the ``rejected`` change keys left out."""
        base = self.results[release_id]
        if not rejected & {c.key for c in base.changes}:
            return base
        return defend(self.ctx.chunks, None, self.params[release_id], self.prep, rejected)

    def measures(self, result: DefenceResult) -> dict:
        loaded = self.results.loaded() if isinstance(self.results, LevelResults) else self.results
        for rid, base in loaded.items():  # a level as generated was read, so it is among these
            if result is base and rid in self.measured:  # as generated: measured once already
                return dict(self.measured[rid])
        row = measure_row(self.ctx, result.changed(self.ctx.chunks))
        row["dr"] = DOCUMENT_DR
        return row


@dataclass(frozen=True, eq=False)
class PrepSource:
    """Where a defence's preparation is read back from (its build memo), and what builds it
    again when that entry is gone (the same inputs give the same preparation)."""

    cache: Path | None
    key: str
    chunks: Sequence = field(repr=False)
    config: object = field(repr=False)
    reading_units: tuple | None = field(repr=False)

    def load(self) -> DefencePrep:
        found, prep = DiskMemo(self.cache, PREP_MEMO, BUILD_ENTRIES).get(self.key)
        if found:
            return prep
        return _defence_levels(self.chunks, self.config, self.reading_units, None, self.cache)[0]


def _level_key(key: str, release_id: str) -> str:
    return content_key("document level", key, release_id)  # = derived_key(key, ...) of a key


def _compact(result: DefenceResult, base: Sequence) -> tuple:
    """A level as kept: its changed chunks only (the others are the corpus's own)."""
    changed = {p: c for p, c in enumerate(result.chunks) if c is not base[p] and c != base[p]}
    return changed, result.changes, result.partner, result.selected


def _expand(kept: tuple, base: Sequence) -> DefenceResult:
    changed, changes, partner, selected = kept
    return DefenceResult([changed.get(p, c) for p, c in enumerate(base)], changes, partner, selected)


class LevelResults(Mapping):
    """Release id -> ``DefenceResult`` of a kept build, each level read from its own memo entry
    on first use (issue 21: a restarted server drawing the frontier read all six levels of the
    10k corpus, 91 MB and 1.6 s, to show their rows; a review reads one level). A level whose
    entry is gone is made again with every other (the same inputs give the same levels)."""

    def __init__(self, ids: Sequence[str], source: PrepSource) -> None:
        self._ids, self._source = list(ids), source
        self._loaded: dict[str, DefenceResult] = {}  # the levels held, used longest ago first
        self._lock = threading.Lock()  # the app's sessions may share a build

    def __getitem__(self, release_id: str) -> DefenceResult:
        with self._lock:
            if release_id in self._loaded:
                level = self._loaded[release_id] = self._loaded.pop(release_id)  # used last
                return level
        if release_id not in self._ids:
            raise KeyError(release_id)
        src = self._source
        found, kept = DiskMemo(src.cache, LEVEL_MEMO, BUILD_ENTRIES * LEVELS_PER_BUILD).get(
            _level_key(src.key, release_id))
        if found:
            level = _expand(kept, src.chunks)
        else:
            results = _defence_levels(src.chunks, src.config, src.reading_units, None, src.cache)[2]
            _keep_levels(src.cache, src.key, results, src.chunks)
            level = results[release_id]
        with self._lock:
            self._loaded.pop(release_id, None)
            while len(self._loaded) >= LEVELS_HELD:
                del self._loaded[next(iter(self._loaded))]
            self._loaded[release_id] = level
        return level

    def __iter__(self):
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def loaded(self) -> dict[str, DefenceResult]:
        """The levels held now (nothing is read to list them): the ``LEVELS_HELD`` read last."""
        with self._lock:
            return dict(self._loaded)


def _keep_levels(cache, key: str, results: Mapping[str, DefenceResult], base: Sequence) -> None:
    memo = DiskMemo(cache, LEVEL_MEMO, BUILD_ENTRIES * LEVELS_PER_BUILD)
    for rid, result in results.items():
        memo.put(_level_key(key, rid), _compact(result, base))


def fitted_defender(units: tuple, random_state: int, cache_dir: Path | None,
                    lineup: int | None = LINEUP_COMPANIES) -> DocumentDefender:
    """The cross-fitted defender of a reading (``units``: texts, labels, doc ids; line-ups of at
    most ``lineup`` companies), cached on disk by a hash of the reading (fitting char LR twice
    is the slow part: ~1 min on the dev reading); its arrays are read back memory-mapped
    (``mapped_pickle``: shared with the scoring workers, not this process's own memory)."""
    path = None
    lineup = effective_size(len(set(units[1])), lineup)
    if cache_dir is not None:
        key = (random_state, [list(u) for u in units])
        digest = repr_digest(key if lineup is None else (*key, lineup_key(lineup)))  # never whole
        path = Path(cache_dir) / "document_defence" / f"defender_{digest[:20]}.map"
        if path.is_file():
            try:
                return mapped_pickle.load(path)
            except (OSError, ValueError, pickle.UnpicklingError, EOFError):
                pass
    defender = DocumentDefender(random_state=random_state, lineup=lineup).fit(*units)
    if path is None:
        return defender
    path.parent.mkdir(parents=True, exist_ok=True)
    mapped_pickle.dump(defender, path)
    kept = mapped_pickle.load(path)  # its arrays mapped, as a warm run reads them
    del defender
    mapped_pickle.give_back_freed_memory()
    return kept


class DefenderBeside:
    """``fitted_defender(...)`` made in a thread while this one scores the documents' terms
    and pairs them (``defence_terms``: no defender enters them), when the defender's fits run
    in worker processes (``models.fit_processes``): the thread only waits for them, and the
    core the workers leave idle (the fits are fewer than the cores at their tail) does the
    terms — at 30,000 passages ~80 s of the walk in one process while the defender's fit took
    ~100 s (issue 21). Below ``fit_processes``' size the fits would run in that thread under
    the interpreter lock, so it is computed when ``result()`` is asked for: the same defender
    either way (tests/test_document_candidates.py)."""

    def __init__(self, units: tuple, random_state: int, cache_dir: Path | None, lineup: int | None):
        self._fit = partial(fitted_defender, units, random_state, cache_dir, lineup)
        self._pool: ThreadPoolExecutor | None = None
        self._future: Future | None = None
        if fit_processes(len(units[0]), 2) >= 2:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="defender-fit")
            self._future = self._pool.submit(contextvars.copy_context().run, self._fit)

    @property
    def beside(self) -> bool:
        return self._future is not None

    def result(self) -> DocumentDefender:
        return self._fit() if self._future is None else self._future.result()

    def close(self) -> None:
        """Wait for the fit when it was started (an error here: its workers still end)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def document_candidates(ctx, config, reading_units: tuple | None = None,
                        progress: Progress | None = None,
                        after_scoring: Callable[[], None] | None = None) -> DocumentCandidates | None:
    """The document-defence candidates of ``config`` on the pre-swap data ``ctx`` (None when
    ``document_levels`` is empty or the corpus has one company). ``reading_units``: (texts,
    labels, doc ids) of the attacker's reading (``reading_attacker(...).units_``) or None.

    Built once per corpus, settings and reading (``memo_keys.build_key``: no vector enters the
    build, so the prefetch's walk, whose embedder only records, keeps the build for the real
    pass that follows: issue 21), measured under the run's key (``run_key``: the measures embed
    the changed passages). ``after_scoring()``: called once the defence's scoring is done (at
    once when the build is kept; never when there is no defence)."""
    settings = config.document
    if not settings.document_levels or len({c.protected for c in ctx.chunks}) < 2:
        return None
    seed = config.sweep.seed
    cache = resolve_cache_dir(config.prepare.cache_dir)
    key = build_key(ctx.chunks, config, reading_units)
    levels, preps = DiskMemo(cache, BUILD_MEMO, BUILD_ENTRIES), DiskMemo(cache, PREP_MEMO, BUILD_ENTRIES)
    found, built = levels.get(key)
    source = PrepSource(cache, key, ctx.chunks, config, reading_units)
    prep: PrepSource | DefencePrep = source
    if found:
        if after_scoring is not None:
            after_scoring()
        params, rows, ranked_by = built
        results: Mapping[str, DefenceResult] = LevelResults([r["release_id"] for r in rows], source)
    else:
        kept = DiskMemo(cache, LEVEL_MEMO, BUILD_ENTRIES * LEVELS_PER_BUILD)
        # each level kept as it is made and let go (all six at once were ~1.6 GB at 100k)
        keep = None if kept.folder is None else (
            lambda rid, result: kept.put(_level_key(key, rid), _compact(result, ctx.chunks)))
        prep_made, params, results, rows, ranked_by = _defence_levels(
            ctx.chunks, config, reading_units, progress, cache, keep, after_scoring)
        preps.put(key, prep_made)
        if keep is not None:  # before the rows: rows found, levels kept
            results = LevelResults([r["release_id"] for r in rows], source)
        levels.put(key, (params, rows, ranked_by))
        if preps.folder is None:  # nowhere to read it back from: kept in memory
            prep = prep_made
        del prep_made
    measured = DiskMemo(cache, "document_measures").get_or_compute(
        derived_key(run_key(ctx, config, reading_units), "document measures"),
        lambda: _measure_levels(ctx, results, progress))
    table = pd.DataFrame([{**row, **measured[row["release_id"]]} for row in rows])
    table = table.set_index("release_id", drop=False)
    return DocumentCandidates(ctx, prep, params, results, table, ranked_by, seed, measured)


def defence_base(config) -> DefenceParams:
    """The document defence's settings of ``config`` at level 0 (each candidate is one level)."""
    settings = config.document
    return DefenceParams(level=0.0, min_z=settings.document_min_z, fill=settings.document_fill,
                         top_k=settings.document_top_k, round_figures=settings.document_round_figures)


def _defence_levels(chunks, config, reading_units, progress, cache,
                    keep: Callable[[str, DefenceResult], None] | None = None,
                    after_scoring: Callable[[], None] | None = None) -> tuple:
    """(prep, params, results, rows, ranked_by) of ``document_candidates``: each level's text
    and its row before the measures (the term model is not kept: 30 MB on the dev corpus, half
    the memo entry, and ``prep`` holds the documents' scored terms). ``keep(release_id,
    result)``: each level handed there as it is made and not held (``results`` left empty).
    ``after_scoring()``: called once the types are ranked (the defender's scoring workers are
    done; what follows runs in this process)."""
    settings = config.document
    say = progress or (lambda f, m: None)
    seed = config.sweep.seed
    base = defence_base(config)
    fit = None
    if reading_units is not None and settings.document_defender:
        say(0.0, "Document defence: fitting the defender on two halves of the reading")
        fit = DefenderBeside(reading_units, seed, cache, config.sweep.lineup)
    try:
        say(0.05, "Document defence: distinctive types of each document, pairing documents")
        model = TermModel(random_state=seed).fit(chunks, reading_units)
        prep = defence_terms(chunks, model, base, np.random.default_rng([seed, 22]),
                             n_candidates=settings.document_candidates)  # fmt: skip
        defender = None if fit is None else fit.result()
    finally:
        if fit is not None:
            fit.close()
    say(0.3, "Document defence: ranking each document's types")
    prep = rank_by_defender(chunks, prep, defender, base.min_z, n_candidates=settings.document_candidates,
                            cache_dir=cache)  # fmt: skip
    if after_scoring is not None:
        after_scoring()
    ranked_by = ("a defender cross-fitted on the two halves of the attacker's reading"
                 if prep.plans is not None else
                 "the corpus's own log-odds (no attacker reading: the fallback)")  # fmt: skip
    params, results, rows = {}, {}, []
    levels = sorted(set(settings.document_levels))
    for k, level in enumerate(levels):
        say(0.5 + 0.4 * k / len(levels), f"Document defence at {100 * level:g} % of words")
        rid = document_release_id(level)
        params[rid] = replace(base, level=level)
        result = defend(chunks, model, params[rid], prep)
        rows.append({"release_id": rid, "level": level, "changes": len(result.changes),
                     "types": sum(len(v) for v in result.selected.values()),
                     "description": params[rid].describe() + f" (types ranked by {ranked_by})"})  # fmt: skip
        if keep is None:
            results[rid] = result
        else:
            keep(rid, result)
        del result
    return prep, params, results, rows, ranked_by


def _measure_levels(ctx, results: Mapping[str, DefenceResult], progress) -> dict[str, dict]:
    """Release id -> ``measure_row`` of each level's text (its changed passages embedded)."""
    say = progress or (lambda f, m: None)
    words = total_words(ctx)
    measured = {}
    for k, (rid, result) in enumerate(results.items()):
        say(0.9 + 0.1 * k / len(results), f"Document defence at {rid[len('document '):]}: measuring")
        measured[rid] = measure_row(ctx, result.changed(ctx.chunks), words)
        measured[rid]["dr"] = DOCUMENT_DR
    return measured


@dataclass(frozen=True, eq=False)
class DocumentStage:
    """One level of the document defence, as a candidate (module docstring)."""

    documents: DocumentCandidates
    release_id: str

    def row(self) -> dict:
        r = self.documents.table.loc[self.release_id]
        return {"release_id": self.release_id, "sampler": DOCUMENT, "combination": "",
                "swaps": int(r["changes"]), "rounds": 0, "description": r["description"],
                "plan": "", "plan_index": -1, "stage_index": -1,
                "du": float(r["du"]), "dr": DOCUMENT_DR, "du_mean": float(r["du"]), "du_sd": 0.0,
                "dr_mean": DOCUMENT_DR, "dr_sd": 0.0, "draws": 1, "draws_total": 1,
                "all_draws": True, "swap_rate": np.nan, "p_hat": np.nan,
                "risk_status": ""}  # fmt: skip

    def changed(self) -> dict:
        return self.documents.results[self.release_id].changed(self.documents.ctx.chunks)

    def utility(self, total_words: int | None = None) -> dict:
        row = self.documents.table.loc[self.release_id]
        return {k: float(row[k]) for k in ("words_unchanged", "mean_cosine", "clusters_unchanged",
                                           "chunks_changed")}  # fmt: skip

    def identity(self) -> dict:
        return {"release": self.release_id}

    def review(self, decisions: Decisions) -> ChosenRelease:
        rejected = frozenset(k for k, (d, *_) in decisions.items() if d == "reject")
        generated = self.documents.results[self.release_id].changes
        result = self.documents.result(self.release_id, rejected)
        base = self.documents.ctx.chunks
        changed = {i: c.text for i, c in enumerate(result.chunks) if c.text != base[i].text}
        return ChosenRelease(
            self.release_id, tuple(result.chunks), tuple(result.changes), len(generated),
            sum(1 for c in generated if c.key in rejected), "changes.csv",
            pd.DataFrame([c.to_dict() for c in result.changes]),
            review_frame(generated, rejected, decisions), self.documents.measures(result),
            (changed,), self.identity(), (self.documents.seed, 22), "changes")


def review_frame(changes: Sequence, rejected: frozenset[str], decisions: Decisions) -> pd.DataFrame:
    """key/decisions.csv of a document-defence release: one row per document and type."""
    rows, seen, count = [], set(), Counter(c.key for c in changes)
    for c in changes:
        if c.key in seen:
            continue
        seen.add(c.key)
        n = count[c.key]
        rows.append({"kind": c.kind, "document": c.doc_id, "term": c.term, "before": c.before,
                     "after": c.after, "occurrences": n, "partner document": c.partner_doc,
                     "in release": c.key not in rejected,
                     "decision": decisions.get(c.key, ("", ""))[0] or "not reviewed (kept)",
                     "note": decisions.get(c.key, ("", ""))[1], "key": c.key})  # fmt: skip
    return pd.DataFrame(rows)
