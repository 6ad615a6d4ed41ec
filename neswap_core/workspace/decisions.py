"""The analyst's review decisions in the workspace: accept or reject one change of a release.

A decision is stored under a *namespace* (``release_key``: the release, or the pre-swap data for
content-keyed plan changes) and the change's key (``pair_key``: a swapped pair ``"a|b"`` or a
plan change's content key), with an optional note. ``ReviewDecisions`` adds the methods to
``store.Workspace``; every write runs in one transaction of the workspace and is undoable
(workspace/history.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from ..errors import WorkspaceError
from . import history

DECISIONS: tuple[str, ...] = ("accept", "reject")
DECISIONS_SCHEMA = f"""CREATE TABLE IF NOT EXISTS decisions (
    release_key TEXT NOT NULL, pair_key TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN {DECISIONS}),
    note TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (release_key, pair_key))"""


def _require_text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise WorkspaceError(f"{name} must be a non-empty string, got {value!r}.")
    return value


def check_decision(pair_key: str, decision: Any, note: Any) -> None:
    """Raise ``WorkspaceError`` for an empty key, an unknown decision or a non-text note."""
    _require_text("pair_key", pair_key)
    if decision not in DECISIONS:
        raise WorkspaceError(
            f"Decision for pair {pair_key!r} must be one of {DECISIONS}, got {decision!r}."
        )
    if not isinstance(note, str):
        raise WorkspaceError(f"Note for pair {pair_key!r} must be a string, got {note!r}.")


def snapshot_rows(conn: sqlite3.Connection) -> dict[str, dict[str, dict[str, str]]]:
    """release_key -> pair_key -> {decision, note, updated_at}, for ``Workspace.snapshot``."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for release, pair, decision, note, updated in conn.execute(
        "SELECT * FROM decisions ORDER BY release_key, pair_key"
    ):
        out.setdefault(release, {})[pair] = {
            "decision": decision,
            "note": note,
            "updated_at": updated,
        }
    return out


class ReviewDecisions:
    """Review-decision methods of ``store.Workspace`` (which provides ``_transaction``)."""

    #: One transaction of the workspace file (``store.Workspace._transaction``).
    _transaction: Callable[..., AbstractContextManager[sqlite3.Connection]]

    def set_decision(self, release_key: str, pair_key: str, decision: str, note: str = "") -> None:
        """Accept or reject one swapped pair of a release (replaces an earlier decision)."""
        self.set_decisions(release_key, {pair_key: (decision, note)})

    def set_decisions(self, release_key: str, decisions: Mapping[str, tuple[str, str]]) -> None:
        """Store several decisions of one release atomically: all of them or none."""
        from .store import _now

        _require_text("release_key", release_key)
        with self._transaction() as conn:
            history.record(conn, f"{len(decisions)} review decision(s)")
            for pair_key, (decision, note) in decisions.items():
                check_decision(pair_key, decision, note)
                conn.execute(
                    "INSERT INTO decisions VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (release_key, pair_key) DO UPDATE SET decision = "
                    "excluded.decision, note = excluded.note, updated_at = excluded.updated_at",
                    (release_key, pair_key, decision, note, _now()),
                )

    def remove_decision(self, release_key: str, pair_key: str) -> bool:
        """Return a pair to "undecided"; False when it had no decision."""
        with self._transaction() as conn:
            history.record(conn, "reset a review decision")
            cursor = conn.execute(
                "DELETE FROM decisions WHERE release_key = ? AND pair_key = ?",
                (release_key, pair_key),
            )
            return cursor.rowcount > 0

    def decisions(self, release_key: str) -> dict[str, tuple[str, str]]:
        """pair_key -> (decision, note) for one release."""
        with self._transaction(write=False) as conn:
            rows = conn.execute(
                "SELECT pair_key, decision, note FROM decisions WHERE release_key = ? "
                "ORDER BY pair_key",
                (release_key,),
            ).fetchall()
        return {pair: (decision, note) for pair, decision, note in rows}

    def clear_decisions(self, release_key: str, pair_keys: Iterable[str] | None = None) -> int:
        """Drop the decisions of one namespace (only those of ``pair_keys`` when given, e.g. the
        pairs of one release of a combination); returns how many there were. One undo step."""
        with self._transaction() as conn:
            history.record(conn, "clear all review decisions")
            if pair_keys is None:
                cursor = conn.execute("DELETE FROM decisions WHERE release_key = ?", (release_key,))
                return cursor.rowcount
            return sum(
                conn.execute("DELETE FROM decisions WHERE release_key = ? AND pair_key = ?",
                             (release_key, key)).rowcount
                for key in dict.fromkeys(pair_keys)
            )
