"""The attackers of a corpus, fitted once and ready to score any release of it (SPEC §8, §12).

``build_scorers`` gives a ``ReleaseScorer`` per attacker of ``choose/attack_columns.py``'s
columns: the reading attacker when a reading is given (``measure/reading.py``), the other
families of its panel (``measure/panel_cache.py``) and the in-corpus attacker, cross-fitted on the
chunks themselves; their fits and pre-release scores are kept on disk by what they learn from.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sklearn

from ..config.defaults import LINEUP_COMPANIES
from ..corpus import Chunk
from ..disk_memo import DiskMemo, content_key, texts_digest
from ..measure.attack import CrossFittedAttacker, TextAttacker
from ..measure.attack_scores import ReleaseScorer
from ..measure.lineups import effective_size, lineup_key
from ..measure.panel_cache import fitted_panel
from ..measure.panel_scorers import family_scorers, pre_scores
from ..measure.reading import ReadingInBackground, fitted_reading
from ..models.fit_processes import side_by_side
from ..paths import resolve_cache_dir
from .attack_columns import IN_CORPUS, READING


def build_scorers(
    chunks: Sequence[Chunk],
    reading: TextAttacker | ReadingInBackground | None = None,
    *,
    in_corpus: bool = True,
    random_state: int = 0,
    families: Sequence[str] = ("word",),
    embed=None,
    vectors: np.ndarray | None = None,
    cache_dir: str | None = "",
    lineup: int | None = LINEUP_COMPANIES,
) -> dict[str, ReleaseScorer]:
    """Scorers of the pre-release ``chunks``: reading (when fitted attacker given), the panel's
    other ``families`` fitted on the same reading (``reading.units_``; ``embed`` embeds texts
    for the embedding family, ``vectors`` are the chunks' embeddings; ``cache_dir``: where the
    fitted panel is cached, "" the default folder, None nowhere), in-corpus. ``lineup``: the
    panel and the in-corpus attacker name a text among at most this many companies
    (``measure/lineups.py``; the reading attacker was fitted with its own; one still fitting in
    the background, ``measure.reading.ReadingInBackground``, is waited for here)."""
    reading = fitted_reading(reading)
    texts = [c.text for c in chunks]
    labels = [c.protected for c in chunks]
    docs = [c.doc_id for c in chunks]
    cache = resolve_cache_dir(cache_dir)
    key = pre_scores_key(texts, labels, docs, reading, in_corpus=in_corpus, random_state=random_state,
                         families=families, vectors=vectors, lineup=lineup)  # fmt: skip
    memo = DiskMemo(cache, "pre_release_scores", mapped=True)  # read once, then copied by block
    pre = memo.get(key)[1] if key is not None else None
    pre = pre if isinstance(pre, dict) else {}
    scorers: dict[str, ReleaseScorer] = {}
    others = [f for f in families if f != "word"]
    units: tuple[list[str], list[str], list[str]] | None = getattr(reading, "units_", None)
    # the panel's char fit holds one core for minutes: the in-corpus folds fill the other
    panel, model = side_by_side(*_fits(texts, labels, docs, units if reading is not None else None,
                                       in_corpus=in_corpus, random_state=random_state,
                                       families=others, embed=embed, cache=cache, lineup=lineup))  # fmt: skip
    if reading is not None:
        scorers[READING] = ReleaseScorer(reading, texts, labels, docs, name=READING,
                                         pre_log_proba=pre.get(READING, {}).get("log_proba"))
        if panel is not None:
            scorers.update(family_scorers(panel, texts, labels, docs, vectors=vectors, embed=embed,
                                          pre=pre))  # fmt: skip
    if model is not None:
        scorers[IN_CORPUS] = ReleaseScorer(model, texts, labels, docs, name=IN_CORPUS,
                                           pre_log_proba=pre.get(IN_CORPUS, {}).get("log_proba"))
    if key is not None and set(pre) != set(scorers):
        memo.put(key, {name: pre_scores(s) for name, s in scorers.items()})
    return scorers


def _fits(texts, labels, docs, units, *, in_corpus: bool, random_state: int, families: Sequence[str],
          embed, cache, lineup) -> tuple[Callable | None, Callable | None]:
    """(the panel's fit, the in-corpus attacker's fit) of ``build_scorers``: the panel's
    ``families`` (the word one excepted: it is the reading attacker) on the reading ``units``,
    the in-corpus attacker on the chunks; None where there is nothing to fit."""
    fit_panel = None
    if units is not None and families:
        read_texts, read_labels, read_docs = units
        fit_panel = functools.partial(fitted_panel, read_texts, read_labels, read_docs, list(families),
                                      embed=embed, cache_dir=cache, random_state=random_state,
                                      lineup=lineup)  # fmt: skip
    fit_corpus = (functools.partial(in_corpus_attacker, texts, labels, docs, random_state, cache, lineup)
                  if in_corpus else None)  # fmt: skip
    return fit_panel, fit_corpus


#: Passages from which ``run_release`` fits the attackers ahead (``fit_attackers_ahead``): the
#: corpora whose candidates it walks first (``choose.candidates.PREFETCH_MIN_CHUNKS``).
AHEAD_MIN_CHUNKS = 1_000
#: And up to which: the fits' processes add their memory to the walk's instead of following it
#: (summed over the run's processes: 2.52 -> 3.21 GB at 10,000 passages, 3.49 -> 4.56 at 30,000;
#: one worker instead of two saved only 0.24 of it and cost 30 s). Read linearly, past about
#: 70,000 passages that sum would leave the 8 GB the sweep is allowed at 100,000 (issue 21),
#: which it keeps without them (about 6.9 GB, read alike); 50,000 keeps a margin.
AHEAD_MAX_CHUNKS = 50_000
#: Niceness of the process that fits them ahead: the walk, which the release waits for first,
#: keeps its cores whenever it needs them, and the fits take what it leaves.
AHEAD_NICE = 10


@dataclass(eq=False)
class AttackersAhead:
    """The attackers' fits running in a process of their own (``fit_attackers_ahead``)."""

    process: multiprocessing.process.BaseProcess

    def wait(self) -> bool:
        """Wait for the fits; whether they were all kept (exit code 0). Either way
        ``build_scorers`` gives the same scorers: what was not kept it fits itself."""
        self.process.join()
        return self.process.exitcode == 0

    def stop(self) -> None:
        """The release was interrupted: end the fits now (their cache entries are written
        whole or not at all)."""
        self.process.terminate()
        self.process.join(5)


