"""The one writer of a release (SPEC §11): ``released/`` and ``key/`` from a ``ReleaseResult``.

The CLI's ``release`` and the app's Export page (download and write) both call it, so both
folders hold the same files for the same release:

* ``released/`` and the key tables (``pseudonyms.csv``, ``chunks.csv``, ``leaks.csv``,
  ``tab_annotations.json``): ``bundle.build_bundle`` (leak scan first);
* every other key/ file is one function of the result (``KEY_FILES``): the change log of the
  release (``swap_log.csv`` for the paper's sampler, ``changes.csv`` for a plan),
  ``decisions.csv`` (every change and the analyst's decision), ``corrections.json``,
  ``candidates.csv`` (the one candidate table), ``frontier.csv``, ``pitman.csv``,
  ``config.toml``, ``report.json``, ``report.html`` (the app adds its chart),
  ``attack.json`` + ``attack.csv``, ``audit.json`` and ``timings.json`` (seconds per stage; the
  one file whose contents differ between reruns);
* ``adaptive.json`` for a document-defence release with an attacker reading: the adaptive
  attacker on the written text (``adaptive_attack.release_adaptive``).

When no release could be made only ``NO_RELEASE_KEY_FILES`` are written, and no ``released/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..choose.result import ReleaseResult
from ..models.fit_processes import InBackground
from ..paths import resolve_cache_dir
from .adaptive_attack import adaptive_in_background, release_adaptive
from .bundle import KEY_DIR, RELEASED_DIR, Bundle, build_bundle
from .folders import replace_folders
from .protection import PendingAudit, audit_in_background, release_attack, release_audit
from .report import report_html, report_json


def _csv(frame) -> bytes:
    return frame.to_csv(index=False).encode("utf-8")


def _json(payload) -> bytes:
    return (json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n").encode("utf-8")


def _corrections(result: ReleaseResult) -> bytes:
    return (json.dumps(list(result.config.review.corrections), indent=2, default=str) + "\n").encode()


#: key/ file -> its contents, for a result with a release (report.html is added by key_files).
KEY_FILES: dict[str, Callable[[ReleaseResult], bytes]] = {
    "decisions.csv": lambda r: _csv(r.written_release().review),
    "corrections.json": _corrections,
    "candidates.csv": lambda r: _csv(r.candidates.table),
    "frontier.csv": lambda r: _csv(r.candidates.frontier()),
    "pitman.csv": lambda r: _csv(r.sweep.pitman_table(r.config.sweep.population)),
    "config.toml": lambda r: r.config.to_toml().encode("utf-8"),
    "report.json": lambda r: _json(report_json(r)),
    "timings.json": lambda r: _json(r.timings),
    "attack.json": lambda r: _json(release_attack(r)[0]),
    "attack.csv": lambda r: _csv(release_attack(r)[1]),
    "audit.json": lambda r: _json(release_audit(r)),
}
#: The key/ files written when no release could be made (nothing was swapped or measured).
NO_RELEASE_KEY_FILES = ("report.json", "config.toml", "candidates.csv", "pitman.csv",
                        "corrections.json", "timings.json")  # fmt: skip


def key_files(result: ReleaseResult, figures_html: Sequence[str] = (),
              adaptive_pending: InBackground | None = None,
              audit_pending: PendingAudit | None = None) -> dict[str, bytes]:
    """Every key/ file of the result besides build_bundle's (module docstring). The adaptive
    attacker and the audit compute in workers meanwhile (``adaptive_in_background``,
    ``audit_in_background``), unless the caller started them already (``*_pending``)."""
    if result.release is None:
        return {name: KEY_FILES[name](result) for name in NO_RELEASE_KEY_FILES}
    pending = adaptive_in_background(result) if adaptive_pending is None else adaptive_pending
    audit = audit_pending
    try:  # started inside: an error embedding its passages still ends the adaptive worker
        if audit is None:
            audit = audit_in_background(result)
        files = {result.release.log_name: _csv(result.release.log)}
        for name, make in KEY_FILES.items():
            if name == "audit.json":  # asked for last of all: the attack report ran beside it
                release_audit(result, audit)
            files[name] = make(result)
        adaptive = release_adaptive(result, pending)
    finally:
        for started in (pending, audit):
            if started is not None:
                started.close()
    if adaptive is not None:
        files["adaptive.json"] = _json(adaptive)
    files["report.json"] = _json(report_json(result, verdict=True))  # after the measures
    files["report.html"] = report_html(result, figures_html).encode("utf-8")
    return files


def release_bundle(result: ReleaseResult, with_key_files: bool = True) -> Bundle:
    """The released/ files and the key tables of the written release, leak-scanned, with every
    other key/ file when ``with_key_files`` (the app adds them when the key is downloaded)."""
    config = result.config
    started = with_key_files and result.release is not None
    pending = adaptive_in_background(result) if started else None
    audit = None
    try:  # the adaptive attacker and the audit compute in workers during the leak scan and the key files
        audit = audit_in_background(result) if started else None
        bundle = build_bundle(result.corpus, result.clean, result.written_release().chunks,
                              seed=config.bundle.bundle_seed, shuffle_chunks=config.bundle.shuffle_chunks,
                              publishable_columns=config.bundle.publishable_columns,
                              cache_dir=resolve_cache_dir(config.prepare.cache_dir))  # fmt: skip
        return bundle.with_key_files(key_files(result, adaptive_pending=pending, audit_pending=audit)) \
            if with_key_files else bundle
    finally:
        for work in (pending, audit):
            if work is not None:
                work.close()


def write_release(result: ReleaseResult, out: str | Path,
                  accepted: Iterable[tuple[str, ...]] = ()) -> Bundle | None:
    """Write the release under ``out`` (``released/`` + ``key/``, each replaced whole).

    Without a release only key/'s ``NO_RELEASE_KEY_FILES`` are written and any previous
    ``released/`` is removed. Raises ``LeakError`` after writing key/ when leak-scan hits are
    not accepted. Returns the bundle written (None without a release)."""
    if result.release is None:
        replace_folders(out, {RELEASED_DIR: None, KEY_DIR: key_files(result)})
        return None
    bundle = release_bundle(result)
    bundle.write(out, accepted)
    return bundle
