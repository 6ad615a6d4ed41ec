"""The attackers of a corpus, fitted once and ready to score any release of it (SPEC §8, §12).

``build_scorers`` gives a ``ReleaseScorer`` per attacker of ``choose/attack_columns.py``'s
columns: the reading attacker when a reading is given (``measure/reading.py``), the other
families of its panel (``measure/panel_cache.py``) and the in-corpus attacker, cross-fitted on the
chunks themselves; their fits and pre-release scores are kept on disk by what they learn from.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import sklearn

from ..config.defaults import LINEUP_COMPANIES
from ..corpus import Chunk
from ..disk_memo import DiskMemo, content_key, texts_digest
from ..measure.attack import CrossFittedAttacker, TextAttacker
from ..measure.attack_scores import ReleaseScorer
from ..measure.lineups import effective_size, lineup_key
from ..measure.panel_cache import fitted_panel
from ..measure.panel_scorers import FamilyAttacker, family_scorers, pre_scores
from ..measure.pre_release_scores import text_pre_scores
from ..measure.reading import ReadingInBackground, fitted_reading
from ..models.fit_processes import FitGate, fit_processes, side_by_side
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
    fits: AttackerFits | None = None,
) -> dict[str, ReleaseScorer]:
    """Scorers of the pre-release ``chunks``: reading (when fitted attacker given), the panel's
    other ``families`` fitted on the same reading (``reading.units_``; ``embed`` embeds texts
    for the embedding family, ``vectors`` are the chunks' embeddings; ``cache_dir``: where the
    fitted panel is cached, "" the default folder, None nowhere), in-corpus. ``lineup``: the
    panel and the in-corpus attacker name a text among at most this many companies
    (``measure/lineups.py``; the reading attacker was fitted with its own; one still fitting in
    the background, ``measure.reading.ReadingInBackground``, is waited for here). ``fits``: the
    same arguments' ``attacker_fits``, perhaps started beside other work (``run_release``)."""
    if fits is None:
        fits = attacker_fits(chunks, reading, in_corpus=in_corpus, random_state=random_state,
                             families=families, embed=embed, cache_dir=cache_dir, lineup=lineup)  # fmt: skip
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
    kept = set(pre)
    scorers: dict[str, ReleaseScorer] = {}
    panel, model = fits.result()
    pre.update(_unscored(pre, texts, labels, reading, panel, model))
    if reading is not None:
        scorers[READING] = ReleaseScorer(reading, texts, labels, docs, name=READING,
                                         pre_log_proba=pre.get(READING, {}).get("log_proba"))
        if panel is not None:
            scorers.update(family_scorers(panel, texts, labels, docs, vectors=vectors, embed=embed,
                                          pre=pre))  # fmt: skip
    if model is not None:
        scorers[IN_CORPUS] = ReleaseScorer(model, texts, labels, docs, name=IN_CORPUS,
                                           pre_log_proba=pre.get(IN_CORPUS, {}).get("log_proba"))
    if key is not None and kept != set(scorers):
        memo.put(key, {name: pre_scores(s) for name, s in scorers.items()})
    return scorers


def _unscored(pre: dict, texts: list[str], labels: list[str], reading, panel, model) -> dict:
    """The pre-release scores ``pre`` lacks that are made here at once: the in-corpus
    attacker's are its out-of-fold scores, made when it was fitted (the same calls on the same
    texts: scoring them again was half a minute at 100,000 passages); the attackers that read
    words score the corpus on two cores (``measure.pre_release_scores``). The embedding family
    (a product of the vectors) is scored by its scorer."""
    out: dict[str, dict] = {}
    if model is not None and IN_CORPUS not in pre:
        out[IN_CORPUS] = {"log_proba": model.oof_}
    readers: dict[str, object] = {}
    if reading is not None and READING not in pre:
        readers[READING] = reading
    if reading is not None and panel is not None:
        for name, fam in panel.families_.items():
            if name not in pre and not fam.needs_vectors:
                readers[name] = fam if fam.whole_document else FamilyAttacker(fam, [])
    if readers:
        out.update(text_pre_scores(readers, texts, labels))
    return out


#: Chunks from which ``run_release`` starts the attackers' fits beside the rest of the
#: candidates' walk (``AttackerFits.start``). Below it the walk after the defence's scoring is
#: short and the candidates' embedding follows it on both cores: fitted beside that embedding
#: the dev corpus's cold release took 469 s against 422 (the reverted 866ac88: README, "The
#: attackers' fits beside the walk"). From it the walk's last part is minutes of one process.
FITS_BESIDE_MIN_CHUNKS = 20_000


