"""Where neswap finds its bundled sample and keeps its caches, from any working folder (issue 23).

An installed ``neswap`` runs from any folder, so nothing may depend on the current one:

* **the bundled sample** (10 ECTSum calls, GPL-3.0, see its ``ATTRIBUTION.md``) ships inside
  the package as ``neswap_core/data/sample`` (in a checkout a link to ``data/sample``). A
  configuration that names it as ``data/sample`` (the default, and the app's ``run.toml``) or
  ``sample`` gets it wherever the command runs, unless that path exists where it runs;
* **caches** (embeddings, entities, the ONNX export, LLM answers) go to ``$NESWAP_CACHE_DIR``
  when set, else to the per-user cache folder (``$XDG_CACHE_HOME/neswap`` or
  ``~/.cache/neswap`` on Linux, ``~/Library/Caches/neswap`` on macOS, ``%LOCALAPPDATA%\\neswap\\
  Cache`` on Windows: the platformdirs conventions), never into the working folder. A
  ``cache_dir`` set in the configuration is used as given.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

#: The bundled sample corpus, inside the package.
SAMPLE_CORPUS = Path(__file__).resolve().parent / "data" / "sample"
#: How a configuration names the bundled sample.
SAMPLE_NAMES = frozenset({"data/sample", "sample"})
#: Environment variable that sets the cache folder (default: the per-user cache folder).
CACHE_ENV = "NESWAP_CACHE_DIR"


def resolve_corpus(value: str | Path) -> Path:
    """The corpus a configuration names: the path as given when it exists (relative to the
    working folder), else the bundled sample when it names it (``SAMPLE_NAMES``)."""
    path = Path(value).expanduser()
    if path.exists() or Path(value).as_posix().strip("/") not in SAMPLE_NAMES:
        return path
    return SAMPLE_CORPUS


def user_cache_dir() -> Path:
    """The per-user cache folder of neswap (platformdirs conventions, module docstring)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        return base / "neswap" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "neswap"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "neswap"


def user_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user data folder of neswap (platformdirs conventions): ``$XDG_DATA_HOME/neswap``
    or ``~/.local/share/neswap`` on Linux, ``~/Library/Application Support/neswap`` on macOS,
    ``%APPDATA%\\neswap`` on Windows. The app's workspace lives there (issue 20: never in the
    checkout or the working folder)."""
    env = os.environ if environ is None else environ
    if sys.platform == "win32":
        return Path(env.get("APPDATA") or Path.home() / "AppData" / "Roaming") / "neswap"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "neswap"
    return Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "neswap"


def default_cache_dir() -> Path:
    """``$NESWAP_CACHE_DIR`` when set, else ``user_cache_dir()``."""
    return Path(os.environ[CACHE_ENV]).expanduser() if os.environ.get(CACHE_ENV) else user_cache_dir()


def resolve_cache_dir(value: str | Path | None) -> Path | None:
    """The cache folder for a ``cache_dir`` setting: ``""`` is the default folder
    (``default_cache_dir``), ``None`` none (in memory only), anything else the path as given."""
    if value is None:
        return None
    return default_cache_dir() if str(value) == "" else Path(value).expanduser()
