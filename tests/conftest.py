"""Test-session settings shared by every test file.

Caches stay in this checkout's ``.neswap-cache`` (the app's default folder too) unless
``NESWAP_CACHE_DIR`` says otherwise: the library's own default is the per-user cache folder
(``neswap_core.paths``), which test runs of several checkouts on one machine would share.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("NESWAP_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".neswap-cache"))

#: The longest test files (minutes each on 2 cores, from a fresh clone's cold caches:
#: ``benchmarks/ci_timeline.py``), longest first. ``make test`` hands whole files to two workers
#: (pytest-xdist ``--dist loadfile --no-loadscope-reorder``) in collection order; collected
#: alphabetically (or, xdist's default since 3.8, by number of tests) the Ray, golden and dev
#: files came last and one worker ran them while the other sat idle (188 s of a 25-minute run).
#: Longest first packs the two workers evenly.
LONGEST_FILES = (
    "test_golden.py", "test_attack_dev.py", "test_ray_engine.py", "test_cli.py",
    "test_onnx_embedding.py", "test_app_big_corpus.py", "test_app_verdict.py",
    "test_embedding_pool.py", "test_app_progress.py", "test_sweep_memory.py", "test_app_check.py",
    "test_e2e_first_load.py", "test_goals.py", "test_lineups.py", "test_long_documents.py",
    "test_attack_cli.py", "test_export_reproduces.py", "test_app_release.py", "test_disk_memo.py",
    "test_app_plans.py", "test_e2e_browser.py", "test_app_adaptive.py", "test_panel_columns.py",
)

#: Each pytest-xdist worker is one of ``make test``'s processes sharing the machine's cores: one
#: intra-op thread each for ONNX Runtime and PyTorch (their default takes every core per process,
#: and two workers' threads spin-wait against each other), as the prepare's own worker processes
#: do (``prepare/pipeline.py``). BLAS is pinned where it matters (``models/blas_threads.py``).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_collection_modifyitems(session, config, items) -> None:
    """The longest files first (``LONGEST_FILES``), the rest in their usual order."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: order within kept


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


def shared_onnx_export(cache_dir: str | Path, backend: str | None = None) -> None:
    """Link the machine's one-time ONNX export of MiniLM (made once in the test session's cache)
    into the fresh ``cache_dir``: a test that needs cold embedding and NER caches does not need
    to export the model again (~20 s each; the export is a per-machine step, SPEC §1, issue 14).
    ``backend``: the one the test runs (default: what "auto" resolves to on this machine);
    nothing is linked for a backend that does not use ONNX."""
    from neswap_core.config import DEFAULT_EMBEDDING_BACKEND, DEFAULT_EMBEDDING_MODEL
    from neswap_core.models.embedding import embedding_model_path, resolve_backend
    from neswap_core.models.onnx_minilm import onnx_model_file

    backend = resolve_backend(backend or DEFAULT_EMBEDDING_BACKEND)
    if not backend.startswith("onnx"):
        return
    shared = Path(os.environ["NESWAP_CACHE_DIR"])
    model = onnx_model_file(embedding_model_path(DEFAULT_EMBEDDING_MODEL), shared,
                            backend == "onnx-int8")  # exported here on first use only
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    link = Path(cache_dir) / "onnx"
    if not link.exists():
        link.symlink_to(model.parent.parent.resolve())


def sample_subset(folder: Path, n_docs: int = 1) -> Path:
    """The first ``n_docs`` bundled sample transcripts with their manifest, executives and
    aliases: a small real corpus for tests whose property does not depend on its size."""
    import shutil

    import pandas as pd

    sample = Path(__file__).resolve().parents[1] / "data" / "sample"
    (folder / "docs").mkdir(parents=True)
    manifest = pd.read_csv(sample / "manifest.csv").head(n_docs)
    manifest.to_csv(folder / "manifest.csv", index=False)
    for doc_id in manifest["doc_id"]:
        shutil.copy(sample / "docs" / f"{doc_id}.txt", folder / "docs")
    for name in ("executives.csv", "aliases.csv"):
        shutil.copy(sample / name, folder / name)
    return folder
