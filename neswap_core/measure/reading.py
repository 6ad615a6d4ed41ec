"""The reading attacker's training texts (SPEC §8): other texts of the same companies.

The reading (``text.loading.load_attacker``: the corpus's ``attacker/`` folder, or an upload)
goes through the same cleaning as the corpus — presentation extraction, then direct-identifier
suppression with the corpus's aliases (company names, aliases, tickers, domains →
``[Company Name]``/``[URL]``) and executive names (→ ``[Executive #]``) — so the attacker learns
quasi-identifiers only, never the names the corpus no longer shows.

Decisions where SPEC is silent:
* **Executives**: a company's executives are the same people from one quarter to the next, so
  every executive listed for a ticker in the corpus (any quarter) is suppressed in the reading
  of that ticker, besides those listed for the reading's own calls.
* **Training units**: the corpus is cut by the embedding-based breakpoint chunker; running that
  chunker on the reading (~17k sentences on the dev corpus) would cost minutes of embedding, so
  the reading is cut into consecutive windows of ``k`` sentences with ``k`` = the corpus's mean
  number of sentences per chunk (rounded, at least 1): passages of the same size as the chunks
  the attacker will be asked about, at the cost of a sentence split only.
* **Cache**: with a ``cache_dir`` the fitted attacker (its units included) is kept on disk under
  a hash of everything it reads (the reading with the corpus's executives, the unit size, C,
  the seed, the scikit-learn and neswap versions): a warm re-run of a release reads it back
  instead of cleaning the reading again (NER over ~5k passages) and refitting (47 s on dev).
  Its arrays are read back memory-mapped (``mapped_pickle``), in the run that fits it too.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from .. import mapped_pickle
from ..config.defaults import LINEUP_COMPANIES
from ..corpus import Chunk, Corpus
from ..models.fit_processes import MIN_TEXTS, InBackground
from ..paths import resolve_cache_dir
from ..text.lazy_ner import LazyNer
from .attack import DEFAULT_C, TextAttacker, text_attacker
from .lineups import effective_size, lineup_key
from .reading_units import (  # noqa: F401  (the reading's units, light on imports)
    READING_NER_MODEL,
    reading_units,
    sentence_windows,
    sentences_per_chunk,
    with_company_executives,
)


def reading_to_tag(reading: Corpus | None, corpus: Corpus, cache_dir: str | Path | None,
                   model: str) -> Corpus | None:
    """What ``reading_units`` will clean, for ``prepare(tag_ahead=...)`` to tag in its lanes;
    None without a reading, a cache folder, or when prepare's NER ``model`` is not the reading's,
    or when the cleaning is kept already (a warm run must not pay for it)."""
    from ..prepare.pipeline import is_cleaned

    if reading is None or resolve_cache_dir(cache_dir) is None or model != READING_NER_MODEL:
        return None
    reading = with_company_executives(reading, corpus)
    return None if is_cleaned(reading, LazyNer(READING_NER_MODEL), cache_dir) else reading


def reading_attacker(
    reading: Corpus,
    chunks: Sequence[Chunk],
    corpus: Corpus | None = None,
    *,
    C: float = DEFAULT_C,
    random_state: int | None = 0,
    cache_dir: str | Path | None = None,
    lineup: int | None = LINEUP_COMPANIES,
    background: bool = False,
) -> TextAttacker | ReadingInBackground:
    """Fit the reading attacker on the reading cut into passages the size of ``chunks``.

    Companies of the corpus missing from the reading can never be named by it (their chunks
    count as wrong); ``missing_companies`` lists them so the caller can say so. ``units_``
    keeps the (texts, labels, doc ids) it was fitted on, for the other families of the attacker
    panel (``choose/scorers.build_scorers``). ``cache_dir``: kept on disk (module
    docstring). ``lineup``: with more companies, one model per line-up of at most this many
    (``measure/lineups.py``). ``background``: return at once with the units, the fit running
    in a worker process (``ReadingInBackground``; ``fitted_reading`` waits for it).
    """
    size = sentences_per_chunk(chunks)
    lineup = effective_size(len({reading.protected_value(d) for d in reading.documents}), lineup)
    path = _cache_path(cache_dir, with_company_executives(reading, corpus), size, C, random_state, lineup)
    if path is not None and path.is_file():
        kept = _kept(path)
        if kept is not None:
            return kept
    units = reading_units(reading, size, corpus, cache_dir)
    fit = partial(_fitted, units, size, lineup, C, random_state, path)
    if background:
        pending = InBackground(partial(_kept_only, fit, path), start=len(units[0]) >= MIN_TEXTS)
        return ReadingInBackground(units, size, pending, fit, path)
    attacker = _read_back(fit(), path)
    mapped_pickle.give_back_freed_memory()
    return attacker


def _kept_only(fit, path: Path | None) -> TextAttacker | None:
    """``fit()`` in a worker: None once it is kept at ``path`` (this process reads it back
    mapped instead of receiving a copy through the pipe), else the attacker itself."""
    attacker = fit()
    return None if path is not None and path.is_file() else attacker


def _kept(path: Path) -> TextAttacker | None:
    """The attacker kept at ``path``, its arrays memory-mapped; None when it cannot be read (a
    damaged or outdated file is refitted)."""
    try:
        return mapped_pickle.load(path)
    except (OSError, ValueError, pickle.UnpicklingError, EOFError, AttributeError):
        return None


def _read_back(attacker: TextAttacker, path: Path | None) -> TextAttacker:
    """``attacker`` as a warm run reads it (arrays mapped from ``path``: the page cache's, not
    this process's own memory; issue 21), or itself when it was not kept."""
    kept = None if path is None else _kept(path)
    if kept is None:
        return attacker
    del attacker  # the caller's copy goes with its call: its pages are given back then
    return kept


def _fitted(units: tuple[list[str], list[str], list[str]], size: int, lineup: int | None, C: float,
            random_state: int | None, path: Path | None) -> TextAttacker:
    """The reading attacker fitted on ``units``, kept at ``path`` (``reading_attacker``)."""
    texts, labels, ids = units
    attacker = text_attacker(texts, labels, lineup=lineup, C=C, random_state=random_state)
    attacker.unit_sentences_ = size
    attacker.n_units_ = len(texts)
    attacker.units_ = (texts, labels, ids)  # the panel and the document defence fit on them
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            mapped_pickle.dump(attacker, path)  # atomic: a temporary file, then a rename
        except OSError:
            pass  # a full or read-only disk: nothing is kept, the run goes on
    return attacker


class ReadingInBackground:
    """A reading attacker being fitted in a worker process (issue 21): its training units are
    known at once, and what needs only them (the sweep's walk, the document defence's defender)
    runs meanwhile; ``fitted()`` waits for the attacker, the same bits as fitted here (below
    ``MIN_TEXTS`` units it is fitted here when asked for)."""

    def __init__(self, units: tuple[list[str], list[str], list[str]], size: int, pending: InBackground,
                 fit=None, path: Path | None = None):
        self.units_, self.unit_sentences_, self.n_units_ = units, size, len(units[0])
        self._pending = pending
        self._fit, self._path = fit, path  # kept at ``path`` by the worker: read back mapped
        self._attacker: TextAttacker | None = None

    def fitted(self) -> TextAttacker:
        if self._attacker is None:
            done = self._pending.result()
            if done is None:  # kept by the worker; else (a cache cleared meanwhile) fitted here
                assert self._path is not None and self._fit is not None
                done = _kept(self._path)
                done = _read_back(self._fit(), self._path) if done is None else done
            else:
                done = _read_back(done, self._path)
            self._attacker = done
            mapped_pickle.give_back_freed_memory()
        assert self._attacker is not None
        return self._attacker


def fitted_reading(reading):
    """The fitted reading attacker of ``reading`` (a ``ReadingInBackground`` waited for; an
    attacker or None as it is)."""
    return reading.fitted() if isinstance(reading, ReadingInBackground) else reading


#: Bump when the reading's cleaning or units change meaning, or the file's layout (2: a
#: ``mapped_pickle``), so old cache files are not read.
READING_CACHE_FORMAT = 2


def _cache_path(cache_dir, reading: Corpus, size: int, C: float, random_state,
                lineup: int | None = None) -> Path | None:
    """The cache file of a reading attacker (module docstring), or None without ``cache_dir``."""
    if cache_dir is None:
        return None
    import sklearn

    from ..version import __version__

    key = (READING_CACHE_FORMAT, __version__, sklearn.__version__, size, C, random_state)
    h = hashlib.sha256(repr(key if lineup is None else (*key, lineup_key(lineup))).encode())
    # by content: the pickle of equal readings differs with how their strings are shared (a
    # freshly parsed reading and the same one read back from a memo), which refitted the attacker
    h.update(repr(reading).encode("utf-8", "surrogatepass"))
    return Path(cache_dir) / "reading" / f"attacker_{h.hexdigest()[:24]}.pkl"


def missing_companies(attacker: TextAttacker, chunks: Sequence[Chunk]) -> list[str]:
    """Companies of the corpus the reading attacker has never read."""
    return sorted({c.protected for c in chunks} - set(attacker.classes_))
