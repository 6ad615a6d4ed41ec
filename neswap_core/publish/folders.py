"""Writing released/ and key/ safely (issue 23 item 7): whole folders or nothing.

``replace_folders(out, {"released": files, "key": files})`` writes every folder into a
temporary folder beside them (``out/.neswap-partial-<id>``), and only when all files are written
moves them into place: the previous folders are moved aside, the new ones moved in, the old ones
deleted. Until then the previous release stays intact; afterwards it is replaced whole, stale
files included. A folder given as None is removed (a release whose leak scan blocks
``released/`` leaves no old ``released/`` beside its new ``key/``). Ctrl-C is held back during
the few renames of the swap, and any error rolls them back, so an interrupt leaves either the
old release or the new one, never a mix. ``check_writable`` tells before any work whether
``out`` can be written.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..errors import ConfigError
from .export import write_files

PARTIAL_PREFIX = ".neswap-partial-"
OLD_PREFIX = ".neswap-old-"


def check_writable(out: str | Path) -> Path:
    """Create ``out`` if needed and make sure files can be written in it (``ConfigError`` if not)."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=PARTIAL_PREFIX):
            pass
    except OSError as exc:
        raise ConfigError(
            f"The output folder {out} cannot be written ({exc.strerror or exc}). Choose a folder "
            "you can write to with --out (or `out` in run.toml)."
        ) from exc
    return out


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back (delivered after the block) in the main thread."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def replace_folders(out: str | Path, folders: Mapping[str, Mapping[str, bytes] | None]) -> list[Path]:
    """Replace the named sub-folders of ``out`` whole (module docstring); returns the new files."""
    out = check_writable(out)
    partial = Path(tempfile.mkdtemp(prefix=PARTIAL_PREFIX, dir=out))
    old = Path(tempfile.mkdtemp(prefix=OLD_PREFIX, dir=out))
    written: list[Path] = []
    try:
        for name, files in folders.items():
            if files is not None:
                written += [out / p.relative_to(partial) for p in write_files(files, partial / name)]
        moved: list[str] = []
        with _signals_held():
            try:
                for name in folders:
                    if (out / name).exists():
                        os.replace(out / name, old / name)
                    moved.append(name)
                    if folders[name] is not None:
                        os.replace(partial / name, out / name)
            except BaseException:
                for name in moved:  # roll back: the old folders return
                    shutil.rmtree(out / name, ignore_errors=True)
                    if (old / name).exists():
                        os.replace(old / name, out / name)
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return written
