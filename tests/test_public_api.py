"""The public API (``neswap_core.__all__``, issue 19): small, lazy, and the one the CLI and the app
call; no import inside a function of the release path except the heavy packages named in
``neswap_core.LAZY_PACKAGES``."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import neswap_core

ROOT = Path(__file__).resolve().parents[1]
#: The release path's modules (the folders and files issue 19 rebuilt).
RELEASE_PATH = ["run_release.py", "cli.py", "config", "choose", "publish"]


def test_every_public_name_resolves_to_its_owner():
    assert set(neswap_core.__all__) - {"__version__"} == set(neswap_core._OWNERS)
    assert len(neswap_core.__all__) <= 32  # small enough to read in a minute
    for name, owner in neswap_core._OWNERS.items():
        module = importlib.import_module(f"neswap_core.{owner}")
        if name == "run_release":  # also the module's name: the module calls the function
            assert callable(neswap_core.run_release)
            continue
        assert getattr(neswap_core, name) is getattr(module, name), name


def test_run_release_is_callable_whether_the_module_was_imported_or_not(monkeypatch):
    from neswap_core import run_release as runner

    calls = []
    monkeypatch.setattr(importlib.import_module("neswap_core.run_release"), "run_release",
                        lambda *a, **k: calls.append(a) or "result")
    assert runner("prepared", "config", "embed") == "result" and calls == [("prepared", "config", "embed")]


def test_importing_neswap_core_loads_no_heavy_package():
    code = ("import sys, neswap_core; heavy = [m for m in neswap_core.LAZY_PACKAGES + ('pandas', "
            "'sklearn') if m in sys.modules]; print(heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_the_cli_and_the_app_call_the_public_release_path():
    from appkit import pipeline, views_export
    from neswap_core import cli

    assert cli.release_from_config is neswap_core.release_from_config
    assert cli.write_release is neswap_core.write_release
    # the Export page finishes through the package (imported on that call, not at the page's
    # draw: the runner imports scikit-learn, issue 21)
    assert "neswap_core.finish_release(" in Path(views_export.__file__).read_text()
    assert not hasattr(views_export, "finish_release")
    assert pipeline.build_candidates is neswap_core.build_candidates


def _function_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Import):
                    found += [(sub.lineno, alias.name) for alias in sub.names]
                elif isinstance(sub, ast.ImportFrom):
                    found.append((sub.lineno, "." * sub.level + (sub.module or "")))
    return found


def test_no_import_inside_a_function_of_the_release_path_but_heavy_packages():
    core = ROOT / "neswap_core"
    files = [p for entry in RELEASE_PATH
             for p in ([core / entry] if entry.endswith(".py") else sorted((core / entry).rglob("*.py")))]
    lazy = neswap_core.LAZY_PACKAGES
    bad = [f"{p.relative_to(ROOT)}:{line} imports {name}" for p in files
           for line, name in _function_imports(p)
           if not any(name == pkg or name.startswith(pkg + ".") for pkg in lazy)]
    assert bad == []
