"""Tests of the SQLite workspace (issue 5: the analyst's work survives a reload, never lost)."""

from __future__ import annotations

import json
import random
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from neswap_core.errors import NeswapError
from neswap_core.workspace.store import (
    SCHEMA_VERSION,
    WORKSPACE_ENV,
    WORKSPACE_FILE,
    Workspace,
    WorkspaceError,
    default_workspace_folder,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.open(tmp_path / "ws")


def _fill(ws: Workspace) -> None:
    ws.update_settings({"corpus": "sample", "threshold": 75.0, "roles": {"Event": "C"}})
    ws.add_correction("add", "Product", "iX", chunk_id="doc1-0003")
    ws.add_correction("drop", "Organization", "Q3")
    ws.set_decision("rel-1", "a|b", "reject", "same supplier named twice")
    ws.set_decision("rel-1", "c|d", "accept")
    ws.put_artifact("embeddings", "sha-1", b"\x00\x01\x02")


# --- opening -----------------------------------------------------------------------------------
def test_open_creates_folder_file_meta_and_wal(tmp_path: Path) -> None:
    folder = tmp_path / "deep" / "er" / "ws"
    ws = Workspace.open(folder)
    assert ws.path == folder.resolve() / WORKSPACE_FILE and ws.path.is_file()
    assert ws.schema_version() == SCHEMA_VERSION
    assert ws.journal_mode() == "wal"
    with sqlite3.connect(ws.path) as raw:
        version = raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)
    assert ws.moved_aside is None


def test_folder_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(WorkspaceError, match="Cannot create the workspace folder"):
        Workspace.open(blocker)


def test_default_folder_comes_from_the_environment() -> None:
    assert default_workspace_folder({WORKSPACE_ENV: "/data/ws"}) == Path("/data/ws")
    data = {"XDG_DATA_HOME": "/home/u/.data"}
    if sys.platform.startswith("linux"):  # the per-user data folder, never the working folder
        assert default_workspace_folder(data) == Path("/home/u/.data/neswap/workspace")
        assert default_workspace_folder({**data, WORKSPACE_ENV: ""}) == Path(
            "/home/u/.data/neswap/workspace")
    assert default_workspace_folder({}).is_absolute()
    assert Path.cwd() not in default_workspace_folder({}).parents


# --- round trips -------------------------------------------------------------------------------
def test_settings_round_trip(ws: Workspace) -> None:
    assert ws.get_setting("missing", default=7) == 7
    ws.set_setting("roles", {"Organization": "S", "Date": "F"})
    ws.set_setting("trade_off", (0.5, -0.1))  # tuples come back as lists (JSON)
    ws.set_setting("population_n", np.int64(100_000))  # numpy scalars become plain numbers
    ws.set_setting("release_id", None)
    ws.set_setting("threshold", 75.0)
    ws.set_setting("threshold", 80.0)  # overwrite
    assert ws.get_setting("trade_off") == [0.5, -0.1]
    assert ws.get_setting("release_id", default="x") is None  # stored None is not "unset"
    assert ws.settings() == {
        "population_n": 100_000,
        "release_id": None,
        "roles": {"Date": "F", "Organization": "S"},
        "threshold": 80.0,
        "trade_off": [0.5, -0.1],
    }
    assert type(ws.get_setting("population_n")) is int
    assert ws.delete_setting("threshold") and not ws.delete_setting("threshold")
    assert "threshold" not in ws.settings()


@pytest.mark.parametrize("bad", [object(), float("nan"), {1j: 2}])
def test_unserialisable_setting_is_refused_and_nothing_written(ws: Workspace, bad: object) -> None:
    with pytest.raises(WorkspaceError, match="cannot be saved"):
        ws.set_setting("k", bad)
    assert ws.settings() == {}


def test_corrections_round_trip(ws: Workspace) -> None:
    first = ws.add_correction("add", "Product", "iX", chunk_id="doc1-0003")
    second = ws.add_correction("drop", "Organization", "Q3")
    assert second > first
    assert ws.add_correction("drop", "Organization", "Q3") == second  # idempotent
    third = ws.add_correction("drop", "Organization", "Q3", chunk_id="doc1-0001")
    assert third not in (first, second)  # chunk-specific differs from corpus-wide
    rows = ws.corrections()
    assert [r["id"] for r in rows] == [first, second, third]
    assert {k: rows[0][k] for k in ("action", "category", "text", "chunk_id")} == {
        "action": "add",
        "category": "Product",
        "text": "iX",
        "chunk_id": "doc1-0003",
    }
    assert rows[1]["chunk_id"] is None and rows[1]["created_at"]
    assert ws.remove_correction(second) is True
    assert ws.remove_correction(second) is False  # already gone (e.g. another tab)
    assert [r["id"] for r in ws.corrections()] == [first, third]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("rename", "Product", "iX"), "action must be one of"),
        (("add", "Gadget", "iX"), "category must be one of"),
        (("add", "Product", "  "), "Entity text must be a non-empty string"),
        (("add", "Product", "iX", ""), "chunk_id must be a non-empty string"),
    ],
)
def test_bad_corrections_are_refused(ws: Workspace, args: tuple, message: str) -> None:
    with pytest.raises(WorkspaceError, match=message):
        ws.add_correction(*args)
    assert ws.corrections() == []


def test_decisions_round_trip(ws: Workspace) -> None:
    ws.set_decision("rel-1", "a|b", "accept")
    ws.set_decision("rel-1", "c|d", "reject", "same supplier in both")
    ws.set_decision("rel-2", "a|b", "reject")
    ws.set_decision("rel-1", "a|b", "reject", "changed my mind")  # replaces
    assert ws.decisions("rel-1") == {
        "a|b": ("reject", "changed my mind"),
        "c|d": ("reject", "same supplier in both"),
    }
    assert ws.decisions("rel-2") == {"a|b": ("reject", "")}
    assert ws.decisions("never") == {}
    assert ws.remove_decision("rel-1", "c|d") and not ws.remove_decision("rel-1", "c|d")
    assert ws.clear_decisions("rel-1") == 1
    assert ws.decisions("rel-1") == {} and ws.decisions("rel-2") == {"a|b": ("reject", "")}


def test_clearing_some_pairs_keeps_the_others_and_is_one_undo(ws: Workspace) -> None:
    ws.set_decisions("combo", {"a|b": ("reject", ""), "c|d": ("accept", ""), "e|f": ("reject", "x")})
    assert ws.clear_decisions("combo", ["a|b", "c|d", "a|b", "never|seen"]) == 2
    assert ws.decisions("combo") == {"e|f": ("reject", "x")}
    ws.undo()
    assert set(ws.decisions("combo")) == {"a|b", "c|d", "e|f"}


@pytest.mark.parametrize(
    ("release", "pair", "decision", "note", "message"),
    [
        ("rel", "a|b", "maybe", "", "must be one of"),
        ("rel", "", "accept", "", "pair_key must be a non-empty string"),
        ("", "a|b", "accept", "", "release_key must be a non-empty string"),
        ("rel", "a|b", "accept", None, "must be a string"),
    ],
)
def test_bad_decisions_are_refused(ws, release, pair, decision, note, message) -> None:
    with pytest.raises(WorkspaceError, match=message):
        ws.set_decision(release, pair, decision, note)


def test_artifacts_round_trip_and_staleness(ws: Workspace) -> None:
    payload = np.arange(1000, dtype=np.float32).tobytes()
    assert ws.get_artifact("embeddings", "sha-1") is None
    ws.put_artifact("embeddings", "sha-1", payload)
    got = ws.get_artifact("embeddings", "sha-1")
    assert got == payload
    assert np.array_equal(np.frombuffer(got, dtype=np.float32), np.arange(1000))
    assert ws.get_artifact("embeddings", "sha-2") is None  # other inputs: stale
    ws.put_artifact("embeddings", "sha-2", bytearray(b"new"))
    assert ws.get_artifact("embeddings", "sha-1") is None  # replaced, old key is stale
    assert ws.get_artifact("embeddings", "sha-2") == b"new"
    ws.put_artifact("fit", "k", memoryview(b""))  # empty payload is a valid artifact
    assert ws.get_artifact("fit", "k") == b""
    listing = ws.artifacts()
    assert [(a["name"], a["key"], a["size_bytes"]) for a in listing] == [
        ("embeddings", "sha-2", 3),
        ("fit", "k", 0),
    ]
    assert ws.delete_artifact("fit") and ws.get_artifact("fit", "k") is None
    with pytest.raises(WorkspaceError, match="payload must be bytes"):
        ws.put_artifact("x", "k", "text")  # type: ignore[arg-type]


def test_snapshot_is_json_and_complete(ws: Workspace) -> None:
    _fill(ws)
    snap = json.loads(json.dumps(ws.snapshot()))
    assert snap["schema_version"] == SCHEMA_VERSION
    assert snap["settings"] == {"corpus": "sample", "roles": {"Event": "C"}, "threshold": 75.0}
    assert [(c["action"], c["text"]) for c in snap["corrections"]] == [
        ("add", "iX"),
        ("drop", "Q3"),
    ]
    assert snap["decisions"]["rel-1"]["a|b"]["decision"] == "reject"
    assert snap["decisions"]["rel-1"]["a|b"]["note"] == "same supplier named twice"
    assert snap["artifacts"][0]["size_bytes"] == 3 and "payload" not in snap["artifacts"][0]


# --- persistence and sharing ------------------------------------------------------------------------
def test_everything_survives_reopen(tmp_path: Path) -> None:
    first = Workspace.open(tmp_path / "ws")
    _fill(first)
    before = first.snapshot()
    del first
    again = Workspace.open(tmp_path / "ws")
    assert again.snapshot() == before
    assert again.get_artifact("embeddings", "sha-1") == b"\x00\x01\x02"


def test_two_workspace_objects_see_each_others_writes(tmp_path: Path) -> None:
    tab_a, tab_b = Workspace.open(tmp_path / "ws"), Workspace.open(tmp_path / "ws")
    tab_a.set_decision("rel", "a|b", "reject", "from tab A")
    assert tab_b.decisions("rel") == {"a|b": ("reject", "from tab A")}
    tab_b.set_decision("rel", "a|b", "accept", "tab B overrides")
    tab_b.add_correction("add", "Product", "iX")
    assert tab_a.decisions("rel") == {"a|b": ("accept", "tab B overrides")}
    assert [c["text"] for c in tab_a.corrections()] == ["iX"]


def test_writer_thread_and_reader_see_the_same_decisions(ws: Workspace) -> None:
    written, done = threading.Event(), threading.Event()
    seen: list[dict] = []

    def writer() -> None:
        tab = Workspace.open(ws.folder)
        for i in range(5):
            tab.set_decision("rel", f"p{i}", "accept" if i % 2 else "reject")
            written.set()
            done.wait(5)
            done.clear()

    thread = threading.Thread(target=writer)
    thread.start()
    for _ in range(5):
        assert written.wait(5)
        written.clear()
        seen.append(ws.decisions("rel"))  # a fresh connection sees the commit at once
        done.set()
    thread.join(5)
    assert [len(s) for s in seen] == [1, 2, 3, 4, 5]
    assert seen[-1] == {f"p{i}": ("accept" if i % 2 else "reject", "") for i in range(5)}


