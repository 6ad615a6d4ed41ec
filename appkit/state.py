"""The analyst's workspace (SQLite, neswap_core.workspace.store) and the settings read from it.

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
from neswap_core.workspace.store import Workspace, WorkspaceError, default_workspace_folder

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


def corpus_fingerprint(values: dict[str, Any]) -> str:
    """What a pinned release belongs to: the corpus (content key) and the column protected."""
    return f"{values['corpus_source']}|{values['protect']}"


def settings(ws: Workspace) -> dict[str, Any]:
    """All settings with defaults filled in (one read per script run).

    ``chosen_release`` is the release pinned *for this corpus*: a release pinned on another
    corpus (or another protected column) reads as None, so a new upload never inherits it.
    """
    stored = ws.settings()
    out = Settings({**DEFAULT_SETTINGS, **stored})
    out["roles"] = {**DEFAULT_SETTINGS["roles"], **stored.get("roles", {})}
    if stored.get(PINNED_FOR) != corpus_fingerprint(out):
        out["chosen_release"] = None
    if "trade_off_c" not in stored:
        del out["trade_off_c"]  # resolved on first use: see Settings
    return out


class Settings(dict):
    """The settings of one script run. Until the analyst sets the trade-off line, reading
    ``trade_off_c`` asks ``resolve`` (the Stage's default offset, computed from the releases
    and then stored), so the first run of every page already uses the default line."""

    resolve = None

    def __missing__(self, key: str) -> Any:
        if key == "trade_off_c":
            value = self.resolve() if self.resolve is not None else DEFAULT_SETTINGS[key]
            self[key] = value
            return value
        raise KeyError(key)


#: Setting that records which corpus the pinned release belongs to.
PINNED_FOR = "chosen_release_corpus"


def run_config(
    values: dict[str, Any], corpus: str = "data/sample", corrections: list | None = None,
    **pinned: Any,
) -> RunConfig:
    """The RunConfig equivalent to the app's settings (what the Export page writes as run.toml),
    with the analyst's entity corrections (``EntityCorrection`` objects) in order and, in
    ``pinned``, the review and the chosen release (``decisions``, ``release``, ``release_plan``,
    ``release_stage``: views_export.Export.run_config)."""
    from neswap_core.text.entities import correction_to_dict

    fields = set(asdict(RunConfig()))
    kwargs = {k: v for k, v in values.items() if k in fields}
    if corrections:
        kwargs["corrections"] = [correction_to_dict(c) for c in corrections]
    kwargs.update({k: v for k, v in pinned.items() if k in fields})
    return RunConfig(corpus=corpus, **kwargs)


def current():
    """The workspace's Stage (settings + lazily cached pipeline), or stop the page with advice."""
    from .pipeline import Stage

    ws = open_workspace()
    if ws is None:
        st.stop()
    return Stage(settings(ws), ws)


def save_settings(ws: Workspace, undo: bool = True, **values: Any) -> None:
    """Store changed settings in one transaction (only the ones that differ).

    An analyst's change (``undo=True``) can be taken back with Undo. Pinning a release records
    the corpus it belongs to; changing the corpus or the protected column unpins it.
    """
    stored = ws.settings()
    merged = {**DEFAULT_SETTINGS, **stored}
    changed = {k: v for k, v in values.items() if merged.get(k, DEFAULT_SETTINGS.get(k)) != v}
    if "chosen_release" in values:
        target = corpus_fingerprint({**merged, **values})
        if stored.get(PINNED_FOR) != target:
            changed[PINNED_FOR] = target
            changed["chosen_release"] = values["chosen_release"]
    elif {"corpus_source", "protect"} & set(changed) and stored.get("chosen_release") is not None:
        changed["chosen_release"] = None
    if changed:
        ws.update_settings(changed, undo_label=_action_label(values) if undo else None)


#: Plain names of the settings, for the undo history.
SETTING_NAMES: dict[str, str] = {
    "corpus_source": "corpus", "protect": "column to protect", "threshold": "chunking threshold",
    "roles": "roles", "family": "cluster family", "n_components": "number of clusters",
    "min_weight": "minimum cluster weight", "mixture_seed": "cluster seed",
    "n_init": "restarts", "max_iter": "iterations", "chosen_release": "chosen release",
    "population": "population size N", "trade_off_a": "slope of the line",
    "trade_off_c": "offset of the line", "max_swaps": "maximum swaps", "seed": "swap seed",
}


def _action_label(values: dict[str, Any]) -> str:
    return "change " + ", ".join(SETTING_NAMES.get(k, k) for k in values)


def bind(key: str, stored: Any) -> None:
    """Show the workspace's value in widget ``key`` (create the widget without ``value=``).

    Run before the widget on every script run: a second tab, an undo or another page's change
    is picked up on the next rerun instead of the widget's stale session value being saved back.
    """
    st.session_state[key] = stored


def save_decision(ws: Workspace, namespace: str, key: str, decision_key: str, note_key: str) -> None:
    """Store the review radio ``decision_key`` (and note ``note_key``) of change ``key``; the
    empty choice returns the change to *not reviewed* (on_change of pages 4's review widgets)."""
    decision = st.session_state[decision_key]
    if decision:
        ws.set_decision(namespace, key, decision, st.session_state.get(note_key, ""))
    else:
        ws.remove_decision(namespace, key)


def undo_button(ws: Workspace, key: str = "undo") -> None:
    """*Undo* the newest analyst action (of the last 20), with its name; a toast says what."""
    past = ws.history()
    if not past:
        st.button("Undo", disabled=True, key=key, help="Nothing to undo yet.",
                  width="stretch")
        return

    def undo() -> None:
        label = ws.undo()
        if label:
            st.toast(f"Undone: {label}")

    from .widgets import md_text

    st.button(f"Undo: {md_text(past[0]['label'])}", key=key, on_click=undo, width="stretch",
              help=f"Takes back your last action ({len(past)} of at most 20 can be undone).")
