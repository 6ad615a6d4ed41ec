"""The analyst's workspace: settings, entity corrections, review decisions and cached artifacts.

Everything lives in one embedded SQLite file, ``<folder>/workspace.sqlite`` (issue 5,
"the analyst's work survives a reload"). A ``Workspace`` holds no open connection: every
operation opens its own short-lived connection and runs inside one ``BEGIN IMMEDIATE``
transaction, so Streamlit's script threads, a second browser tab and a CLI process all see
the same committed state (WAL mode, busy timeout). A damaged or foreign-format file raises
``WorkspaceError``; ``Workspace.reset`` moves it aside, never deletes it. The review-decision
methods live in ``workspace/decisions.py``, the undo history in ``workspace/history.py``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..config import CATEGORIES
from ..errors import WorkspaceError
from ..paths import user_data_dir
from . import history
from .decisions import DECISIONS, DECISIONS_SCHEMA, ReviewDecisions, snapshot_rows

__all__ = ["DECISIONS", "Workspace", "WorkspaceError", "default_workspace_folder"]

#: Version of the table layout below; a file with another version is refused, not guessed at.
SCHEMA_VERSION = 1
WORKSPACE_FILE = "workspace.sqlite"
#: Environment variable the app and CLI read for the workspace folder.
WORKSPACE_ENV = "NESWAP_WORKSPACE"
DEFAULT_WORKSPACE_FOLDER = "workspace"  # inside the per-user data folder (paths.user_data_dir)
#: Seconds a connection waits for another writer before giving up (SQLite busy timeout).
DEFAULT_BUSY_TIMEOUT_S = 10.0

CORRECTION_ACTIONS: tuple[str, ...] = ("drop", "add")
_SIDE_FILES: tuple[str, ...] = ("", "-wal", "-shm")

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settings (
    key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS corrections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    action TEXT NOT NULL CHECK (action IN {CORRECTION_ACTIONS}),
    category TEXT NOT NULL, text TEXT NOT NULL, chunk_id TEXT, created_at TEXT NOT NULL);
{DECISIONS_SCHEMA};
CREATE TABLE IF NOT EXISTS artifacts (
    name TEXT PRIMARY KEY, key TEXT NOT NULL, payload BLOB NOT NULL, updated_at TEXT NOT NULL);
"""

_TABLES = frozenset({"meta", "settings", "corrections", "decisions", "artifacts"})


