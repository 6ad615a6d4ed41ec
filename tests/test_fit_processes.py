"""Independent fits on every core are the serial fits, bit for bit (models/fit_processes.py).

The panel's families, the in-corpus attacker's folds and the document defender's members are
fitted in spawned worker processes on a large reading; each test forces the workers on a small
corpus (``MIN_TEXTS`` 0) and compares every fitted number with the fits made one after the other
in this process.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest

from neswap_core.generate.document_budget import DocumentDefender
from neswap_core.measure.attack import CrossFittedAttacker
from neswap_core.measure.panel import AttackerPanel
from neswap_core.models import fit_processes
from neswap_core.models.fit_processes import run_in_processes


def _corpus(n: int = 600, classes: int = 6, seed: int = 1):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    texts = [" ".join([f"own{y}x{k}" for k in rng.integers(0, 30, 8)]
                      + [f"w{k}" for k in rng.integers(0, 400, 20)]) for y in labels]  # fmt: skip
    vectors = rng.normal(size=(n, 32)) + labels[:, None] * 0.05
    return texts, [f"c{y}" for y in labels], [f"d{i // 6}" for i in range(n)], vectors


@pytest.fixture
def always_in_processes(monkeypatch):
    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 0)


def _getpid(_: int) -> int:
    return os.getpid()


def test_the_calls_run_in_other_processes_and_keep_their_order(always_in_processes):
    calls = [functools.partial(_getpid, k) for k in range(3)]
    pids = run_in_processes(calls, fit_processes.fit_processes(10, len(calls), processes=2))
    assert len(pids) == 3 and os.getpid() not in pids
    assert run_in_processes(calls, 0) == [os.getpid()] * 3  # 0 processes: here


def test_small_fits_stay_in_this_process():
    assert fit_processes.fit_processes(fit_processes.MIN_TEXTS - 1, 4, processes=2) == 0
    assert fit_processes.fit_processes(fit_processes.MIN_TEXTS, 1, processes=2) == 0
    assert fit_processes.fit_processes(fit_processes.MIN_TEXTS, 4, processes=1) == 0
    assert fit_processes.fit_processes(fit_processes.MIN_TEXTS, 4, processes=2) == 2


def test_a_panel_fitted_in_processes_is_the_serial_panel(always_in_processes):
    texts, labels, docs, vectors = _corpus()
    families = ("word", "char", "embedding", "retrieval")
    serial = AttackerPanel(families, processes=1).fit(texts, labels, docs, vectors)
    pooled = AttackerPanel(families, processes=2).fit(texts, labels, docs, vectors)
    assert list(pooled.families_) == list(families)
    for name in ("word", "char", "embedding"):
        assert pooled.families_[name].clf_.coef_.tobytes() == serial.families_[name].clf_.coef_.tobytes()
    assert (pooled.families_["retrieval"].profiles_ != serial.families_["retrieval"].profiles_).nnz == 0
    a = serial.scorer(texts, labels, docs, vectors).score({}).families
    b = pooled.scorer(texts, labels, docs, vectors).score({}).families
    assert {n: (s.chunk_accuracy, s.document_accuracy) for n, s in a.items()} == \
        {n: (s.chunk_accuracy, s.document_accuracy) for n, s in b.items()}
    assert all(np.array_equal(a[n].chunk_named, b[n].chunk_named) for n in a)


def test_the_in_corpus_attacker_s_folds_fitted_in_processes_are_the_serial_folds(monkeypatch):
    texts, labels, docs, _ = _corpus()
    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 10**9)
    serial = CrossFittedAttacker(random_state=3).fit(texts, labels, docs)
    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 0)
    pooled = CrossFittedAttacker(random_state=3).fit(texts, labels, docs)
    assert pooled.oof_log_proba_.tobytes() == serial.oof_log_proba_.tobytes()
    assert [m.model_.coef_.tobytes() for m in pooled.models_] == [m.model_.coef_.tobytes() for m in serial.models_]


def test_the_document_defender_s_members_fitted_in_processes_are_the_serial_members(monkeypatch):
    texts, labels, docs, _ = _corpus()
    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 10**9)
    serial = DocumentDefender(random_state=0).fit(texts, labels, docs)
    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 0)
    pooled = DocumentDefender(random_state=0).fit(texts, labels, docs)
    assert [(n, h) for n, h, _ in pooled.members_] == [(n, h) for n, h, _ in serial.members_]
    for (_, _, a), (_, _, b) in zip(pooled.members_, serial.members_, strict=True):
        if hasattr(a, "clf_"):
            assert a.clf_.coef_.tobytes() == b.clf_.coef_.tobytes()
        else:
            assert (a.profiles_ != b.profiles_).nnz == 0
    assert pooled.fingerprint_ == serial.fingerprint_


def _report_processes(queue) -> None:
    queue.put(fit_processes.fit_processes(10**6, 4, processes=2))


def test_a_daemonic_worker_fits_in_its_own_process():
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    worker = context.Process(target=_report_processes, args=(queue,), daemon=True)
    worker.start()
    assert queue.get(timeout=120) == 0  # it may not start processes of its own
    worker.join(timeout=120)
    assert fit_processes.fit_processes(10**6, 4, processes=2) == 2  # this process may


def test_side_by_side_runs_both_batches_at_once_and_keeps_their_order(always_in_processes):
    """Once the first batch has queued its fits, each side waits at a barrier for the other:
    one after the other would break it."""
    import threading

    from neswap_core.models.fit_processes import side_by_side

    barrier = threading.Barrier(2, timeout=60)

    def first():
        run_in_processes([functools.partial(_getpid, i) for i in range(2)], 2)
        barrier.wait()
        return "panel"

    def second():
        barrier.wait()
        return "folds"

    assert side_by_side(first, second) == ("panel", "folds")
    assert side_by_side(None, lambda: "folds") == (None, "folds")
    assert side_by_side(lambda: "panel", None) == ("panel", None)


def test_side_by_side_raises_either_sides_error_after_both_stopped(always_in_processes):
    """The second side fails while the first is still running (it queued its fits, which starts
    the second, then waits for the failure): the error comes once the first has finished too."""
    import threading

    from neswap_core.models.fit_processes import side_by_side

    done = threading.Event()
    stopped = []

    def slow_ok():
        run_in_processes([functools.partial(_getpid, i) for i in range(2)], 2)  # starts the second
        assert done.wait(60)  # the second side has failed by now
        stopped.append(1)
        return 1

    def fails():
        done.set()
        raise ValueError("second side")

    with pytest.raises(ValueError, match="second side"):
        side_by_side(slow_ok, fails)
    assert stopped == [1]  # raised after the first side had stopped

    def first_fails():
        raise ValueError("first side")

    finished = []
    with pytest.raises(ValueError, match="first side"):
        side_by_side(first_fails, lambda: finished.append(1))
    assert finished == []  # failed before queueing anything: the second batch never started


def test_gated_fits_are_made_ready_and_submitted_only_once_open_the_first_batch_first(always_in_processes,
                                                                                       monkeypatch):
    """``run_release`` prepares the attackers' fits at the walk's start and lets them go once
    the defence has scored (issue 21): before the gate opens both batches have made their calls
    and nothing reached the workers; after, the first batch's calls are queued before the
    second's, as without a gate, and the results are the same."""
    import threading

    from neswap_core.models.fit_processes import FitGate, _SharedPool, side_by_side

    queued: list[int] = []
    real = _SharedPool._submit
    monkeypatch.setattr(_SharedPool, "_submit", lambda self, calls: (queued.append(len(calls)), real(self, calls))[1])
    ready = {"first": threading.Event(), "second": threading.Event()}

    def batch(name: str, n: int):
        def fit():
            ready[name].set()
            return sorted(run_in_processes([functools.partial(_getpid, i) for i in range(n)], 2))
        return fit

    gate = FitGate()
    out: list = []
    runner = threading.Thread(target=lambda: out.append(side_by_side(batch("first", 2), batch("second", 3), gate)))
    runner.start()
    assert ready["first"].wait(60) and ready["second"].wait(60)  # both prepared, both held
    assert queued == [] and runner.is_alive()
    gate.open()
    runner.join(120)
    assert queued == [2, 3]  # the first batch's calls first
    (first, second), = out
    assert len(first) == 2 and len(second) == 3 and os.getpid() not in first + second


