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
