"""The adaptive attacker on the written document-defence release: adaptive.json (issue 22, SPEC §12).

The attacker panel is trained on the attacker's reading as it is. An attacker who knows neswap
can do more: run the same document defence on its own reading (the same level, fill and
pairing settings; ranked by the reading's own log-odds, since the reading has no reading of its
own) and train its word, character and whole-document retrieval models on the defended text.
The decoys then stop pointing elsewhere — every profile has lost its own distinctive words and
gained some of its partners' — and what is left of each company's phrasing names its documents
again (dev corpus: 0.89 of documents at `document 23 %`, against 0.46 for the panel).

The run's goal and verdict are judged against the panel (the candidates are chosen on it); this
measure is written beside them so that the analyst reads, for the release actually written,
how it fares against an attacker who runs neswap too. It is computed for a document-defence
release with an attacker reading (``[document] document_adaptive_check``); the fitted models
are cached by the defended reading and the figures kept on disk by the run's key and the
written text, like attack.json.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from ..choose.memo_keys import changed_parts, derived_key
from ..choose.result import ReleaseResult
from ..choose.verdict import attacker_name
from ..corpus import Chunk
from ..disk_memo import DiskMemo, content_key, texts_digest
from ..generate.document import DefenceParams
from ..generate.document_budget import defend, prepare_defence
from ..generate.document_terms import TermModel
from ..measure.panel_cache import fitted_panel
from ..measure.panel_scorers import family_scorers
from ..models.fit_processes import MIN_TEXTS, InBackground
from ..paths import resolve_cache_dir

#: Where ``reading_prep`` keeps the reading's defence preparation, and how many (one per
#: reading and settings: each is tens of MB on dev).
PREP_MEMO, PREP_ENTRIES = "adaptive_reading_preps", 4
#: The families the adaptive attacker refits on its defended reading.
ADAPTIVE_FAMILIES = ("word", "char", "retrieval")
#: What adaptive.json says the attacker is.
ADAPTIVE_NOTE = ("word, character and whole-document retrieval models trained on the attacker's "
                 "reading after the same document defence (same level and settings, types ranked "
                 "by the reading's own log-odds); the goal and the verdict are judged against the "
                 "attacker panel, which reads the reading as it is")


def _reading_chunks(units: tuple) -> list[Chunk]:
    texts, labels, ids = (list(u) for u in units)
    return [Chunk(f"{d}#{i:06d}", d, i, t, y)
            for i, (t, y, d) in enumerate(zip(texts, labels, ids, strict=True))]  # fmt: skip


def _base(params: DefenceParams) -> DefenceParams:
    """``params`` at level 0: what the reading's preparation depends on (every level shares it)."""
    return DefenceParams(level=0.0, min_z=params.min_z, rank=params.rank, fill=params.fill,
                         top_k=params.top_k, round_figures=params.round_figures)  # fmt: skip


def _prep_key(units: tuple, params: DefenceParams, seed: int) -> str:
    base = _base(params)
    return content_key("adaptive reading prep", texts_digest(units[0]), [str(v) for v in units[1]],
                       [str(v) for v in units[2]], repr(base), seed)  # fmt: skip


def reading_prep(units: tuple, params: DefenceParams, seed: int, cache_dir=None):
    """The reading's document-defence preparation (term model, pairs, ranked candidates) for
    any level of ``params``' settings: level-independent, so ``reading_prep_in_background``
    makes it while the candidate table is measured on one core, and the writer's adaptive
    attacker only applies the chosen level (SPEC §12, issue 21). Kept on disk under
    ``cache_dir`` (the same value either way: the rng is seeded by ``seed``)."""
    def compute():
        reading = _reading_chunks(units)
        model = TermModel(random_state=seed).fit(reading)
        return prepare_defence(reading, model, _base(params), np.random.default_rng([seed, 22]))

    return DiskMemo(cache_dir, PREP_MEMO, PREP_ENTRIES).get_or_compute(_prep_key(units, params, seed), compute)


def reading_prep_in_background(units: tuple | None, params: DefenceParams | None, seed: int,
                               cache_dir) -> InBackground | None:
    """``reading_prep`` started in a worker process (None: no reading, no document defence, a
    reading under ``MIN_TEXTS`` units, no cache folder to hand it over in, or already kept)."""
    if units is None or params is None or cache_dir is None or len(units[0]) < MIN_TEXTS:
        return None
    if DiskMemo(cache_dir, PREP_MEMO, PREP_ENTRIES).has(_prep_key(units, params, seed)):
        return None
    pending = InBackground(partial(_keep_reading_prep, units, params, seed, cache_dir))
    return pending if pending.started else None


def _keep_reading_prep(units: tuple, params: DefenceParams, seed: int, cache_dir) -> bool:
    reading_prep(units, params, seed, cache_dir)
    return True


def defended_reading(units: tuple, params: DefenceParams, seed: int,
                     cache_dir=None) -> tuple[list[str], list, list]:
    """(texts, labels, doc ids) of the reading ``units`` after the document defence ``params``
    (its preparation read from ``cache_dir`` when ``reading_prep`` kept it there)."""
    _, labels, ids = (list(u) for u in units)
    prep = reading_prep(units, params, seed, cache_dir)
    out = defend(_reading_chunks(units), None, params, prep)  # the prep's terms are scored
    return [c.text for c in out.chunks], labels, ids