def fit_attackers_ahead(chunks: Sequence[Chunk], reading, *, random_state: int = 0,
                        families: Sequence[str] = ("word",), embed=None, cache_dir: str | None = "",
                        lineup: int | None = LINEUP_COMPANIES,
                        min_chunks: int | None = None, max_chunks: int | None = None) -> AttackersAhead | None:
    """Start fitting, in a spawned process, what ``build_scorers`` (same arguments) fits — the
    panel's families on the reading units and the in-corpus attacker — into their disk caches,
    so that ``build_scorers`` called later reads them back (issue 21).

    A release's walk through its candidates (``choose.prefetch``) runs its terms, pairing,
    levels and measures in one process, leaving a core idle for minutes (at 30,000 passages
    about 156 of its 407 s), and the attackers need none of it. Fitted in a thread of the same
    process they slowed the walk by more than they saved (both are Python, one interpreter
    lock: the 10k run took 242 s against 211); a process of its own, at a lower priority, takes
    only the cores the walk leaves. Not started (None) without a cache folder, below
    ``min_chunks`` passages (default ``AHEAD_MIN_CHUNKS``) or above ``max_chunks``
    (``AHEAD_MAX_CHUNKS``: the memory the fits would add beside the walk's), with fewer than two
    CPUs, or when the embedding family's model could not be loaded by another process (a model
    handed in)."""
    from ..models.embedding_pool import poolable

    cache = resolve_cache_dir(cache_dir)
    low = AHEAD_MIN_CHUNKS if min_chunks is None else min_chunks
    high = AHEAD_MAX_CHUNKS if max_chunks is None else max_chunks
    if cache is None or not low <= len(chunks) <= high:
        return None
    if (os.cpu_count() or 1) < 2 or multiprocessing.current_process().daemon:
        return None
    units = getattr(reading, "units_", None)
    others = [f for f in families if f != "word"] if units is not None else []
    embedder = getattr(embed, "__self__", None)
    spec = None
    if "embedding" in others and embed is not None:
        if not poolable(embedder):
            return None
        spec = (embedder.model_name, str(embedder.cache_dir), embedder.batch_size, embedder.backend)
    texts = [c.text for c in chunks]
    labels = [c.protected for c in chunks]
    docs = [c.doc_id for c in chunks]
    process = multiprocessing.get_context("spawn").Process(
        target=_fit_ahead, name="neswap-attackers", daemon=False,
        args=(texts, labels, docs, units, random_state, others, spec, str(cache), lineup))  # fmt: skip
    try:
        process.start()
    except (OSError, RuntimeError):
        return None  # e.g. a script without a ``__main__`` guard: build_scorers fits them
    return AttackersAhead(process)


