"""The analyst's workspace (SQLite, neswap_core.workspace.store) and the settings read from it.

Settings live in the workspace, not in ``st.session_state``, so a reload or a second tab sees
the same corpus choice, roles, corrections, fits and decisions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import streamlit as st

from neswap_core import RunConfig
from neswap_core.workspace.store import Workspace, WorkspaceError, default_workspace_folder

#: The app's own state beside the run settings (never in run.toml), with its defaults: which
#: corpus is loaded ("sample" or "upload:<sha>") and the release the analyst picked.
APP_DEFAULTS: dict[str, Any] = {"corpus_source": "sample", "chosen_release": None}
#: Every run setting's default comes from RunConfig (config/settings.py), the one place for it.
DEFAULT_SETTINGS: dict[str, Any] = {**RunConfig().settings(), **APP_DEFAULTS}
#: Run settings the app never stores: where the corpus and the outputs are (run.toml's).
NOT_STORED = ("corpus", "out")


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


def settings(ws: Workspace) -> Settings:
    """The settings of this script run (one read of the workspace): a validated ``RunConfig``
    and the app's own state (``Settings``).

    ``chosen_release`` is the release pinned *for this corpus*: a release pinned on another
    corpus (or another protected column) reads as None, so a new upload never inherits it.
    """
    stored = dict(ws.settings())
    if stored.get("roles") is not None:
        stored["roles"] = {**DEFAULT_SETTINGS["roles"], **stored["roles"]}
    out = Settings(stored)
    if stored.get(PINNED_FOR) != corpus_fingerprint(out):
        out.state["chosen_release"] = None
    return out


class Settings(Mapping):
    """The app's settings: ``config``, a ``RunConfig`` built (and validated) from the stored
    values, read by name (``settings["n_components"]``), and ``state``, the app's own keys.

    Until the analyst sets the trade-off line, reading ``trade_off_c`` asks ``resolve`` (the
    Stage's default offset, computed from the releases and then stored), so the first run of
    every page already uses the default line."""

    resolve = None

    def __init__(self, stored: Mapping[str, Any]) -> None:
        names = set(RunConfig().settings()) - set(NOT_STORED)
        self.config = RunConfig.of(**{k: v for k, v in stored.items() if k in names})
        self.state = {**APP_DEFAULTS, **{k: v for k, v in stored.items() if k not in names}}
        self.line_set = "trade_off_c" in stored
        self._values = self.config.settings()

    def __getitem__(self, key: str) -> Any:
        if key == "trade_off_c" and not self.line_set:
            value = self.resolve() if self.resolve is not None else self._values[key]
            self.config = self.config.replace(trade_off_c=float(value))
            self._values, self.line_set = self.config.settings(), True
        if key in self._values and key not in NOT_STORED:
            return self._values[key]
        return self.state[key]

    def __iter__(self):
        return iter([*(k for k in self._values if k not in NOT_STORED), *self.state])

    def __len__(self) -> int:
        return len(self._values) - len(NOT_STORED) + len(self.state)


#: Setting that records which corpus the pinned release belongs to.
PINNED_FOR = "chosen_release_corpus"


def run_config(
    values: Mapping[str, Any], corpus: str = "data/sample", corrections: list | None = None,
    **pinned: Any,
) -> RunConfig:
    """The RunConfig of the app's settings (what the Export page writes as run.toml), with the
    analyst's entity corrections (``EntityCorrection`` objects) in order and, in ``pinned``, the
    review and the chosen release (``decisions``, ``release``, ``release_plan``,
    ``release_stage``: views_export.export_config)."""
    from neswap_core.text.corrections import correction_to_dict

    config = values.config if isinstance(values, Settings) else RunConfig.of(
        **{k: v for k, v in values.items() if k in DEFAULT_SETTINGS and k not in APP_DEFAULTS})
    changes: dict[str, Any] = {"corpus": corpus}
    if corrections:
        changes["corrections"] = [correction_to_dict(c) for c in corrections]
    changes.update(pinned)
    return config.replace(**changes)


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
    names = set(DEFAULT_SETTINGS) - set(APP_DEFAULTS)
    RunConfig.of(**{k: v for k, v in {**merged, **changed}.items()  # refuse a bad value here
                    if k in names and k not in NOT_STORED})
    if "chosen_release" in values:
        target = corpus_fingerprint({**merged, **values})
        if stored.get(PINNED_FOR) != target:
            changed[PINNED_FOR] = target
            changed["chosen_release"] = values["chosen_release"]
    forget: list[str] | None = None
    if {"corpus_source", "protect"} & set(changed):
        forget = _switch_corpus(ws, stored, merged, changed)
    if changed:
        ws.update_settings(changed, undo_label=_action_label(values) if undo else None)
    if forget is not None:
        for key in forget:  # the other corpus never set them: its defaults apply
            ws.delete_setting(key)
        back = changed[CORPUS_STATES].get(corpus_fingerprint({**merged, **changed}), {})
        ws.replace_corrections([tuple(r) for r in back.get(CORRECTIONS, [])])


#: What belongs to one corpus (and protected column): the pinned release, the trade-off line,
#: the accepted leak-scan hits and the published columns, and (``CORRECTIONS``) the entity
#: corrections. Kept per corpus in ``CORPUS_STATES``
#: and restored when the analyst comes back to it (issue 20).
PER_CORPUS = ("chosen_release", "chosen_plan", PINNED_FOR, "trade_off_a", "trade_off_c",
              "trade_off_c_auto", "accepted_leaks", "publishable_columns", "shuffle_chunks")
CORPUS_STATES = "corpus_states"


#: Key of a corpus state that holds its entity corrections (action, category, text, chunk_id).
CORRECTIONS = "corrections"


def _switch_corpus(ws: Workspace, stored: Mapping[str, Any], merged: Mapping[str, Any],
                   changed: dict[str, Any]) -> list[str] | None:
    """Keep the corpus being left's ``PER_CORPUS`` settings and entity corrections and bring
    back the target's settings (into ``changed``; the caller swaps the corrections in); the
    keys to delete (set for the old corpus, never for the new one). None: same corpus."""
    old, new = corpus_fingerprint(merged), corpus_fingerprint({**merged, **changed})
    if old == new:
        return None
    states = dict(stored.get(CORPUS_STATES) or {})
    states[old] = {k: stored[k] for k in PER_CORPUS if k in stored}
    states[old][CORRECTIONS] = [[c["action"], c["category"], c["text"], c["chunk_id"]]
                                for c in ws.corrections()]
    back = states.get(new, {})
    changed.update({k: v for k, v in back.items() if k in PER_CORPUS})
    changed[CORPUS_STATES] = states
    return [k for k in PER_CORPUS if k in stored and k not in back]


#: Plain names of the settings, for the undo history.
SETTING_NAMES: dict[str, str] = {
    "corpus_source": "corpus", "protect": "column to protect", "threshold": "chunking threshold",
    "roles": "roles", "family": "cluster family", "n_components": "number of clusters",
    "min_weight": "minimum cluster weight", "mixture_seed": "cluster seed",
    "n_init": "restarts", "max_iter": "iterations", "chosen_release": "chosen release",
    "population": "population size N", "trade_off_a": "slope of the line",
    "trade_off_c": "offset of the line", "max_swaps": "maximum swaps", "seed": "swap seed",
    "max_chunk_accuracy": "goal for passages", "max_document_accuracy": "goal for documents",
    "publishable_columns": "published columns", "shuffle_chunks": "chunk order",
    "accepted_leaks": "accepted leak-scan hits", "chosen_plan": "chosen release",
    "plan_rounds": "plan rounds", "plan_redaction_levels": "redaction levels",
    "plan_terms": "term changes in plans", "goal_utility": "utility the goal keeps",
}
#: Bookkeeping settings an action stores beside the analyst's (never named in the undo label).
QUIET_SETTINGS = ("trade_off_c_auto", "chosen_release_corpus", "corpus_states")


def plain_message(text: str) -> str:
    """A core message for the screen: "(max_swaps = 10)" becomes "(maximum swaps: 10)" (the CLI's
    messages name run.toml's settings; the app names them in words)."""
    import re

    def word(m: re.Match) -> str:
        return f"{SETTING_NAMES.get(m[1], m[1].replace('_', ' '))}: {m[2]}"

    return re.sub(r"\b([a-z]+(?:_[a-z]+)+) = ([^\s,;)]+)", word, text)


def _action_label(values: dict[str, Any]) -> str:
    """"change slope of the line, offset of the line": plain names, never a field name."""
    names = [SETTING_NAMES.get(k, k.replace("_", " ")) for k in values if k not in QUIET_SETTINGS]
    return "change " + ", ".join(dict.fromkeys(names))


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