def adaptive_figures(units: tuple, params: DefenceParams, chunks, changed: dict[int, str], seed: int,
                     cache_dir, lineup: int | None = None) -> dict:
    """adaptive.json's figures: each family's accuracy on the release and the worst case.

    ``lineup``: the run's line-up size (``sweep.lineup``), as for the panel it stands beside:
    without it every company is one multinomial fit, about quadratic in the corpus (hours at
    100k passages, where the panel's line-up fits take minutes)."""
    return _figures(units, params, _columns(chunks), changed, seed, cache_dir, lineup)


def _columns(chunks) -> tuple[list[str], list[str], list[str]]:
    """(texts, companies, documents) of the corpus's chunks: what the figures read of them."""
    return [c.text for c in chunks], [c.protected for c in chunks], [c.doc_id for c in chunks]


def _figures(units: tuple, params: DefenceParams, columns: tuple, changed: dict[int, str], seed: int,
             cache_dir, lineup: int | None) -> dict:
    texts, labels, ids = defended_reading(units, params, seed, cache_dir)
    panel = fitted_panel(texts, labels, ids, ADAPTIVE_FAMILIES, cache_dir=cache_dir, random_state=seed,
                         lineup=lineup)
    scorers = family_scorers(panel, *columns)
    families = {}
    for name, scorer in scorers.items():
        m = scorer.score(changed)
        families[name] = {"chunk_accuracy": float(m.chunk_top1),
                          "document_accuracy": float(m.document_accuracy),
                          "documents_named": int(m.documents_named), "n_documents": int(m.n_documents),
                          "chance": float(m.chance)}  # fmt: skip
    worst = {}
    for level in ("chunk", "document"):
        name = max(families, key=lambda f: (families[f][f"{level}_accuracy"], f))
        worst[level] = {"accuracy": families[name][f"{level}_accuracy"], "attacker": name}
    return {"attacker": "adaptive", "note": ADAPTIVE_NOTE, "level": params.level,
            "families": families, "worst": worst}


def _reading_units(result: ReleaseResult) -> tuple | None:
    reading = result.scorers.get("reading")
    return getattr(getattr(reading, "attacker", None), "units_", None)


def adaptive_applies(result: ReleaseResult) -> bool:
    """Whether the written release gets adaptive.json: a document-defence release, an attacker
    reading and ``document_adaptive_check`` on."""
    documents = result.candidates.documents
    return (result.release is not None and documents is not None
            and result.choice.release_id in documents.params and _reading_units(result) is not None
            and result.config.document.document_adaptive_check)  # fmt: skip


def _job(result: ReleaseResult) -> tuple[str | None, Callable[[], dict]]:
    """(memo key, the computation) of the written release's figures (``adaptive_applies``)."""
    documents, release_id, units = result.candidates.documents, result.choice.release_id, _reading_units(result)
    assert documents is not None and release_id is not None and units is not None  # adaptive_applies
    changed = result.changed()
    params, seed, lineup = documents.params[release_id], result.config.sweep.seed, result.config.sweep.lineup
    cache = resolve_cache_dir(result.config.prepare.cache_dir)
    key = derived_key(result.candidates.key, "adaptive", changed_parts(changed))
    return key, partial(_figures, units, params, _columns(result.context.chunks), changed, seed, cache, lineup)


def _memo(result: ReleaseResult) -> DiskMemo:
    return DiskMemo(resolve_cache_dir(result.config.prepare.cache_dir), "adaptive_attacks")


def adaptive_in_background(result: ReleaseResult) -> InBackground | None:
    """The written release's figures started in a worker process, for ``release_adaptive``;
    None when they do not apply or are on disk. A reading under ``MIN_TEXTS`` units (the
    sample, a test) is computed here when asked for: a worker's start-up would cost more."""
    if not adaptive_applies(result):
        return None
    key, compute = _job(result)
    if key is not None and _memo(result).get(key)[0]:
        return None
    units = _reading_units(result)
    assert units is not None  # adaptive_applies
    return InBackground(compute, start=len(units[0]) >= MIN_TEXTS)


def release_adaptive(result: ReleaseResult, pending: InBackground | None = None) -> dict | None:
    """adaptive.json of the written release, or None when it does not apply
    (``adaptive_applies``); ``pending``: the figures already started by ``adaptive_in_background``."""
    if not adaptive_applies(result):
        return None
    key, compute = _job(result)
    figures = _memo(result).get_or_compute(key, compute if pending is None else pending.result)
    release_id = result.choice.release_id
    return {**figures, "release_id": release_id, "sentence": adaptive_sentence(figures)}


def adaptive_sentence(figures: dict) -> str:
    """"Against an attacker who also runs this defence on its reading: …" (one sentence)."""
    doc, chunk = figures["worst"]["document"], figures["worst"]["chunk"]
    fam = figures["families"][doc["attacker"]]
    return (f"Against an attacker who also runs this document defence on its own reading: "
            f"{attacker_name(doc['attacker'])} names {fam['documents_named']} of {fam['n_documents']} "
            f"documents ({100 * doc['accuracy']:.0f} %) and {attacker_name(chunk['attacker'])} "
            f"{100 * chunk['accuracy']:.0f} % of passages (chance {100 * fam['chance']:.0f} %).")