def _touch(path: str) -> int:
    Path(path).touch()
    return os.getpid()


def test_held_fits_let_go_never_run_and_never_hang(always_in_processes, tmp_path):
    """A run that stops before the defence has scored closes its prepared fits: the held
    submissions raise ``FitsCancelled``, nothing is fitted (no call leaves its file) and
    ``close`` returns."""
    import threading

    from neswap_core.choose.scorers import AttackerFits
    from neswap_core.models.fit_processes import FitGate, FitsCancelled, side_by_side

    def fit():
        return run_in_processes([functools.partial(_touch, str(tmp_path / f"fit{i}")) for i in range(2)], 2)

    def ran() -> list:
        return sorted(tmp_path.iterdir())

    gate = FitGate()
    errors: list = []

    def run():
        try:
            side_by_side(fit, fit, gate)
        except FitsCancelled as error:
            errors.append(error)

    runner = threading.Thread(target=run)
    runner.start()
    gate.cancel()
    runner.join(120)
    assert not runner.is_alive() and len(errors) == 1 and ran() == []
    if (os.cpu_count() or 1) < 2:
        return  # AttackerFits runs nothing ahead on one CPU
    fits = AttackerFits(fit, fit, 10**6)
    fits.prepare()
    assert fits.started
    fits.close()  # held at the gate: let go without fitting
    assert ran() == []
    again = AttackerFits(fit, fit, 10**6)
    again.prepare()
    assert len(again.result()) == 2 and len(ran()) == 2  # never let go by the walk: result() does


