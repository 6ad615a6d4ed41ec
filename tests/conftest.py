"""Test-session settings shared by every test file.

Caches stay in this checkout's ``.neswap-cache`` (the app's default folder too) unless
``NESWAP_CACHE_DIR`` says otherwise: the library's own default is the per-user cache folder
(``neswap_core.paths``), which test runs of several checkouts on one machine would share.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("NESWAP_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".neswap-cache"))
