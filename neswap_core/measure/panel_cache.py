"""The attacker panel fitted once per reading (SPEC §12): cached on disk by what it learns from.

The key is a SHA-256 of the families, the random state, the scikit-learn version and every
training unit (text, company, document), so a changed reading, a changed unit size (the corpus's
chunks) or another family list fits again, and nothing else does. The char family's LR is the
slow fit (about 30 s on the dev reading, a minute on a loaded machine); a cached panel loads in
well under a second. The file is a pickle written by this process (never loaded from elsewhere),
its arrays out of band and read back memory-mapped (``mapped_pickle``: the page cache's pages, not
the process's own memory; 1.3 GB at 100,000 passages, issue 21); an unreadable one is refitted
and replaced.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .. import mapped_pickle
from ..models.embedding_pool import encode_in_processes
from .lineups import effective_size, lineup_key
from .panel import AttackerPanel

PANEL_FOLDER = "attacker_panels"
#: The cache file's layout (2: ``mapped_pickle``); in the key, so an older file is never read.
PANEL_FORMAT = 2


def panel_key(texts: Sequence[str], labels: Sequence[str], doc_ids: Sequence[str],
              families: Sequence[str], random_state: int, lineup: int | None = None) -> str:
    """SHA-256 of everything the fitted panel depends on (module docstring)."""
    import sklearn

    h = hashlib.sha256()
    head = {"families": list(families), "random_state": random_state,
            "sklearn": sklearn.__version__, "n": len(texts), "format": PANEL_FORMAT}
    size = effective_size(len(set(labels)), lineup)
    if size is not None:  # a reading that fits one line-up keeps its key
        head["lineup"] = lineup_key(size)
    h.update(json.dumps(head).encode())
    for t, y, d in zip(texts, labels, doc_ids, strict=True):
        for part in (t, y, d):
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
    return h.hexdigest()


def fitted_panel(texts: Sequence[str], labels: Sequence[str], doc_ids: Sequence[str],
                 families: Sequence[str], *, embed: Callable[[list[str]], np.ndarray] | None = None,
                 cache_dir: str | Path | None = None, random_state: int = 0,
                 lineup: int | None = None) -> AttackerPanel:
    """The panel of ``families`` fitted on the reading units, from ``cache_dir`` when there.

    ``embed`` embeds the reading for the embedding family (left out without it). The fitted
    panel carries ``loaded_from_cache_`` and ``cache_seconds_`` (load or fit time)."""
    texts, labels, doc_ids = [str(t) for t in texts], [str(v) for v in labels], [str(d) for d in doc_ids]
    families = [f for f in families if f != "embedding" or embed is not None]
    start = time.perf_counter()
    path = None
    if cache_dir is not None:
        key = panel_key(texts, labels, doc_ids, families, random_state, lineup)
        path = Path(cache_dir) / PANEL_FOLDER / f"{key}.pkl"
        if path.is_file():
            try:
                panel = mapped_pickle.load(path)
                panel.loaded_from_cache_, panel.cache_seconds_ = True, time.perf_counter() - start
                return panel
            except Exception:  # noqa: BLE001 - a damaged cache file is refitted and replaced
                path.unlink(missing_ok=True)
    vectors = (np.asarray(encode_in_processes(embed, texts), np.float32)
               if "embedding" in families and embed else None)  # fmt: skip
    panel = AttackerPanel(families, random_state=random_state,
                          lineup=effective_size(len(set(labels)), lineup)).fit(texts, labels, doc_ids, vectors)
    panel.loaded_from_cache_, panel.cache_seconds_ = False, time.perf_counter() - start
    if path is None:
        return panel
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mapped_pickle.dump(panel, path)  # atomic: a temporary file, then a rename
        kept = mapped_pickle.load(path)
    except OSError:  # a full or read-only disk: this run goes on with the fitted panel
        return panel
    kept.loaded_from_cache_, kept.cache_seconds_ = False, panel.cache_seconds_
    del panel, vectors
    mapped_pickle.give_back_freed_memory()
    return kept  # its arrays mapped, as a warm run reads them (the fitted copy is let go)
