"""Golden test of issue 19: the release path writes what it wrote before the restructure.

``tests/fixtures/golden/`` holds what commit bc9925d wrote on the bundled sample (its README
says how): the CLI's ``release`` for a paper and a plan configuration, and the app's Export
downloads for a paper release and a pinned, reviewed plan release. Here the current code runs
the same cases: ``released/`` must be byte-identical, and ``key/`` byte-identical except for the
files whose format issue 19 changes, which are checked value for value (``VALUE_CHECKED``).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import pytest

from neswap_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "fixtures" / "golden"
pytestmark = pytest.mark.slow

#: key/ files whose contents hold the output folder's path: compared with it put back.
WITH_OUT_PATH = ("key/config.toml", "key/report.json", "key/report.html")


def sha(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def golden(case: str) -> dict[str, str]:
    return json.loads((GOLDEN / case / "sha256.json").read_text())


def folder_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def old_out(case: str) -> str:
    """The output folder bc9925d was given (recorded in its key/config.toml)."""
    import tomllib

    return tomllib.loads((GOLDEN / case / "key" / "config.toml").read_text())["out"]


def assert_same_release(case: str, files: dict[str, bytes], out: str | None = None) -> None:
    """``files`` (relative path -> bytes) against the golden case (see the module docstring)."""
    expected = golden(case)
    files = {k: v for k, v in files.items() if not k.endswith("timings.json")}
    released = sorted(k for k in files if k.startswith("released/"))
    assert released == sorted(k for k in expected if k.startswith("released/"))
    for name in released:
        assert sha(files[name]) == expected[name], name
    for name, digest in expected.items():
        if not name.startswith("key/"):
            continue
        payload = files[name]
        if name in WITH_OUT_PATH and out is not None:
            payload = payload.replace(out.encode(), old_out(case).encode())
        if name.endswith("report.html"):  # the fixture keeps the app's chart as an empty script
            payload = re.sub(rb"<script.*?</script>", b"<script></script>", payload, flags=re.S)
        assert sha(payload) == digest, name


@pytest.fixture
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # run.toml's corpus is data/sample; the embedding cache is shared


@pytest.mark.parametrize("case", ["cli_paper", "cli_plan"])
def test_cli_release_is_the_golden_one(case, at_root, tmp_path):
    out = tmp_path / "out"
    assert main(["release", "--config", str(GOLDEN / case / "run.toml"), "--out", str(out)]) == 0
    assert_same_release(case, folder_files(out), str(out))


def test_cli_on_the_apps_run_toml_is_the_golden_one(at_root, tmp_path):
    out = tmp_path / "out"
    args = ["release", "--config", str(GOLDEN / "app_plan" / "run.toml"), "--out", str(out),
            "--accept-leaks", str(GOLDEN / "app_plan" / "key" / "leaks.csv")]
    assert main(args) == 0
    assert_same_release("cli_app_plan", folder_files(out), str(out))


# --- the app's Export page ------------------------------------------------------------------------
@pytest.fixture
def served(monkeypatch) -> dict:
    """file name -> bytes of every download the pages offer (deferred ones made on demand)."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    files: dict = {}
    add, add_deferred = MediaFileManager.add, MediaFileManager.add_deferred

    def record(self, data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        files[file_name] = data
        return add(self, data, mimetype, coordinates, file_name, is_for_static_download)

    def record_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        files[file_name] = data_callable
        return add_deferred(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add", record)
    monkeypatch.setattr(MediaFileManager, "add_deferred", record_deferred)
    return files


def page(name: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    at.switch_page(f"pages/{name}.py")
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    return at


def downloads(served: dict) -> dict[str, bytes]:
    """run.toml and the files of the released/ and key/ archives the Export page serves."""
    def get(suffix: str) -> bytes:
        name = next(n for n in served if n and n.endswith(suffix))
        data = served[name]() if callable(served[name]) else served[name]
        return data.encode() if isinstance(data, str) else bytes(data)

    files = {"run.toml": get("run.toml")}
    for suffix in ("-released.zip", "-key.zip"):
        archive = zipfile.ZipFile(io.BytesIO(get(suffix)))
        files.update({n: archive.read(n) for n in archive.namelist()})
    return files


def export(served: dict) -> dict[str, bytes]:
    at = page("6_export")
    for box in [b for b in at.checkbox if b.key and b.key.startswith("leak_")]:
        box.check()
    at.run()
    assert not at.exception and not at.error
    return downloads(served)


@pytest.fixture
def workspace(tmp_path, monkeypatch, at_root):
    from tests.app_workspace import small_workspace

    return small_workspace(tmp_path, monkeypatch)


def test_app_export_of_the_lines_release_is_the_golden_one(workspace, served):
    files = export(served)
    assert sha(files["run.toml"]) == golden("app_paper")["run.toml"]
    assert_same_release("app_paper", files)


def test_app_export_of_a_pinned_reviewed_plan_is_the_golden_one(workspace, served):
    import tomllib

    settings = tomllib.loads((GOLDEN / "app_plan" / "run.toml").read_text())
    workspace.update_settings({k: v for k, v in settings.items() if k.startswith("plan_")})
    swaps = page("4_swaps")
    box = swaps.selectbox(key="swaps_release")
    index = max(i for i, label in enumerate(box.options) if label.startswith("plan "))
    box.select_index(index).run()
    swaps.button(key="plan_use").click().run()
    radio = next(r for r in swaps.radio if r.key and r.key.startswith("pdec::"))
    radio.set_value("reject").run()
    assert not swaps.exception
    files = export(served)
    assert sha(files["run.toml"]) == golden("app_plan")["run.toml"]
    assert_same_release("app_plan", files)


def test_fixtures_are_small_and_complete():
    """Every case records its files' hashes; copies are kept only up to 64 kB each."""
    for case in ("cli_paper", "cli_plan", "app_paper", "app_plan", "cli_app_plan"):
        sums = golden(case)
        assert any(k.startswith("released/") for k in sums) and "key/pseudonyms.csv" in sums
        for path in (GOLDEN / case).rglob("*"):
            if path.is_file() and path.name != "sha256.json":
                rel = path.relative_to(GOLDEN / case).as_posix()
                assert path.stat().st_size <= 64_000 and sha(path.read_bytes()) == sums[rel], rel
