"""The AppTests' workspace: a fresh folder (NESWAP_WORKSPACE) seeded with small settings, so
the process-wide pipeline caches make only the first test pay for NER, the mixture and the sweep."""

from __future__ import annotations

from pathlib import Path

from neswap_core.workspace.store import Workspace

#: K = 5, 10 swaps, one restart: the small settings most page tests share; no default goal
#: and no document defence (the app's choice on the frontier is the trade-off line's, and the
#: page tests are about the pages: the verdict, goal and document tests set them themselves).
SMALL = {"max_swaps": 10, "n_components": 5, "n_init": 1, "max_document_accuracy": 1.0,
         "document_levels": []}


def small_workspace(tmp_path: Path, monkeypatch, **settings) -> Workspace:
    """A new workspace under ``tmp_path`` that the app will open, with ``SMALL`` | ``settings``."""
    folder = tmp_path / "workspace"
    monkeypatch.setenv("NESWAP_WORKSPACE", str(folder))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    ws = Workspace.open(folder)
    ws.update_settings({**SMALL, **settings})
    return ws