def _fit_ahead(texts, labels, docs, units, random_state, families, spec, cache, lineup) -> None:
    """The process of ``fit_attackers_ahead``: ``build_scorers``' fits, kept in ``cache``."""
    from ..models.embedding import Embedder

    try:
        os.nice(AHEAD_NICE)
    except OSError:
        pass
    embed = None
    if spec is not None:
        name, folder, batch_size, backend = spec
        embed = Embedder(name, folder, batch_size=batch_size, backend=backend).encode
    side_by_side(*_fits(texts, labels, docs, units, in_corpus=True, random_state=random_state,
                        families=families, embed=embed, cache=Path(cache), lineup=lineup))  # fmt: skip


def pre_scores_key(texts, labels, docs, reading, *, in_corpus: bool, random_state: int,
                   families: Sequence[str], vectors, lineup: int | None = None) -> str | None:
    """Key of the attackers' pre-release scores of a corpus (``build_scorers``): what each
    attacker is fitted on and with, and the texts it scores. None (not kept) when the reading
    attacker does not carry its units, or the embedding family would embed without ``vectors``
    (the key cannot name the model then)."""
    units = getattr(reading, "units_", None)
    if reading is not None and units is None:
        return None
    if reading is not None and "embedding" in families and vectors is None:
        return None
    settings = {} if reading is None else {k: repr(v) for k, v in vars(reading).items() if not k.endswith("_")}
    size = effective_size(len(set(labels)), lineup)  # None when one line-up holds them all
    return content_key(
        "pre_release_scores", type(reading).__name__, settings, *([] if size is None else [lineup_key(size)]),
        [texts_digest(map(str, u)) for u in units] if units is not None else None,
        sorted(families), in_corpus, random_state, texts_digest(texts), texts_digest(labels),
        texts_digest(docs), None if vectors is None else np.ascontiguousarray(vectors),
        sklearn.__version__)  # fmt: skip


def in_corpus_attacker(texts: Sequence[str], labels: Sequence[str], docs: Sequence[str],
                       random_state: int, cache_dir, lineup: int | None = None) -> CrossFittedAttacker:
    """The in-corpus attacker cross-fitted on the chunks (SPEC §8; with line-ups of at most
    ``lineup`` companies), kept on disk by a hash of what it learns from (``disk_memo``,
    its arrays read back memory-mapped; ``cache_dir`` None: fitted every time)."""
    size = effective_size(len(set(labels)), lineup)
    key = content_key("in_corpus", texts_digest(texts), texts_digest(labels), texts_digest(docs),
                      random_state, sklearn.__version__, *([] if size is None else [lineup_key(size)]))  # fmt: skip
    # mapped: its arrays (1.3 of its 2.5 GB at 100,000 passages) are the page cache's, not this
    # process's own memory, in a cold run as in a warm one (issue 21)
    return DiskMemo(cache_dir, "in_corpus_attackers", mapped=True).get_or_compute(
        key, lambda: CrossFittedAttacker(random_state=random_state, lineup=size).fit(texts, labels, docs))