def attacker_fits(chunks: Sequence[Chunk], reading, *, in_corpus: bool = True, random_state: int = 0,
                  families: Sequence[str] = ("word",), embed=None, cache_dir: str | None = "",
                  lineup: int | None = LINEUP_COMPANIES) -> AttackerFits:
    """The fits ``build_scorers`` needs with the same arguments (the panel's other families on
    ``reading``'s units, the in-corpus attacker on the chunks), not yet started; ``reading`` may
    still be fitting in the background (only its units are read)."""
    texts = [c.text for c in chunks]
    labels = [c.protected for c in chunks]
    docs = [c.doc_id for c in chunks]
    cache = resolve_cache_dir(cache_dir)
    others = [f for f in families if f != "word"]
    units: tuple[list[str], list[str], list[str]] | None = getattr(reading, "units_", None)
    fit_panel = None
    if reading is not None and others and units is not None:
        read_texts, read_labels, read_docs = units
        fit_panel = functools.partial(fitted_panel, read_texts, read_labels, read_docs, others,
                                      embed=embed, cache_dir=cache, random_state=random_state,
                                      lineup=lineup)  # fmt: skip
    fit_corpus = (functools.partial(in_corpus_attacker, texts, labels, docs, random_state, cache, lineup)
                  if in_corpus else None)  # fmt: skip
    n_texts = max(len(units[0]) if units is not None else 0, len(texts))
    return AttackerFits(fit_panel, fit_corpus, n_texts)


class AttackerFits:
    """The attacker panel's fit and the in-corpus attacker's, run side by side in one pool of
    fit workers (``models.fit_processes.side_by_side``: the panel's character fit holds one core
    for minutes, the in-corpus folds fill the other). ``result()`` gives (panel, in-corpus
    attacker), either None when not asked for. ``start()`` begins them in a thread while this
    one goes on (the thread only waits for the worker processes): ``run_release`` starts them
    once the document defence's scoring workers are done, and the walk's last part (the levels
    applied and measured, the table's rows: minutes of one process at 100,000 passages) runs
    beside them (issue 21). Below ``fit_processes``' size the fits would run in that thread
    under the interpreter lock, so ``start`` does nothing and ``result`` computes them: the
    same fits either way (every fit is the serial fit's bits, in a worker or here)."""

    def __init__(self, fit_panel, fit_corpus, n_texts: int) -> None:
        self.fit_panel, self.fit_corpus, self.n_texts = fit_panel, fit_corpus, n_texts
        self._pool: ThreadPoolExecutor | None = None
        self._future: Future | None = None
        self._gate: FitGate | None = None

    @property
    def started(self) -> bool:
        return self._future is not None

    def prepare(self) -> None:
        """Begin the fits in a thread held at their first submission to the workers
        (``fit_processes.FitGate``): their keys, cache reads and calls are made now, while
        this process waits for other workers (``run_release``: the document defence's
        scoring); ``start()`` lets them go. Nothing when ``start`` would do nothing."""
        self._begin(FitGate())

    def start(self) -> None:
        """Begin the fits in a thread (once; nothing when there is nothing to fit or the fits
        would not run in worker processes), or let prepared ones go."""
        if self._gate is not None:
            self._gate.open()
            return
        self._begin(None)

    def _begin(self, gate: FitGate | None) -> None:
        if self._future is not None or (self.fit_panel is None and self.fit_corpus is None):
            return
        if fit_processes(self.n_texts, 2) < 2:
            return
        self._gate = gate
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="attacker-fits")
        self._future = self._pool.submit(contextvars.copy_context().run, side_by_side,
                                         self.fit_panel, self.fit_corpus, gate)  # fmt: skip

    def result(self) -> tuple:
        """(fitted panel or None, in-corpus attacker or None): the started fits waited for, else
        computed here."""
        if self._future is None:
            return side_by_side(self.fit_panel, self.fit_corpus)
        if self._gate is not None:
            self._gate.open()  # prepared and never let go (the walk did not run): now
        try:
            return self._future.result()
        finally:
            self.close()

    def close(self) -> None:
        """Wait for started fits to end (a caller that stops early: their workers end too;
        fits still held at their gate are let go without running)."""
        if self._gate is not None and not self._gate.is_open:
            self._gate.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


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
