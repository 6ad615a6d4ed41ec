"""The document-level defender: each document's word budget spent on the types that move its
company's margin most, judged by attackers that did not read everything (SPEC §12, issue 22).

``DocumentDefender`` is an *ensemble* of attacker families (word LR, char LR, whole-document
retrieval: ``measure.panel.make_family``) *cross-fitted* on the attacker's reading: the reading's
documents are split in two halves per company and every family is fitted once per half, so no
member has read everything the evaluating attacker reads, and a type is only worth treating when
it weighs for models fitted on different texts (a transfer guard against fooling one model).

For each document d of company c and each candidate type t (the ``n_candidates`` best by z), every
member measures the fall of d's margin against the rival company r (the pairing partner's
company) when every occurrence of t becomes its replacement — exactly, by re-scoring the modified
chunks (chunk families: Σ over chunks of s_c − s_r; retrieval: cos_c − cos_r of the whole
document). Each fall is divided by the member's margin before treatment, so members weigh alike;
the *priority* of t is the mean fraction over members per word t costs; the document's
distinctive product and organisation names (NER category, z ≥ 2) come first whatever their
priority (issue 23 item 8: they name the company to any reader). Every document then gets
``level`` × its words, spent in priority order (uniform allocation: on the dev corpus it was
within noise of a cheapest-first corpus budget on a company split, and never flips a document
only by the defender's own uncalibrated estimate).

These margins were the expensive part (221 s for the dev corpus's 35 calls, 200 s of it
re-vectorising whole passages): every changed passage is now scored from its changed words only
(``measure.count_delta``, the same counts to the last bit), and only its two companies' margin
from the terms the type changes (``measure/edit_margins.py``: x·d / ‖x‖ updated term by term,
the whole-row figures up to rounding; 215 → 126 s of the 10k walk), and ``document_plans`` caches the
plans on disk, keyed by a hash of every input (the chunk texts, the fills, the rivals, the
defender).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy import sparse

from .. import fast_unpickle, mapped_pickle
from ..config.defaults import DEFAULT_DOCUMENT_CANDIDATES
from ..corpus import Chunk
from ..disk_memo import repr_digest
from ..measure.lineups import assign_lineups, lineup_key
from ..measure.panel import assemble_family, fit_lineup_calls, make_family, split_by_lineup
from ..models.fit_processes import fit_processes, run_in_processes
from .document import (
    DefenceParams,
    DefenceResult,
    apply_defence,
    fill_plan,
    occurrence_text,
    pair_documents,
)
from .document_terms import (
    CATEGORIES,
    NAMED_FIRST,
    NAMED_MIN_Z,
    DocTerms,
    TermModel,
    document_terms,
    is_own_name,
    ranked_candidates,
    reading_halves,
    select_terms,
)

MEMBERS = ("word", "char", "retrieval")


class DocumentDefender:
    """Ensemble of families cross-fitted on two halves of the reading (module docstring).

    ``lineup``: with more companies, every member names a document among its company's line-up
    of at most this many (``measure/lineups.py``, dealt over the reading's companies as the
    attacker panel deals them: the panel's line-ups), one model per line-up, and a rival outside
    the line-up is replaced by the best other company inside it.
    Fitted: ``members_`` [(family name, half, fitted family)], ``half_`` {reading doc id: half}."""

    def __init__(self, members: Sequence[str] = MEMBERS, *, random_state: int = 0,
                 lineup: int | None = None):
        self.members, self.random_state, self.lineup = tuple(members), random_state, lineup

    def fit(self, texts: Sequence[str], labels: Sequence[str], doc_ids: Sequence[str]) -> DocumentDefender:
        self.half_ = reading_halves(doc_ids, labels, self.random_state)
        every = np.array(sorted(set(map(str, labels))), dtype=object)
        lineup_all = assign_lineups(every, self.lineup)
        jobs: list = []
        calls: list = []  # independent fits: on every core (models.fit_processes), same bits
        for h in (0, 1):
            keep = [i for i, d in enumerate(doc_ids) if self.half_[d] == h]
            if len({labels[i] for i in keep}) < 2:
                continue
            half = ([texts[i] for i in keep], [str(labels[i]) for i in keep], [doc_ids[i] for i in keep])
            classes = np.array(sorted(set(half[1])), dtype=object)
            lineup = lineup_all[np.searchsorted(every, classes)]
            for name in self.members:
                mine = fit_lineup_calls(name, self.random_state, *half, None, classes, lineup)
                jobs.append((name, h, classes, lineup, len(calls), len(calls) + len(mine)))
                calls.extend(mine)
        fitted = run_in_processes(calls, fit_processes(len(texts), len(calls)))
        self.members_ = []
        for name, h, classes, lineup, a, b in jobs:
            split = split_by_lineup(make_family(name, self.random_state), lineup)
            fam, _ = assemble_family(fitted[a:b], classes, lineup, split)
            self.members_.append((name, h, fam))
        key = (self.members, self.random_state, list(texts), list(labels), list(doc_ids))
        self.fingerprint_ = repr_digest(key if self.lineup is None else (*key, lineup_key(self.lineup)))[:20]
        return self


@dataclass
class DocPlan:
    """One document's candidate types in priority order, each member's margin fraction and cost."""

    order: list[str]
    fractions: np.ndarray  # (types, members)
    costs: np.ndarray  # words changed per type


@dataclass(frozen=True)
class DocJob:
    """What scoring one document's candidate types needs (picklable, for a worker process)."""

    company: str
    base: list[str]  # the document's passages
    n_types: int
    types: list[int]  # per edit: the candidate type it belongs to
    edits: list[tuple[int, list]]  # (index in base, spans): a passage the type changes
    rival: str | None


def _member_fall(fam, job: DocJob) -> np.ndarray:
    """Fall of the document's margin (own company vs rival) under each candidate type, as a
    fraction of it; each changed passage scored from its changed words only
    (``measure.count_delta``)."""
    classes = list(fam.classes_)
    n, rows, edits, base = job.n_types, job.types, job.edits, job.base
    if job.company not in classes:
        return np.zeros(n)
    y = classes.index(job.company)
    lineup = getattr(fam, "lineup_", None)  # a rival outside the line-up: the best inside it
    inside = np.ones(len(classes), bool) if lineup is None else lineup == lineup[y]
    others = inside & (np.arange(len(classes)) != y)
    if not others.any():
        return np.zeros(n)
    rival = classes.index(job.rival) if job.rival in classes and inside[classes.index(job.rival)] else None
    if fam.whole_document:
        base_counts = fam.counts(base)
        total = sparse.csr_matrix(base_counts.sum(axis=0))
        s0 = fam.doc_scores(total, lineups=None if lineup is None else lineup[[y]])[0]  # its line-up only
        r = rival if rival is not None else int(np.argmax(np.where(others, s0, -np.inf)))
        margin = s0[y] - s0[r]
        if not edits:
            return np.zeros(n)
        fast = fam.type_margins(base, edits, rows, n, total, y, r) if hasattr(fam, "type_margins") else None
        if fast is not None:  # from the changed terms only (measure/edit_margins.py)
            fall = fast[0] - fast[1]
            return fall / margin if margin > 0 else np.zeros(n)
        delta = fam.edited_counts(base, edits) - base_counts[[i for i, _ in edits]]
        agg = sparse.csr_matrix((np.ones(len(rows)), (rows, np.arange(len(rows)))),
                                shape=(n, len(rows))) @ delta  # fmt: skip
        # only the two companies' columns: scoring every company's profile for each of up to
        # ``document_candidates`` types made this documents x types x companies (quadratic in
        # the corpus; 906 of the 30k walk's 1,319 CPU-s); the same numbers (tests)
        s1 = fam.doc_scores(sparse.vstack([total] * n) + agg, columns=[y, r])
        fall = margin - (s1[:, 0] - s1[:, 1])
    else:
        own = None if lineup is None else lineup[y]  # a line-up family: its own model only
        s0 = fam.chunk_scores(base) if own is None else fam.chunk_scores(base, None, np.full(len(base), own))
        tot = s0.sum(axis=0)
        r = rival if rival is not None else int(np.argmax(np.where(others, tot, -np.inf)))
        margin = tot[y] - tot[r]
        fall = np.zeros(n)
        # the two companies' margins from the changed terms only (measure/edit_margins.py;
        # scoring every edited row against every company was half of this at 10k passages)
        margins = fam.edit_margins(base, edits, classes[y], classes[r]) \
            if edits and hasattr(fam, "edit_margins") else None
        if margins is not None:
            before, after = margins
            np.add.at(fall, rows, before[[i for i, _ in edits]] - after)
        elif edits:
            m0 = s0[:, y] - s0[:, r]
            s1 = fam.edited_scores(base, edits) if own is None else fam.edited_scores(base, edits, np.full(len(edits), own))
            np.add.at(fall, rows, [m0[i] - (s1[k, y] - s1[k, r]) for k, (i, _) in enumerate(edits)])
    return fall / margin if margin > 0 else np.zeros(n)


def _fractions(members, job: DocJob) -> np.ndarray:
    """(types, members): each member's margin fraction of each candidate type."""
    fr = np.zeros((job.n_types, len(members)))
    for mi, (_, _, fam) in enumerate(members):
        fr[:, mi] = _member_fall(fam, job)
    return fr


#: Documents from which their scoring is shared between worker processes (fewer: one process;
#: a worker's start, loading the defender, costs a few seconds). On the dev corpus (35
#: documents, 2 cores, ``benchmarks/document_plans.py``, every memo cold): 7.5 s in two
#: processes against 11.1 s in one.
PROCESS_MIN_DOCUMENTS = 24
_MEMBERS: list | None = None


def _start_worker(path: str) -> None:
    global _MEMBERS
    _MEMBERS = mapped_pickle.load(path)  # its arrays shared with the other workers (page cache)


def _worker_fractions(job: DocJob) -> np.ndarray:
    if _MEMBERS is None:
        raise RuntimeError("document defence worker started without its members")
    return _fractions(_MEMBERS, job)


def job_order(sizes: Sequence[int], groups: Sequence[int] | None = None) -> list[int]:
    """The order the documents' jobs are handed to the workers: biggest first (the last jobs
    are the short ones, so no worker idles long at the end); with ``groups`` (each job's
    line-up), one line-up after another, the line-up of most work first, biggest first within
    it. A line-up's members have their own vectorizers and row memos (``measure/row_memo``),
    bounded per process: handed out in size order alone, the 32 line-ups of 100,000 passages
    took turns, and each worker kept dropping the memos of one to make room for another's."""
    if groups is None:
        return sorted(range(len(sizes)), key=lambda k: -sizes[k])
    work: dict[int, int] = defaultdict(int)
    for k, g in enumerate(groups):
        work[g] += sizes[k]
    rank = {g: r for r, g in enumerate(sorted(work, key=lambda g: (-work[g], g)))}
    return sorted(range(len(sizes)), key=lambda k: (rank[groups[k]], -sizes[k]))


def _job_groups(defender: DocumentDefender, companies: Sequence[str]) -> list[int] | None:
    """Each document's line-up (by its company) under ``defender``'s members, −1 for a company
    none of them knows; None with one line-up (``job_order``)."""
    lineup_of: dict[str, int] = {}
    for _, _, fam in defender.members_:
        lineup = getattr(fam, "lineup_", None)
        if lineup is not None:
            lineup_of.update(zip(map(str, fam.classes_), np.asarray(lineup).tolist(), strict=True))
    if len(set(lineup_of.values())) < 2:
        return None
    return [lineup_of.get(str(c), -1) for c in companies]


def _all_fractions(members, make_job, sizes: list[int], processes: int | None,
                   groups: list[int] | None = None) -> list[np.ndarray]:
    """``_fractions`` of every job (``make_job(k)`` builds job k; ``sizes``: its scheduling
    weight; ``groups``: its line-up, ``job_order``), in ``processes`` spawned workers when there
    are enough documents (each document is scored alone: the same numbers as one process, bit
    for bit); in this process when the workers cannot start (a script without a ``__main__``
    guard). A job is built when a worker is about to need it, never all at once: every
    candidate's edited passages of every document were about 1 GB at 100k passages (issue 21)."""
    n = (os.cpu_count() or 1) if processes is None else processes
    if n > 1 and len(sizes) >= PROCESS_MIN_DOCUMENTS:
        context = multiprocessing.get_context("spawn")  # never fork a process holding a model
        # the members go through a file, not the start-up pipe: the parent writes a worker's
        # start-up data whole before it reads any, and a worker that dies first (a script
        # without a __main__ guard) would leave it blocked on tens of MB forever
        with tempfile.TemporaryDirectory(prefix="neswap-defender-") as folder:
            path = Path(folder) / "members.map"
            mapped_pickle.dump(members, path)
            try:
                workers = min(n, len(sizes))
                with ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                                         initargs=(str(path),)) as pool:  # fmt: skip
                    order = iter(job_order(sizes, groups))
                    out: list = [None] * len(sizes)
                    pending: dict = {}
                    while True:
                        while len(pending) < 2 * workers and (k := next(order, None)) is not None:
                            pending[pool.submit(_worker_fractions, make_job(k))] = k
                        if not pending:
                            return out
                        done, _ = wait(pending, return_when=FIRST_COMPLETED)
                        for future in done:
                            out[pending.pop(future)] = future.result()
            except (BrokenProcessPool, OSError, RuntimeError):
                pass
    return [_fractions(members, make_job(k)) for k in range(len(sizes))]