def _started(tag: str, seconds: float) -> tuple[str, int, float]:
    import time

    start = time.monotonic()  # one clock for every process of the machine
    time.sleep(seconds)
    return tag, os.getpid(), start


def test_side_by_side_shares_one_pool_and_queues_the_first_batch_first(always_in_processes):
    """Both batches run in one pool of one worker per CPU (two pools would start four workers
    on two cores), and the second is queued after the first: its calls start after the first
    batch's first calls (the long fit gets a core to itself)."""
    from neswap_core.models.fit_processes import side_by_side

    first = [functools.partial(_started, f"a{i}", 1.0) for i in range(2)]
    second = [functools.partial(_started, f"b{i}", 0.2) for i in range(3)]
    a, b = side_by_side(lambda: run_in_processes(first, 2), lambda: run_in_processes(second, 2))
    assert [t for t, _, _ in a] == ["a0", "a1"] and [t for t, _, _ in b] == ["b0", "b1", "b2"]
    cpus = os.cpu_count() or 1
    assert len({pid for _, pid, _ in a + b}) <= cpus
    assert all(pid != os.getpid() for _, pid, _ in a + b)
    assert min(s for _, _, s in b) >= max(s for _, _, s in a)  # a0 and a1 took both workers first


def test_side_by_side_fits_are_the_one_after_the_other_fits():
    """The panel (in workers) and the in-corpus folds (here, in a thread, one BLAS thread under
    the process's lock) fitted at once give the bits of each fitted alone."""
    from neswap_core.models.fit_processes import side_by_side

    texts, labels, ids, vectors = _corpus()
    alone_panel = AttackerPanel(("char", "embedding")).fit(texts, labels, ids, vectors)
    alone_folds = CrossFittedAttacker(random_state=0).fit(texts, labels, ids)
    panel, folds = side_by_side(
        lambda: AttackerPanel(("char", "embedding"), processes=2).fit(texts, labels, ids, vectors),
        lambda: CrossFittedAttacker(random_state=0).fit(texts, labels, ids))
    for name in ("char", "embedding"):
        a, b = alone_panel.families_[name], panel.families_[name]
        assert a.clf_.coef_.tobytes() == b.clf_.coef_.tobytes(), name
    for a, b in zip(alone_folds.models_, folds.models_, strict=True):
        assert a.model_.coef_.tobytes() == b.model_.coef_.tobytes()
    np.testing.assert_array_equal(alone_folds.oof_log_proba_, folds.oof_log_proba_)


def _fails() -> None:
    raise ValueError("no reading units")


def _fit_here_and_in_workers() -> tuple[int, list[int]]:
    """The background worker's pid, and its own fit workers' (it may start processes)."""
    return os.getpid(), run_in_processes([functools.partial(_getpid, i) for i in range(2)], processes=2)


def test_in_background_computes_in_another_process_that_may_start_its_own_workers():
    pending = fit_processes.InBackground(_fit_here_and_in_workers)
    assert pending.started
    worker, inner = pending.result()
    assert worker != os.getpid()
    assert len(inner) == 2 and worker not in inner and os.getpid() not in inner
    assert not pending.started  # closed once read


def test_in_background_not_started_computes_here_and_raises_the_error_here():
    pending = fit_processes.InBackground(functools.partial(_getpid, 0), start=False)
    assert not pending.started
    assert pending.result() == os.getpid()
    failing = fit_processes.InBackground(_fails)
    with pytest.raises(ValueError, match="no reading units"):
        failing.result()


def _niceness() -> int:
    return os.nice(0)


def test_in_background_with_a_niceness_computes_at_that_lower_priority():
    """The writer's audit worker takes only the cores the rest leave idle (``niceness``)."""
    here = os.nice(0)
    assert fit_processes.InBackground(_niceness).result() == here
    assert fit_processes.InBackground(_niceness, niceness=3).result() == min(here + 3, 19)
    assert os.nice(0) == here  # this process's own priority untouched
    assert fit_processes.InBackground(_niceness, start=False, niceness=3).result() == here


def test_in_background_closed_before_its_result_ends_its_worker():
    pending = fit_processes.InBackground(functools.partial(_sleeps, 60.0))
    processes = list(pending.pool._processes.values())
    assert processes
    pending.close()
    assert all(not p.is_alive() for p in processes)


def _sleeps(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds
