"""Outputs are written safely (issue 23 item 7): whole folders or nothing, Ctrl-C in one line.

A release goes to a partial folder and is swapped in only when complete; an interrupt or an
error leaves the previous release as it was; stale files never survive; an output folder that
cannot be written is refused before any work.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from neswap_core import run_release
from neswap_core.cli import EXIT_ERROR, EXIT_INTERRUPTED, main
from neswap_core.config import RunConfig
from neswap_core.errors import ConfigError
from neswap_core.publish import folders
from neswap_core.publish.folders import check_writable, replace_folders

ROOT = Path(__file__).resolve().parents[1]


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def old_release(tmp_path) -> Path:
    out = tmp_path / "out"
    replace_folders(out, {"released": {"docs/doc_1.txt": b"old text\n"},
                          "key": {"report.json": b"{}\n", "candidates.csv": b"stale\n"}})
    (out / "run.toml").write_text("kept = true\n")  # the analyst's own file beside the release
    return out


def test_folders_are_replaced_whole_stale_files_included(old_release):
    written = replace_folders(old_release, {"released": {"docs/doc_2.txt": b"new\n"},
                                            "key": {"report.json": b"{\"new\": 1}\n"}})
    assert tree(old_release) == {"released/docs/doc_2.txt": b"new\n",
                                 "key/report.json": b"{\"new\": 1}\n", "run.toml": b"kept = true\n"}
    assert sorted(p.relative_to(old_release).as_posix() for p in written) == [
        "key/report.json", "released/docs/doc_2.txt"]
    assert not [p for p in old_release.iterdir() if p.name.startswith(".neswap")]


def test_a_blocked_release_leaves_no_old_released_beside_the_new_key(old_release):
    replace_folders(old_release, {"released": None, "key": {"leaks.csv": b"hits\n"}})
    assert tree(old_release) == {"key/leaks.csv": b"hits\n", "run.toml": b"kept = true\n"}


@pytest.mark.parametrize("where", ["writing", "swapping"])
def test_an_interrupt_leaves_the_previous_release_intact(old_release, monkeypatch, where):
    before = tree(old_release)
    if where == "writing":  # Ctrl-C while the new files are written
        real, calls = folders.write_files, []

        def interrupted(files, folder):
            calls.append(folder)
            if len(calls) == 2:
                raise KeyboardInterrupt
            return real(files, folder)

        monkeypatch.setattr(folders, "write_files", interrupted)
    else:  # an error half-way through the renames is rolled back
        real_replace, calls = folders.os.replace, []

        def failing(src, dst):
            calls.append(dst)
            if len(calls) == 3:
                raise OSError("disk gone")
            return real_replace(src, dst)

        monkeypatch.setattr(folders.os, "replace", failing)
    with pytest.raises((KeyboardInterrupt, OSError)):
        replace_folders(old_release, {"released": {"docs/doc_2.txt": b"new\n"},
                                      "key": {"report.json": b"new\n"}})
    assert tree(old_release) == before
    assert not [p for p in old_release.iterdir() if p.name.startswith(".neswap")]


def test_an_unwritable_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(ConfigError, match="cannot be written"):
        check_writable(tmp_path / "a-file" / "out")

    def no_work(*args, **kwargs):
        raise AssertionError("the corpus was prepared before --out was checked")

    monkeypatch.setattr(run_release, "prepare", no_work)
    RunConfig.of(corpus=str(ROOT / "data" / "sample")).save(tmp_path / "run.toml")
    code = main(["release", "--config", str(tmp_path / "run.toml"), "--out",
                 str(tmp_path / "a-file" / "out")])
    err = capsys.readouterr().err
    assert code == EXIT_ERROR and err.startswith("error: The output folder")
    assert "--out" in err and "Traceback" not in err


def test_ctrl_c_prints_one_line_exits_130_and_keeps_the_old_release(old_release, tmp_path,
                                                                     capsys, monkeypatch):
    before = tree(old_release)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_release, "prepare", interrupted)
    RunConfig.of(corpus=str(ROOT / "data" / "sample")).save(tmp_path / "run.toml")
    code = main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(old_release)])
    err = capsys.readouterr().err
    assert code == EXIT_INTERRUPTED
    assert err.strip().splitlines() == [
        f"Interrupted: no new release was written; the previous release in {old_release}, if "
        "any, is left as it was."]
    assert tree(old_release) == before