def _doc_job(chunks: Sequence[Chunk], d: DocTerms, cands: list[str], fill: dict, rival: str | None) -> DocJob:
    """The scoring job of one document's candidate types: each changed passage's spans."""
    row_of = {p: i for i, p in enumerate(d.positions)}
    types, edits = [], []
    for ti, t in enumerate(cands):
        by_chunk = defaultdict(list)
        for p, o in d.occurrences(t):
            by_chunk[p].append((o.start, o.end, occurrence_text(chunks[p].text, o, *fill[t])))
        for p, spans in by_chunk.items():
            types.append(ti)
            edits.append((row_of[p], spans))
    return DocJob(d.company, [chunks[p].text for p in d.positions], len(cands), types, edits, rival)


def document_plans(chunks: Sequence[Chunk], docs: dict[str, DocTerms], defender: DocumentDefender,
                   rival: dict[str, str], fills: dict[str, dict], *, n_candidates: int = DEFAULT_DOCUMENT_CANDIDATES,
                   min_z: float = 0.5, cache_dir: str | Path | None = None,
                   processes: int | None = None) -> dict[str, DocPlan]:
    """Per document: candidate types by priority, with each member's margin fraction (exact);
    cached in ``cache_dir`` by a hash of every input (module docstring). ``processes``: worker
    processes for the scoring (default: one per CPU, from ``PROCESS_MIN_DOCUMENTS`` documents)."""
    path = None
    if cache_dir is not None:
        key = repr_digest((sorted((c.chunk_id, c.text) for c in chunks), sorted(rival.items()),
                           n_candidates, min_z, defender.fingerprint_,
                           sorted((i, sorted(f.items())) for i, f in fills.items())))[:20]  # fmt: skip
        path = Path(cache_dir) / "document_defence" / f"plans_{key}.pkl"
        if path.is_file():
            try:
                return fast_unpickle.loads(path.read_bytes())
            except (OSError, pickle.UnpicklingError, EOFError):
                pass  # a damaged cache file is recomputed
    ids = list(docs)
    cands_of = {i: [t for t in ranked_candidates(docs[i], min_z, "z")[:n_candidates] if t in fills.get(i, {})]
                for i in ids}  # fmt: skip

    def make_job(k: int) -> DocJob:
        i = ids[k]
        return _doc_job(chunks, docs[i], cands_of[i], fills.get(i, {}), rival.get(i))

    sizes = [sum(docs[i].count(t) for t in cands_of[i]) for i in ids]
    groups = _job_groups(defender, [docs[i].company for i in ids])
    fractions = _all_fractions(defender.members_, make_job, sizes, processes, groups) if defender.members_ else \
        [np.zeros((len(cands_of[i]), 0)) for i in ids]
    plans = {}
    for (doc_id, d), fr in zip(docs.items(), fractions, strict=True):
        cands = cands_of[doc_id]
        plans[doc_id] = _ordered(cands, fr, np.array([d.cost(t) for t in cands], dtype=float))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(plans))
        tmp.replace(path)
    return plans


