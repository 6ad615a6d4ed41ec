"""The AppTests' workspace: a fresh folder (NESWAP_WORKSPACE) seeded with small settings, so
the process-wide pipeline caches make only the first test pay for NER, the mixture and the sweep."""

from __future__ import annotations

from pathlib import Path

from neswap_core.workspace.store import Workspace

#: K = 5, 10 swaps, one restart: the small settings most page tests share.
SMALL = {"max_swaps": 10, "n_components": 5, "n_init": 1}


def small_workspace(tmp_path: Path, monkeypatch, **settings) -> Workspace:
    """A new workspace under ``tmp_path`` that the app will open, with ``SMALL`` | ``settings``."""
    folder = tmp_path / "workspace"
    monkeypatch.setenv("NESWAP_WORKSPACE", str(folder))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    ws = Workspace.open(folder)
    ws.update_settings({**SMALL, **settings})
    return ws
