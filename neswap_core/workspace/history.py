"""Undo history of the workspace: a snapshot of the analyst's state before each action.

Each undoable action (a settings change, a correction, a review decision) first stores the
rows of the settings, corrections and decisions tables as JSON, in the same transaction as the
change; ``undo`` puts the newest snapshot back. Snapshots are small (kilobytes) and only the
last ``HISTORY_LIMIT`` are kept, so a full copy is simpler and safer than inverse operations.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

#: Analyst actions kept for undo (issue 13: "the last 20 analyst actions").
HISTORY_LIMIT = 20
#: Tables an undo restores (artifacts are caches keyed by content: never restored).
UNDOABLE_TABLES: tuple[str, ...] = ("settings", "corrections", "decisions")
HISTORY_SCHEMA = """CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT NOT NULL, state TEXT NOT NULL,
    created_at TEXT NOT NULL)"""


def _snapshot(conn: sqlite3.Connection) -> str:
    state = {t: [list(r) for r in conn.execute(f"SELECT * FROM {t}")] for t in UNDOABLE_TABLES}
    return json.dumps(state)


def record(conn: sqlite3.Connection, label: str) -> None:
    """Store the state before an action named ``label``; keep the newest ``HISTORY_LIMIT``."""
    conn.execute(
        "INSERT INTO history (label, state, created_at) VALUES (?, ?, ?)",
        (label, _snapshot(conn), datetime.now(UTC).isoformat(timespec="seconds")),
    )
    conn.execute(
        "DELETE FROM history WHERE id NOT IN (SELECT id FROM history ORDER BY id DESC LIMIT ?)",
        (HISTORY_LIMIT,),
    )


def restore_latest(conn: sqlite3.Connection) -> str | None:
    """Put back the state saved before the newest action; its label, or None if none."""
    row = conn.execute("SELECT id, label, state FROM history ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return None
    entry_id, label, state = row
    for table, rows in json.loads(state).items():
        conn.execute(f"DELETE FROM {table}")
        for values in rows:
            marks = ", ".join("?" * len(values))
            conn.execute(f"INSERT INTO {table} VALUES ({marks})", values)
    conn.execute("DELETE FROM history WHERE id = ?", (entry_id,))
    return str(label)


def entries(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """The recorded actions, newest first: id, label and time."""
    rows = conn.execute("SELECT id, label, created_at FROM history ORDER BY id DESC")
    return [{"id": i, "label": lab, "created_at": t} for i, lab, t in rows]