def _ordered(cands: list[str], fractions: np.ndarray, costs: np.ndarray) -> DocPlan:
    """Types by priority (mean fraction per word, ties by rank), those that help only."""
    if not cands:
        return DocPlan([], fractions, costs)
    pri = fractions.mean(axis=1) / costs if fractions.shape[1] else np.zeros(len(cands))
    o = np.lexsort((np.arange(len(pri)), -pri))
    o = o[pri[o] > 0]
    return DocPlan([cands[i] for i in o], fractions[o], costs[o])


def allocate(plans: dict[str, DocPlan], docs: dict[str, DocTerms], level: float,
             more: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Selected types per document: ``level`` × its words, in priority order (uniform); when
    the scored types run out, ``more`` (the types beyond them, by z) continue the order, so a
    strong level is not capped by the number of types the defender scored."""
    out = {}
    for i, plan in plans.items():
        d, budget = docs[i], level * docs[i].words
        chosen, spent, covered = [], 0.0, set[str]()
        phrases = d.phrase_index()
        extra = (more or {}).get(i, [])
        order = list(plan.order) + extra
        costs = list(plan.costs) + [d.cost(t) for t in extra]
        for t, c in zip(order, costs, strict=True):
            if t in covered or spent + c > budget + 1e-9:
                continue
            chosen.append(t)
            spent += c
            if " " not in t:
                covered.update(phrases.get(t, ()))
        out[i] = chosen
    return out


@dataclass
class DefencePrep:
    """What every level of a defence shares: document terms, pairing, fills, the ranked plans."""

    docs: dict[str, DocTerms]
    partner: dict[str, str]
    fills: dict[str, dict]
    plans: dict[str, DocPlan] | None  # None: no defender (z ranking, the corpus-only fallback)
    more: dict[str, list[str]] = field(default_factory=dict)  # types beyond the scored ones, by z
    _named: dict[str, DocPlan] | None = field(default=None, init=False, repr=False, compare=False)

    def named_plans(self) -> dict[str, DocPlan] | None:
        """``plans`` with each document's distinctive names first (``named_types``): what every
        level allocates from, made once per preparation, not once per level (issue 21: a sixth
        of applying a level at 10k passages); not kept with it on disk (``__getstate__``)."""
        if self.plans is None:
            return None
        if self._named is None:
            self._named = {i: _named_first(p, named_types(self.docs[i]), self.docs[i])
                           for i, p in self.plans.items()}  # fmt: skip
        return self._named

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_named"] = None
        return state


def prepare_defence(chunks: Sequence[Chunk], model: TermModel, params: DefenceParams,
                    rng: np.random.Generator, defender: DocumentDefender | None = None, *,
                    n_candidates: int = DEFAULT_DOCUMENT_CANDIDATES, cache_dir: str | Path | None = None) -> DefencePrep:
    """Pair documents, fix each candidate's replacement and, with a defender, rank candidates by
    the margin they remove per word (module docstring): ``defence_terms`` then
    ``rank_by_defender``."""
    prep = defence_terms(chunks, model, params, rng, n_candidates=n_candidates)
    return rank_by_defender(chunks, prep, defender, params.min_z, n_candidates=n_candidates,
                            cache_dir=cache_dir)  # fmt: skip


def defence_terms(chunks: Sequence[Chunk], model: TermModel, params: DefenceParams,
                  rng: np.random.Generator, *, n_candidates: int = DEFAULT_DOCUMENT_CANDIDATES) -> DefencePrep:
    """The part of ``prepare_defence`` no defender enters: the documents' scored terms, their
    pairing and each candidate's replacement (``plans`` None), so it can be made while the
    defender is fitted in worker processes (issue 21)."""
    chunks = list(chunks)
    docs = document_terms(chunks, model, params.min_z)
    partner = pair_documents(chunks, rng, params.top_k) if "pair" in params.fill else {}
    orders = {i: ranked_candidates(d, params.min_z, params.rank) for i, d in docs.items()}
    fills = fill_plan(docs, params, partner, orders, n_candidates)
    more = {i: order[n_candidates:] for i, order in orders.items()}
    return DefencePrep(docs, partner, fills, None, more)


def rank_by_defender(chunks: Sequence[Chunk], prep: DefencePrep, defender: DocumentDefender | None,
                     min_z: float, *, n_candidates: int = DEFAULT_DOCUMENT_CANDIDATES,
                     cache_dir: str | Path | None = None) -> DefencePrep:
    """``prep`` with its plans ranked by ``defender`` (``document_plans``); ``prep`` itself when
    there is no defender or it has no members (the z ranking: the corpus-only fallback)."""
    if defender is None or not defender.members_:
        return prep
    docs = prep.docs
    rival = {i: docs[prep.partner[i]].company for i in docs if i in prep.partner}
    plans = document_plans(list(chunks), docs, defender, rival, prep.fills, n_candidates=n_candidates,
                           min_z=min_z, cache_dir=cache_dir)  # fmt: skip
    return replace(prep, plans=plans)


def defend(chunks: Sequence[Chunk], model: TermModel | None, params: DefenceParams, prep: DefencePrep,
           rejected: frozenset[str] = frozenset()) -> DefenceResult:
    """The defence at ``params.level`` on a prepared corpus (``prepare_defence``; its documents'
    terms are scored already, so ``model`` may be None)."""
    plans = prep.named_plans()
    if plans is not None:
        selected = allocate(plans, prep.docs, params.level, prep.more)
    else:
        selected = {i: select_terms(d, named_types(d) + ranked_candidates(d, params.min_z, params.rank),
                                    params.level * d.words) for i, d in prep.docs.items()}  # fmt: skip
    return apply_defence(chunks, model, params, np.random.default_rng(0), selected=selected,
                         partner=prep.partner, fills=prep.fills, rejected=rejected, docs=prep.docs)


def named_types(d: DocTerms) -> list[str]:
    """The document's distinctive names, treated first: its product and organisation entities
    (z >= ``NAMED_MIN_Z``, by z), then its own names (``document_terms.is_own_name``: every
    capitalised type no other company of the corpus uses, by z, no floor: one mention of a name
    is enough for a reader who knows it). The second rule does not trust the tagger: spaCy tags
    "Wirecutter" (a New York Times product) as a Person, and the sample's default release left
    it whole in the NYT call."""
    tagged = [k for k in ranked_candidates(d, NAMED_MIN_Z)
              if CATEGORIES[d.category[d.index(k)]] in NAMED_FIRST and not d.frames[d.index(k)]]
    taken = set(tagged)
    z = d.zs.tolist()
    rows = [i for i, k in enumerate(d.keys) if k not in taken
            and is_own_name(z[i], bool(d.exclusive[i]), d.frames[i], d.surfaces[i], bool(d.capital[i]))]
    own = [d.keys[i] for i in sorted(rows, key=lambda i: (-z[i], d.keys[i]))]
    return tagged + own


def _named_first(plan: DocPlan, first: list[str], d: DocTerms) -> DocPlan:
    """``plan`` with ``first`` moved to the front (margin fractions of unscored types are 0)."""
    if not first:
        return plan
    index = {t: i for i, t in enumerate(plan.order)}
    taken = set(first)
    rest = [i for i, t in enumerate(plan.order) if t not in taken]
    fr = np.vstack([plan.fractions[index[t]] if t in index else np.zeros(plan.fractions.shape[1])
                    for t in first] + [plan.fractions[rest]]) if plan.fractions.size else plan.fractions
    costs = np.array([d.cost(t) for t in first] + list(plan.costs[rest]), dtype=float)
    return DocPlan(first + [plan.order[i] for i in rest], fr, costs)
