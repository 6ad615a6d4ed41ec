"""The analyst's workspace (SQLite, neswap_core.store) and the settings read from it.

Settings live in the workspace, not in ``st.session_state``, so a reload or a second tab sees
the same corpus choice, roles, corrections, fits and decisions.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import streamlit as st

from neswap_core.config import RunConfig
from neswap_core.store import Workspace, WorkspaceError, default_workspace_folder

#: Settings keys the app stores, with their defaults (RunConfig is the source of the values).
_DEFAULTS = RunConfig()
DEFAULT_SETTINGS: dict[str, Any] = {
    "corpus_source": "sample",  # "sample" or "upload:<sha>"
    "protect": _DEFAULTS.protect,
    "threshold": _DEFAULTS.threshold,
    "roles": dict(_DEFAULTS.roles),
    "family": _DEFAULTS.family,
    "n_components": _DEFAULTS.n_components,
    "min_weight": _DEFAULTS.min_weight,
    "mixture_seed": _DEFAULTS.mixture_seed,
    "n_init": _DEFAULTS.n_init,
    "max_iter": _DEFAULTS.max_iter,
    "combination_size": _DEFAULTS.combination_size,
    "max_swaps": _DEFAULTS.max_swaps,
    "draws": _DEFAULTS.draws,
    "require": _DEFAULTS.require,
    "seed": _DEFAULTS.seed,
    "population": _DEFAULTS.population,
    "trade_off_a": _DEFAULTS.trade_off_a,
    "trade_off_c": _DEFAULTS.trade_off_c,
}


def workspace_folder() -> Path:
    """``$NESWAP_WORKSPACE`` or ``./workspace``."""
    return default_workspace_folder(os.environ)


def open_workspace() -> Workspace | None:
    """The workspace, or None after showing what is wrong and a 'Start fresh' button."""
    folder = workspace_folder()
    try:
        return Workspace.open(folder)
    except WorkspaceError as exc:
        st.error(f"The workspace cannot be opened. {exc}")
        if st.button("Start fresh", type="primary", key="ws_reset"):
            ws = Workspace.reset(folder)
            st.success(f"Started a new workspace. The old file was kept at {ws.moved_aside}.")
            st.rerun()
        return None


def settings(ws: Workspace) -> dict[str, Any]:
    """All settings with defaults filled in (one read per script run)."""
    stored = ws.settings()
    out = {**DEFAULT_SETTINGS, **stored}
    out["roles"] = {**DEFAULT_SETTINGS["roles"], **stored.get("roles", {})}
    return out


def run_config(values: dict[str, Any], corpus: str = "data/sample") -> RunConfig:
    """The RunConfig equivalent to the app's settings (what the Export page writes as run.toml)."""
    fields = set(asdict(RunConfig()))
    kwargs = {k: v for k, v in values.items() if k in fields}
    return RunConfig(corpus=corpus, **kwargs)


def current():
    """The workspace's Stage (settings + lazily cached pipeline), or stop the page with advice."""
    from .pipeline import Stage

    ws = open_workspace()
    if ws is None:
        st.stop()
    return Stage(settings(ws), ws)


def save_settings(ws: Workspace, **values: Any) -> None:
    """Store changed settings in one transaction (only the ones that differ)."""
    current_values = ws.settings()
    changed = {k: v for k, v in values.items() if current_values.get(k, DEFAULT_SETTINGS.get(k)) != v}
    if changed:
        ws.update_settings(changed)


def settings_summary() -> None:
    """Sidebar: workspace location and the current corpus/role/cluster settings in brief."""
    ws = open_workspace()
    if ws is None:
        return
    s = settings(ws)
    source = "bundled sample (10 earnings calls)" if s["corpus_source"] == "sample" else "uploaded files"
    swapped = ", ".join(c for c, r in s["roles"].items() if r == "S") or "none"
    st.caption(
        f"Corpus: {source} · protecting **{s['protect']}**  \n"
        f"Swap-eligible: {swapped}  \n"
        f"Mixture: {s['family'].upper()}, K = {s['n_components']}, ε = {s['min_weight']:g}  \n"
        f"Workspace: `{ws.folder}`"
    )
