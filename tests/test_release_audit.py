"""The written release's audit computed in a worker beside the attack report
(``publish.protection.audit_in_background``): the same audit.json, bit for bit, as computed in
the writer's own process, for a corpus audited whole and for one audited on a sample (the worker
reads its inputs memory-mapped, so a sampled audit reads only its rows)."""

from __future__ import annotations

import resource
import signal
import tempfile
from pathlib import Path

import numpy as np
import pytest

from neswap_core.cli import main
from neswap_core.config import RunConfig
from neswap_core.disk_memo import DiskMemo
from neswap_core.publish import protection

ROOT = Path(__file__).resolve().parents[1]


def _inputs(n_docs: int, per_doc: int, seed: int = 0) -> tuple:
    """(before, after, groups): documents as clusters on the sphere; the release moves a third."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_docs, 24))
    groups = [f"D{d:03d}" for d in range(n_docs) for _ in range(per_doc)]
    before = np.repeat(centres, per_doc, axis=0) + 0.6 * rng.normal(size=(n_docs * per_doc, 24))
    before = (before / np.linalg.norm(before, axis=1, keepdims=True)).astype(np.float32)
    after = before.copy()
    moved = rng.choice(len(after), len(after) // 3, replace=False)
    after[moved] = np.roll(after[moved], 1, axis=1)
    return before, after, groups


@pytest.mark.parametrize("n_docs, per_doc, sampled", [(6, 8, False), (130, 3, True)])
def test_the_audit_in_a_worker_is_the_audit_computed_here(n_docs, per_doc, sampled):
    """130 documents are more than the audit takes whole (``MAX_AUDITED_DOCUMENTS``): the
    worker's sample, statement and figures are the writer's own."""
    inputs = _inputs(n_docs, per_doc)
    pending = protection.PendingAudit(inputs)
    assert pending._work.started
    got = pending.result()
    assert got == protection._audit_of(*inputs)
    assert ("sample" in got["before"]) == sampled


def test_a_pending_audit_closed_unread_leaves_no_inputs_behind():
    pending = protection.PendingAudit(_inputs(3, 4))
    folder = Path(pending._folder.name)
    assert any(folder.iterdir())
    pending.close()
    assert not folder.exists()


@pytest.mark.slow
def test_the_cli_release_writes_the_same_audit_with_the_worker_as_without(tmp_path, monkeypatch):
    """The sample corpus (fewer passages than ``AUDIT_WORKER_MIN_CHUNKS``) with the worker
    asked for, then again computed here (the audit's memo kept nowhere, so both compute it):
    every key/ and released/ byte the same but timings.json."""
    monkeypatch.chdir(ROOT)  # the embedding cache .neswap-cache is shared with the other tests
    cfg = RunConfig.of(corpus="data/sample", n_components=2, n_init=1, max_swaps=4, plan_rounds=0,
                       document_levels=[], max_document_accuracy=1.0)  # fmt: skip
    cfg.save(tmp_path / "run.toml")
    memo = protection._memo
    monkeypatch.setattr(protection, "_memo",
                        lambda result, kind: DiskMemo(None, kind) if kind == "audits" else memo(result, kind))
    started = []
    real = protection.PendingAudit

    def counted(inputs):
        started.append(len(inputs[2]))
        return real(inputs)

    out = tmp_path / "out"  # one folder: config.toml and report.json name it

    def files() -> dict[str, bytes]:
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
                if p.is_file() and p.name != "timings.json"}  # fmt: skip

    monkeypatch.setattr(protection, "PendingAudit", counted)
    monkeypatch.setattr(protection, "AUDIT_WORKER_MIN_CHUNKS", 0)
    assert main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(out)]) == 0
    assert len(started) == 1 and started[0] > 0
    worker = files()
    monkeypatch.setattr(protection, "AUDIT_WORKER_MIN_CHUNKS", 10**9)
    assert main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(out)]) == 0
    assert len(started) == 1
    here = files()
    assert "key/audit.json" in worker
    assert worker == here
    # no temporary folder for the worker's inputs (a path under a regular file): computed here
    monkeypatch.setattr(protection, "AUDIT_WORKER_MIN_CHUNKS", 0)
    (tmp_path / "a_file").write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "a_file" / "tmp"))
    assert main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(out)]) == 0
    assert len(started) > 1  # tried (once by each of the writer's entries while still unknown)
    assert files() == here


def test_inputs_that_do_not_fit_on_the_temporary_disk_leave_nothing_behind(tmp_path, monkeypatch):
    """A temporary disk too small for the audit's inputs (a file size limit: the write fails as
    on a full disk): an OSError for ``audit_in_background`` to fall back on, no folder left."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    inputs = _inputs(40, 10)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, old_limit[1]))
    try:
        with pytest.raises(OSError):
            protection.PendingAudit(inputs)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert list(tmp_path.iterdir()) == []


class _Started:
    """Records that the writer ended a worker it started."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("entry", ["key_files", "release_bundle"])
def test_an_error_starting_the_audit_still_ends_the_adaptive_worker(monkeypatch, entry):
    """Starting the audit embeds the changed passages, which may fail (a model missing, a bad
    position): the adaptive attacker's worker, started first, is still ended."""
    from types import SimpleNamespace

    from neswap_core.publish import writer

    adaptive = _Started()

    def fails(result):
        raise RuntimeError("embedding failed")

    monkeypatch.setattr(writer, "adaptive_in_background", lambda result: adaptive)
    monkeypatch.setattr(writer, "audit_in_background", fails)
    result = SimpleNamespace(release=object(), config=None)
    with pytest.raises(RuntimeError, match="embedding failed"):
        getattr(writer, entry)(result)
    assert adaptive.closed
