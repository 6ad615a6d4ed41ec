"""An installable package that runs from any folder (issue 23 item 5).

``pip install .`` and ``pip install -e .`` are proven in a throwaway virtual environment built
here (``--without-pip``; a ``.pth`` file lends it this interpreter's installed packages, so the
dependencies are not downloaded and the package itself is installed with ``--no-deps``): the
``neswap`` console script then prepares the bundled sample from a temporary folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from neswap_core import paths

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-dev.txt"])
def test_requirement_files_are_one_pinned_requirement_a_line(name):
    """pyproject.toml reads these files as the package's dependencies: a comment after a
    requirement would break ``pip install .``."""
    lines = [x.strip() for x in (ROOT / name).read_text().splitlines()]
    requirements = [Requirement(x) for x in lines if x and not x.startswith("#")]
    assert requirements and all(len(r.specifier) == 1 and str(r.specifier).startswith("==")
                                for r in requirements)


def test_pyproject_declares_the_package_its_script_and_reads_the_requirements():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "neswap"
    assert meta["project"]["scripts"] == {"neswap": "neswap_core.cli:main"}
    dynamic = meta["tool"]["setuptools"]["dynamic"]
    assert dynamic["dependencies"] == {"file": ["requirements.txt"]}
    assert dynamic["optional-dependencies"]["dev"] == {"file": ["requirements-dev.txt"]}


def test_the_package_is_typed_and_lint_type_checks_it():
    """PEP 561: ``py.typed`` ships in the package, so a checker reads neswap_core's hints;
    ``make lint`` runs mypy over the library configured in pyproject.toml."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["neswap_core"]
    assert (ROOT / "neswap_core" / "py.typed").is_file()
    assert meta["tool"]["mypy"]["files"] == ["neswap_core"]
    lint = (ROOT / "Makefile").read_text().split("\nlint:")[1].split("\n\n")[0]
    assert "$(BIN)/mypy" in lint


def test_relative_defaults_resolve_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert paths.resolve_corpus("data/sample") == paths.SAMPLE_CORPUS
    assert (paths.SAMPLE_CORPUS / "manifest.csv").is_file()
    (tmp_path / "data" / "sample").mkdir(parents=True)  # a folder of that name here wins
    assert paths.resolve_corpus("data/sample") == Path("data/sample")
    monkeypatch.delenv(paths.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert paths.resolve_cache_dir("") == tmp_path / "xdg" / "neswap"
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "mine"))
    assert paths.resolve_cache_dir("") == tmp_path / "mine"
    assert paths.resolve_cache_dir("custom") == Path("custom") and paths.resolve_cache_dir(None) is None


def _venv(tmp_path: Path) -> Path:
    """A fresh virtual environment that sees this interpreter's packages through a .pth file."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "_neswap_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _source_copy(tmp_path: Path) -> Path:
    """The checkout's tracked files (pip builds in the source folder: never in this one)."""
    src = tmp_path / "src"
    src.mkdir()
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    archive = subprocess.run(["tar", "-cf", "-", *files], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-xf", "-", "-C", str(src)], input=archive.stdout, check=True)
    return src


def _pip(venv: Path, *args: str) -> None:
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                           "--no-deps", "--no-build-isolation", *args],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_pip_install_gives_a_neswap_command_that_prepares_the_sample_anywhere(tmp_path):
    venv, src = _venv(tmp_path), _source_copy(tmp_path)
    _pip(venv, str(src))
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # NESWAP_CACHE_DIR: this checkout's (conftest)
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import neswap_core.paths as p; print(p.__file__, p.SAMPLE_CORPUS)"],
                           cwd=work, capture_output=True, text=True, check=True).stdout.split()
    assert where[0].startswith(str(venv)) and where[1].startswith(str(venv))  # installed copy
    assert (Path(where[0]).parent / "py.typed").is_file()  # its type hints are used by checkers
    done = subprocess.run([str(venv / "bin" / "neswap"), "prepare", "--out", "out"], cwd=work,
                          capture_output=True, text=True, env=env, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((work / "out" / "summary.json").read_text())
    assert summary["documents"] == 10 and summary["chunks"] > 50
    assert (work / "out" / "chunks.csv").is_file() and not (work / ".neswap-cache").exists()
    config = subprocess.run([str(venv / "bin" / "neswap"), "config"], cwd=work,
                            capture_output=True, text=True, check=True).stdout
    assert f'corpus = "{where[1]}"' in config and 'cache_dir = ""' in config


@pytest.mark.slow
def test_pip_install_editable_runs_from_the_source_folder(tmp_path):
    venv, src = _venv(tmp_path), _source_copy(tmp_path)
    _pip(venv, "-e", str(src))
    done = subprocess.run([str(venv / "bin" / "neswap"), "config"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f'corpus = "{src / "neswap_core" / "data" / "sample"}"' in done.stdout
    help_text = subprocess.run([str(venv / "bin" / "neswap"), "--help"], cwd=tmp_path,
                               capture_output=True, text=True, check=True).stdout
    assert "release" in help_text and "prepare" in help_text
