"""The NER pipeline of ``entities.load_ner``, loaded only when a text must really be tagged.

Importing spaCy costs ~1.5 s (loading the small English pipeline another 0.3 s), and a run
whose entities are all in the cache (``text.entity_cache``) never needs it: the cache is keyed
by the pipeline's fingerprint, which only needs the package's ``meta.json`` and the pipe names
``load_ner`` will produce. ``LazyNer`` answers those from the package without importing spaCy
and loads the real pipeline on first use of anything else (``pipe``, ``get_pipe``, ...). Issue
14: the warm run skips the import, and the forked preprocessing workers import spaCy side by side
instead of after one another.

Once loaded, every answer comes from the loaded pipeline (a gazetteer added later changes the
fingerprint as it must). ``tests/test_lazy_ner.py`` checks that the unloaded answers equal the
loaded ones for the packaged pipelines.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from ..config import DEFAULT_SPACY_MODEL
from .entities import EXCLUDED_PIPES, PLACEHOLDER_PIPE


def package_meta(model: str) -> dict | None:
    """The ``meta.json`` of an installed pipeline package or pipeline folder, or None."""
    folder = Path(model)
    if not (folder / "meta.json").is_file():
        try:
            spec = importlib.util.find_spec(model)
        except (ImportError, ValueError):
            return None
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            return None
        folder = Path(locations[0])
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and isinstance(meta.get("pipeline"), list) else None


class LazyNer:
    """Stands in for ``load_ner(model)`` (no gazetteer) until the pipeline is needed."""

    def __init__(self, model: str = DEFAULT_SPACY_MODEL) -> None:
        self.model = model
        self._nlp: Any = None
        self._meta = package_meta(model)

    @property
    def is_loaded(self) -> bool:
        return self._nlp is not None

    def loaded(self) -> Any:
        """The real spaCy pipeline (imported and loaded now if not yet)."""
        if self._nlp is None:
            from .entities import load_ner

            self._nlp = load_ner(self.model)
        return self._nlp

    @property
    def meta(self) -> dict:
        return self._meta if self._nlp is None and self._meta is not None else self.loaded().meta

    @property
    def pipe_names(self) -> list[str]:
        if self._nlp is not None or self._meta is None:
            return list(self.loaded().pipe_names)
        names = [p for p in self._meta["pipeline"] if p not in EXCLUDED_PIPES]
        if "ner" not in names:
            return list(self.loaded().pipe_names)  # load_ner says what is wrong
        names.insert(names.index("ner"), PLACEHOLDER_PIPE)
        return names

    def __call__(self, text: str) -> Any:
        return self.loaded()(text)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.loaded(), name)
