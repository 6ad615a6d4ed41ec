"""Disk memos and cached pickles are read back with the cyclic collector paused (issue 21: a
restarted app read 100k chunks back in 4.3 s, 1.1 s with the collector paused)."""

from __future__ import annotations

import gc
import threading

import numpy as np

from neswap_core import fast_unpickle, mapped_pickle
from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.disk_memo import DiskMemo


def _chunks(n: int) -> list[Chunk]:
    return [Chunk(f"D{i // 10}#{i % 10:04d}", f"D{i // 10}", i % 10, f"text {i} of Acme", f"C{i % 7}",
                  (EntitySpan(13, 17, "ORG", "Organization", "Acme"),)) for i in range(n)]


def _collections_during(fn):
    seen = []

    def count(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        value = fn()
    finally:
        gc.callbacks.remove(count)
    return value, len(seen)


def test_a_disk_memo_reads_many_objects_back_without_a_collection(tmp_path):
    chunks = _chunks(20_000)
    memo = DiskMemo(tmp_path, "chunks")
    memo.put("k", chunks)
    (found, value), collections = _collections_during(lambda: memo.get("k"))
    assert found and value == chunks
    assert collections <= 1  # at most one, started by the file handling around the load
    # the same load with the collector running collects many times (what the pause saves)
    path = tmp_path / "memo" / "chunks" / "k.pkl"
    import pickle

    _, plain = _collections_during(lambda: pickle.loads(path.read_bytes()))
    assert plain > 20, plain
    assert gc.isenabled()


def test_the_objects_read_back_are_not_left_young_for_the_next_allocation_to_scan(tmp_path):
    """Resuming the collector left every new object in the youngest generation: the first
    allocation after the load scanned them all (0.35 s for 100k chunks)."""
    import pickle

    data = pickle.dumps(_chunks(20_000))
    gc.collect()
    value, collections = _collections_during(lambda: fast_unpickle.loads(data))
    assert len(value) == 20_000
    assert collections == 0  # not even the one of the ~60,000 young objects when it resumes
    assert gc.get_count()[0] < 1_000


def test_a_mapped_pickle_reads_back_without_a_collection(tmp_path):
    value = {"chunks": _chunks(5_000), "x": np.arange(12.0).reshape(3, 4)}
    mapped_pickle.dump(value, tmp_path / "v.map")
    loaded, collections = _collections_during(lambda: mapped_pickle.load(tmp_path / "v.map"))
    assert collections <= 1
    assert loaded["chunks"] == value["chunks"] and np.array_equal(loaded["x"], value["x"])


def test_the_pause_restores_the_collector_as_it_was_and_is_shared_by_threads():
    assert gc.isenabled()
    with fast_unpickle.collector_paused():
        assert not gc.isenabled()
        with fast_unpickle.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still loads
    assert gc.isenabled()
    gc.disable()
    try:
        with fast_unpickle.collector_paused():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()
    # two threads loading at once: the collector comes back only when both are done
    inside, release = threading.Barrier(2), threading.Event()
    states = []

    def load():
        with fast_unpickle.collector_paused():
            inside.wait()
            release.wait()
        states.append(gc.isenabled())

    first = threading.Thread(target=load)
    first.start()
    with fast_unpickle.collector_paused():
        inside.wait()
        release.set()
        first.join()
        assert not gc.isenabled()  # the other thread finished, this one still loads
    assert gc.isenabled()