def test_another_process_sees_and_makes_writes(ws: Workspace) -> None:
    ws.set_decision("rel", "a|b", "reject", "parent")
    code = (
        "import sys, json; from neswap_core.workspace.store import Workspace;"
        "w = Workspace.open(sys.argv[1]); print(json.dumps(w.decisions('rel')));"
        "w.set_decision('rel', 'c|d', 'accept', 'child')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ws.folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(out.stdout) == {"a|b": ["reject", "parent"]}
    assert ws.decisions("rel") == {"a|b": ("reject", "parent"), "c|d": ("accept", "child")}


def test_readers_are_not_blocked_and_writers_wait_then_give_a_clear_error(tmp_path: Path) -> None:
    ws = Workspace.open(tmp_path / "ws", busy_timeout_s=0.2)
    ws.set_decision("rel", "a|b", "accept")
    holder = sqlite3.connect(ws.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("DELETE FROM decisions")  # uncommitted
    try:
        assert ws.decisions("rel") == {"a|b": ("accept", "")}  # WAL: committed state readable
        with pytest.raises(WorkspaceError, match="locked by another tab or process.*try again"):
            ws.set_decision("rel", "c|d", "reject")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    ws.set_decision("rel", "c|d", "reject")  # the lock is gone: works again
    assert ws.decisions("rel") == {"a|b": ("accept", ""), "c|d": ("reject", "")}


def test_concurrent_writers_lose_nothing(ws: Workspace) -> None:
    n_threads, n_each = 6, 25
    errors: list[BaseException] = []

    def work(t: int) -> None:
        tab = Workspace.open(ws.folder)  # each "browser tab" its own handle
        try:
            for i in range(n_each):
                tab.set_decision("rel", f"t{t}-p{i}", "accept" if (t + i) % 2 else "reject", f"{t}")
                tab.set_setting(f"last-{t}", i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    got = ws.decisions("rel")
    expected = {
        f"t{t}-p{i}": ("accept" if (t + i) % 2 else "reject", f"{t}")
        for t in range(n_threads)
        for i in range(n_each)
    }
    assert got == expected
    assert ws.settings() == {f"last-{t}": n_each - 1 for t in range(n_threads)}


# --- transactions ------------------------------------------------------------------------------------
def test_failing_decision_batch_writes_nothing(ws: Workspace) -> None:
    ws.set_decision("rel", "a|b", "reject", "keep me")
    batch = {"a|b": ("accept", "new"), "c|d": ("accept", ""), "e|f": ("maybe", "")}
    with pytest.raises(WorkspaceError, match="must be one of"):
        ws.set_decisions("rel", batch)  # the third row fails after two were written
    assert ws.decisions("rel") == {"a|b": ("reject", "keep me")}
    ws.set_decisions("rel", {k: v for k, v in batch.items() if v[0] != "maybe"})
    assert ws.decisions("rel") == {"a|b": ("accept", "new"), "c|d": ("accept", "")}


def test_failing_settings_batch_writes_nothing(ws: Workspace) -> None:
    ws.set_setting("threshold", 75.0)
    with pytest.raises(WorkspaceError, match="'bad' cannot be saved"):
        ws.update_settings({"threshold": 90.0, "k": 3, "bad": {1, 2}})
    assert ws.settings() == {"threshold": 75.0}


def test_file_deleted_behind_our_back_is_an_error_not_a_new_empty_workspace(ws: Workspace) -> None:
    ws.set_setting("k", 1)
    ws.path.unlink()
    with pytest.raises(WorkspaceError, match="cannot be opened"):
        ws.settings()
    assert not ws.path.exists()


# --- damaged and foreign files -------------------------------------------------------------------
def _assert_clear(exc: WorkspaceError, path: Path, *fragments: str) -> None:
    text = str(exc)
    assert isinstance(exc, NeswapError)
    assert str(path) in text and "Workspace.reset" in text and "nothing is deleted" in text
    assert "workspace.sqlite.bad-<timestamp>" in text
    for fragment in fragments:
        assert fragment in text, text


def test_garbage_file_raises_and_reset_moves_it_aside(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    garbage = random.Random(0).randbytes(5000)
    (folder / WORKSPACE_FILE).write_bytes(garbage)
    with pytest.raises(WorkspaceError) as info:
        Workspace.open(folder)
    _assert_clear(info.value, folder.resolve() / WORKSPACE_FILE, "not a database")

    fresh = Workspace.reset(folder)
    moved = fresh.moved_aside
    assert moved is not None and moved.parent == folder
    assert re.fullmatch(r"workspace\.sqlite\.bad-\d{8}T\d{12}Z", moved.name)
    assert moved.read_bytes() == garbage  # never deleted
    assert fresh.snapshot()["settings"] == {} and fresh.decisions("rel") == {}
    fresh.set_setting("k", 1)
    assert Workspace.open(folder).get_setting("k") == 1


def _sqlite_detects(path: Path) -> str:
    """What plain SQLite says about a file: 'raise', 'rows' (quick_check findings) or 'ok'."""
    raw = sqlite3.connect(path)
    try:
        return "ok" if raw.execute("PRAGMA quick_check").fetchall() == [("ok",)] else "rows"
    except sqlite3.DatabaseError:
        return "raise"
    finally:
        raw.close()


def test_damaged_pages_fail_the_integrity_check(tmp_path: Path) -> None:
    ws = Workspace.open(tmp_path / "ws")
    ws.set_decisions("rel", {f"c{i}|d{i}": ("accept", "note " * 10) for i in range(1500)})
    original = ws.path.read_bytes()
    page = 4096
    assert len(original) > 12 * page
    kinds = set()
    for number in range(2, 12):  # wreck one page header at a time, the file header stays intact
        data = bytearray(original)
        data[(number - 1) * page : (number - 1) * page + 8] = random.Random(number).randbytes(8)
        ws.path.write_bytes(bytes(data))
        kind = _sqlite_detects(ws.path)
        kinds.add(kind)
        if kind == "ok":
            continue
        with pytest.raises(WorkspaceError) as info:
            Workspace.open(ws.folder)
        _assert_clear(info.value, ws.path, "integrity check" if kind == "rows" else "malformed")
    assert {"rows", "raise"} <= kinds  # both ways SQLite reports damage were exercised
    fresh = Workspace.reset(ws.folder)
    assert fresh.moved_aside.read_bytes() == bytes(data)
    assert fresh.decisions("rel") == {}


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    with sqlite3.connect(folder / WORKSPACE_FILE) as raw:
        raw.execute("CREATE TABLE customers (id INTEGER)")
    raw.close()
    with pytest.raises(WorkspaceError) as info:
        Workspace.open(folder)
    _assert_clear(info.value, folder.resolve() / WORKSPACE_FILE, "not a neswap workspace")


@pytest.mark.parametrize(
    ("version", "fragment"),
    [
        (str(SCHEMA_VERSION + 1), "newer neswap"),
        (str(SCHEMA_VERSION - 1), "old format"),
        ("one", "no readable schema_version"),
    ],
)
def test_other_schema_versions_are_refused(tmp_path: Path, version: str, fragment: str) -> None:
    ws = Workspace.open(tmp_path / "ws")
    ws.set_setting("k", "precious")
    with sqlite3.connect(ws.path) as raw:
        raw.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    raw.close()
    with pytest.raises(WorkspaceError) as info:
        Workspace.open(ws.folder)
    _assert_clear(info.value, ws.path, fragment)

    fresh = Workspace.reset(ws.folder)
    assert fresh.schema_version() == SCHEMA_VERSION and fresh.settings() == {}
    with sqlite3.connect(fresh.moved_aside) as old:  # the old file is intact and readable
        assert old.execute("SELECT value FROM settings").fetchone() == ('"precious"',)
        assert old.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            version,
        )
    old.close()


def test_missing_table_is_refused(tmp_path: Path) -> None:
    ws = Workspace.open(tmp_path / "ws")
    with sqlite3.connect(ws.path) as raw:
        raw.execute("DROP TABLE decisions")
    raw.close()
    with pytest.raises(WorkspaceError) as info:
        Workspace.open(ws.folder)
    _assert_clear(info.value, ws.path, "lacks the tables ['decisions']")


def test_reset_without_a_file_moves_nothing(tmp_path: Path) -> None:
    fresh = Workspace.reset(tmp_path / "new")
    assert fresh.moved_aside is None and fresh.schema_version() == SCHEMA_VERSION


def test_reset_keeps_uncheckpointed_wal_with_its_file(tmp_path: Path) -> None:
    ws = Workspace.open(tmp_path / "ws")
    holder = sqlite3.connect(ws.path)  # another open connection keeps the WAL file in place
    holder.execute("SELECT count(*) FROM meta").fetchall()
    ws.set_setting("k", "only in the WAL")
    wal = Path(f"{ws.path}-wal")
    assert wal.exists() and wal.stat().st_size > 0
    fresh = Workspace.reset(ws.folder)
    holder.close()
    assert Path(f"{fresh.moved_aside}-wal").exists()
    with sqlite3.connect(fresh.moved_aside) as old:  # the moved pair still holds the data
        assert old.execute("SELECT value FROM settings").fetchone() == ('"only in the WAL"',)
    old.close()
    assert fresh.settings() == {}


def test_repeated_resets_keep_every_old_file(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    Workspace.open(folder).set_setting("generation", 1)
    first = Workspace.reset(folder)
    first.set_setting("generation", 2)
    second = Workspace.reset(folder)
    assert first.moved_aside != second.moved_aside
    kept = sorted(folder.glob(f"{WORKSPACE_FILE}.bad-*[0-9Zx]"))
    assert kept == sorted([first.moved_aside, second.moved_aside])
    for old, generation in ((first.moved_aside, "1"), (second.moved_aside, "2")):
        with sqlite3.connect(old) as raw:
            assert raw.execute("SELECT value FROM settings").fetchone() == (generation,)
        raw.close()
    assert second.settings() == {}


def test_replace_corrections_swaps_them_in_one_step_without_an_undo_of_its_own(tmp_path: Path):
    ws = Workspace.open(tmp_path / "ws")
    ws.add_corrections([("drop", "Person", "EDITED TRANSCRIPT", None)])
    steps = len(ws.history())
    ws.replace_corrections([("add", "Product", "iX", "d#0001")])
    assert [(c["action"], c["text"], c["chunk_id"]) for c in ws.corrections()] == [
        ("add", "iX", "d#0001")]
    assert len(ws.history()) == steps
    with pytest.raises(WorkspaceError):
        ws.replace_corrections([("rename", "Product", "iX", None)])
    assert [c["text"] for c in ws.corrections()] == ["iX"]  # a bad record changes nothing