def default_workspace_folder(environ: Mapping[str, str] | None = None) -> Path:
    """Folder the app uses: ``$NESWAP_WORKSPACE`` if set, else ``workspace`` in the per-user data
    folder (``paths.user_data_dir``), never the working folder (a checkout would hold it)."""
    env = os.environ if environ is None else environ
    if env.get(WORKSPACE_ENV):
        return Path(env[WORKSPACE_ENV]).expanduser()
    return user_data_dir(env) / DEFAULT_WORKSPACE_FOLDER


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _json_default(obj: Any) -> Any:
    """Let numpy scalars and arrays through ``json.dumps`` (``tolist`` gives plain Python)."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON-serialisable")


def _to_json(key: str, value: Any) -> str:
    try:
        return json.dumps(value, default=_json_default, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise WorkspaceError(
            f"Setting {key!r} cannot be saved: {exc}. Store plain numbers, strings, booleans, "
            "None, lists and dicts with string keys (no NaN or infinity)."
        ) from exc


def _require_text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise WorkspaceError(f"{name} must be a non-empty string, got {value!r}.")
    return value


def _check_correction(action: Any, category: Any, text: Any, chunk_id: Any) -> None:
    if action not in CORRECTION_ACTIONS:
        raise WorkspaceError(
            f"Correction action must be one of {CORRECTION_ACTIONS}, got {action!r}."
        )
    if category not in CATEGORIES:
        raise WorkspaceError(f"Correction category must be one of {CATEGORIES}, got {category!r}.")
    _require_text("Entity text", text)
    if chunk_id is not None:
        _require_text("chunk_id", chunk_id)


def _artifact_rows(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT name, key, length(payload), updated_at FROM artifacts ORDER BY name"
    )
    return [{"name": n, "key": k, "size_bytes": s, "updated_at": t} for n, k, s, t in rows]


class Workspace(ReviewDecisions):
    """Handle on one workspace folder; cheap to keep (holds a path, no open connection).

    Build it with ``Workspace.open(folder)`` (validates or creates the file) or
    ``Workspace.reset(folder)`` (moves the current file aside and starts fresh).
    """

    def __init__(self, folder: Path, busy_timeout_s: float, moved_aside: Path | None) -> None:
        self.folder = folder
        self.path = folder / WORKSPACE_FILE
        self.busy_timeout_s = busy_timeout_s
        #: Where ``reset`` put the previous file, or None when there was none.
        self.moved_aside = moved_aside

    # --- opening, checking, resetting --------------------------------------------------------
    @classmethod
    def open(
        cls, folder: str | os.PathLike[str], busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
    ) -> Workspace:
        """Open the workspace in ``folder``, creating folder and file if missing.

        Raises ``WorkspaceError`` when the file is not a healthy neswap workspace of
        ``SCHEMA_VERSION``; the message says how to start fresh without losing the file.
        """
        return cls._open(Path(folder), busy_timeout_s, moved_aside=None)

    @classmethod
    def reset(
        cls, folder: str | os.PathLike[str], busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
    ) -> Workspace:
        """Move ``workspace.sqlite`` (and its -wal/-shm) aside to ``.bad-<timestamp>``; open fresh.

        Nothing is deleted; ``Workspace.moved_aside`` of the result names the old file.
        """
        folder = Path(folder)
        moved = cls._move_aside(folder / WORKSPACE_FILE)
        return cls._open(folder, busy_timeout_s, moved_aside=moved)

    @classmethod
    def _open(cls, folder: Path, busy_timeout_s: float, moved_aside: Path | None) -> Workspace:
        if busy_timeout_s <= 0:
            raise WorkspaceError(f"busy_timeout_s must be positive seconds, got {busy_timeout_s}.")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(
                f"Cannot create the workspace folder {folder}: {exc}. Choose a writable folder "
                f"(set {WORKSPACE_ENV})."
            ) from exc
        workspace = cls(folder.resolve(), busy_timeout_s, moved_aside)
        workspace._initialise()
        return workspace

    @staticmethod
    def _move_aside(path: Path) -> Path | None:
        if not path.exists():
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = path.with_name(f"{path.name}.bad-{stamp}")
        while any(Path(f"{target}{suffix}").exists() for suffix in _SIDE_FILES):
            target = target.with_name(target.name + "x")  # rename() would overwrite: never do
        try:
            for suffix in _SIDE_FILES:  # the -wal holds committed data: keep it with its file
                side = Path(f"{path}{suffix}")
                if side.exists():
                    side.rename(f"{target}{suffix}")
        except OSError as exc:
            raise WorkspaceError(
                f"Cannot move the workspace file {path} aside: {exc}. Move or rename it yourself, "
                "then open the workspace again."
            ) from exc
        return target

    def _fail(self, problem: str, advice: str = "") -> WorkspaceError:
        return WorkspaceError(
            f"The workspace file {self.path} {problem}. {advice}To start fresh, use "
            f"Workspace.reset (the app's 'Start fresh' button): it moves the file aside to "
            f"{self.path.name}.bad-<timestamp> in the same folder and opens an empty "
            "workspace; nothing is deleted."
        )

    def _wrap(self, exc: sqlite3.Error) -> WorkspaceError:
        """Translate a SQLite error: a lock held too long is transient, anything else is not."""
        if isinstance(exc, sqlite3.OperationalError) and (
            "locked" in str(exc) or "busy" in str(exc)
        ):
            return WorkspaceError(
                f"The workspace {self.path} stayed locked by another tab or process for "
                f"{self.busy_timeout_s:g} s ({exc}). Wait a moment and try again."
            )
        return self._fail(f"is damaged or is not a neswap workspace ({exc})")

    def _initialise(self) -> None:
        """Check an existing file (integrity, format, version) or lay out a new one."""
        with self._transaction(create=True, setup=self._prepare_file) as conn:
            tables = self._tables(conn)
            if not tables:  # a new file: lay out the tables in this same transaction
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    conn.execute(statement)
                conn.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?), ('created_at', ?)",
                    (str(SCHEMA_VERSION), _now()),
                )
                tables = self._tables(conn)
            self._check_format(conn, tables)
            if "history" not in tables:
                conn.execute(history.HISTORY_SCHEMA)

    def _prepare_file(self, conn: sqlite3.Connection) -> None:
        """Before the first transaction on open: integrity check, then WAL mode (persistent)."""
        self._check_health(conn)
        conn.execute("PRAGMA journal_mode=WAL")  # lets readers and a writer overlap

    def _check_health(self, conn: sqlite3.Connection) -> None:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
        if rows != ["ok"]:
            found = "; ".join(" ".join(str(r).split()) for r in rows[:3])
            raise self._fail(f"fails SQLite's integrity check ({found})")

    @staticmethod
    def _tables(conn: sqlite3.Connection) -> set[str]:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r[0] for r in rows} - {"sqlite_sequence"}

    def _check_format(self, conn: sqlite3.Connection, tables: set[str]) -> None:
        if "meta" not in tables:
            raise self._fail("is a SQLite database but not a neswap workspace (no meta table)")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        try:
            version = int(row[0]) if row else None
        except ValueError:
            version = None
        if version is None:
            raise self._fail("has no readable schema_version in its meta table")
        if version > SCHEMA_VERSION:
            raise self._fail(
                f"was written by a newer neswap (schema {version}; this one reads "
                f"{SCHEMA_VERSION})",
                "Upgrade neswap to keep using it. ",
            )
        if version < SCHEMA_VERSION:
            raise self._fail(
                f"has an old format (schema {version}; this neswap reads {SCHEMA_VERSION}) "
                "and cannot be migrated"
            )
        missing = _TABLES - tables
        if missing:
            raise self._fail(f"lacks the tables {sorted(missing)}")

    # --- connections and transactions --------------------------------------------------------
    def _connect(self, create: bool = False) -> sqlite3.Connection:
        # mode=rw: a file deleted behind our back is an error, not a silently new empty workspace.
        uri = f"{self.path.as_uri()}?mode={'rwc' if create else 'rw'}"
        return sqlite3.connect(uri, uri=True, timeout=self.busy_timeout_s, isolation_level=None)

    @contextmanager
    def _transaction(
        self, write: bool = True, create: bool = False,
        setup: Callable[[sqlite3.Connection], None] | None = None,
    ) -> Iterator[sqlite3.Connection]:
        """One connection, one transaction: committed on success, rolled back on any error.

        Writes take the write lock up front (``BEGIN IMMEDIATE``) so the busy timeout applies
        instead of a deferred read-then-write transaction failing on a lock upgrade.
        """
        try:
            conn = self._connect(create=create)
        except sqlite3.Error as exc:
            raise self._fail(f"cannot be opened ({exc}); open the workspace again") from exc
        try:
            if setup is not None:
                setup(conn)
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            yield conn
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._wrap(exc) from exc
        finally:
            if conn.in_transaction:
                conn.rollback()
            conn.close()

    def schema_version(self) -> int:
        """Schema version recorded in the file (equals ``SCHEMA_VERSION`` once opened)."""
        with self._transaction(write=False) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0])

    def journal_mode(self) -> str:
        """SQLite journal mode of the file: ``'wal'`` unless the filesystem refuses WAL."""
        with self._transaction(write=False) as conn:
            return str(conn.execute("PRAGMA journal_mode").fetchone()[0])

    # --- settings ------------------------------------------------------------------------------
    def get_setting(self, key: str, default: Any = None) -> Any:
        """The JSON value stored under ``key``, or ``default`` when unset."""
        with self._transaction(write=False) as conn:
            row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def set_setting(self, key: str, value: Any) -> None:
        """Store one JSON-serialisable value (tuples come back as lists)."""
        self.update_settings({key: value})

    def update_settings(self, values: Mapping[str, Any], undo_label: str | None = None) -> None:
        """Store several settings atomically: all of them or, on any bad value, none.

        With ``undo_label`` the change is an analyst action that ``undo`` can take back.
        """
        with self._transaction() as conn:
            if undo_label:
                history.record(conn, undo_label)
            for key, value in values.items():
                _require_text("Setting key", key)
                conn.execute(
                    "INSERT INTO settings VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                    "value = excluded.value, updated_at = excluded.updated_at",
                    (key, _to_json(key, value), _now()),
                )

    def delete_setting(self, key: str) -> bool:
        """Forget ``key``; True when it was set."""
        with self._transaction() as conn:
            return conn.execute("DELETE FROM settings WHERE key = ?", (key,)).rowcount > 0

    def settings(self) -> dict[str, Any]:
        """Every setting, key -> value."""
        with self._transaction(write=False) as conn:
            rows = conn.execute("SELECT key, value FROM settings ORDER BY key").fetchall()
        return {key: json.loads(value) for key, value in rows}

    # --- entity corrections ----------------------------------------------------------------------
    def add_correction(
        self, action: str, category: str, text: str, chunk_id: str | None = None
    ) -> int:
        """Record "drop"/"add" of entity ``text`` as ``category`` (in one chunk, or everywhere).

        Returns the correction's id; recording the same correction twice returns the first id
        (so a double-clicked *Save* stores it once). Undoable.
        """
        return self.add_corrections([(action, category, text, chunk_id)])[0]

    def add_corrections(
        self, records: list[tuple[str, str, str, str | None]], undo_label: str | None = None
    ) -> list[int]:
        """Record several (action, category, text, chunk_id) corrections atomically; their ids.

        Corrections already stored are not repeated; when nothing is new, no undo step is kept.
        """
        for action, category, text, chunk_id in records:
            _check_correction(action, category, text, chunk_id)
        ids: list[int] = []
        with self._transaction() as conn:
            recorded = False
            for action, category, text, chunk_id in records:
                row = conn.execute(
                    "SELECT id FROM corrections WHERE action = ? AND category = ? AND text = ? "
                    "AND chunk_id IS ?",
                    (action, category, text, chunk_id),
                ).fetchone()
                if row is not None:
                    ids.append(int(row[0]))
                    continue
                if not recorded:
                    history.record(conn, undo_label or f"{action} correction “{text}”")
                    recorded = True
                cursor = conn.execute(
                    "INSERT INTO corrections (action, category, text, chunk_id, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (action, category, text, chunk_id, _now()),
                )
                assert cursor.lastrowid is not None  # every INSERT sets it
                ids.append(cursor.lastrowid)
        return ids

    def replace_corrections(self, records: list[tuple[str, str, str, str | None]]) -> None:
        """Replace every correction by ``records`` (action, category, text, chunk_id) in one
        transaction, without an undo step of its own: the app swaps in another corpus's
        corrections as part of switching corpus (whose own undo step restores these)."""
        for action, category, text, chunk_id in records:
            _check_correction(action, category, text, chunk_id)
        with self._transaction() as conn:
            conn.execute("DELETE FROM corrections")
            conn.executemany(
                "INSERT INTO corrections (action, category, text, chunk_id, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(a, c, t, ch, _now()) for a, c, t, ch in records],
            )

    def remove_correction(self, correction_id: int) -> bool:
        """Delete one correction (undoable); False when it was already gone (another tab)."""
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT text FROM corrections WHERE id = ?", (int(correction_id),)
            ).fetchone()
            if row is None:
                return False
            history.record(conn, f"remove correction “{row[0]}”")
            conn.execute("DELETE FROM corrections WHERE id = ?", (int(correction_id),))
            return True

    def counts(self) -> dict[str, int]:
        """Rows of the analyst's tables: corrections, decisions (all releases) and undo steps."""
        with self._transaction(write=False) as conn:
            return {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
                    for t in ("corrections", "decisions", "history")}

    # --- undo ---------------------------------------------------------------------------------------
    def undo(self) -> str | None:
        """Take back the newest analyst action (settings, corrections, decisions); its label.

        None when there is nothing to undo. Artifacts are caches keyed by content and stay.
        """
        with self._transaction() as conn:
            return history.restore_latest(conn)

    def history(self) -> list[dict[str, Any]]:
        """The undoable actions, newest first (id, label, created_at); at most 20."""
        with self._transaction(write=False) as conn:
            return history.entries(conn)

    def corrections(self) -> list[dict[str, Any]]:
        """All corrections in the order they were made, as dicts with the table's columns."""
        with self._transaction(write=False) as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute("SELECT * FROM corrections ORDER BY id").fetchall()
        return [dict(row) for row in rows]

    # --- artifacts ---------------------------------------------------------------------------------
    def put_artifact(self, name: str, key: str, payload: bytes) -> None:
        """Store a binary blob under ``name``, tagged with the content ``key`` of its inputs."""
        _require_text("Artifact name", name)
        _require_text("Artifact key", key)
        if not isinstance(payload, bytes | bytearray | memoryview):
            raise WorkspaceError(
                f"Artifact {name!r} payload must be bytes, got {type(payload).__name__}; "
                "serialise it first (e.g. numpy.save into io.BytesIO)."
            )
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO artifacts VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                "key = excluded.key, payload = excluded.payload, updated_at = excluded.updated_at",
                (name, key, sqlite3.Binary(bytes(payload)), _now()),
            )

    def get_artifact(self, name: str, key: str) -> bytes | None:
        """The blob stored under ``name`` if it was made from ``key``; None if absent or stale."""
        with self._transaction(write=False) as conn:
            row = conn.execute(
                "SELECT payload FROM artifacts WHERE name = ? AND key = ?", (name, key)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def delete_artifact(self, name: str) -> bool:
        """Forget one artifact; True when it existed."""
        with self._transaction() as conn:
            return conn.execute("DELETE FROM artifacts WHERE name = ?", (name,)).rowcount > 0

    def artifacts(self) -> list[dict[str, Any]]:
        """Name, key, size in bytes and time of every artifact (payloads not loaded)."""
        with self._transaction(write=False) as conn:
            return _artifact_rows(conn)

    # --- export ------------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Everything but artifact payloads, read in one transaction; JSON-serialisable."""
        with self._transaction(write=False) as conn:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            settings = conn.execute("SELECT key, value FROM settings ORDER BY key").fetchall()
            cols = ("id", "action", "category", "text", "chunk_id", "created_at")
            rows = conn.execute(f"SELECT {', '.join(cols)} FROM corrections ORDER BY id")
            corrections = [dict(zip(cols, row, strict=True)) for row in rows]
            decisions = snapshot_rows(conn)
            artifacts = _artifact_rows(conn)
        return {
            "path": str(self.path),
            "schema_version": int(meta["schema_version"]),
            "created_at": meta.get("created_at"),
            "settings": {key: json.loads(value) for key, value in settings},
            "corrections": corrections,
            "decisions": decisions,
            "artifacts": artifacts,
        }
