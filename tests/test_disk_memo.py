"""Results kept on disk by their inputs (issue 21: a warm re-run recomputes nothing).

The memo's own rules (keys, damaged and unpicklable entries, pruning), then the release run
twice on sample transcripts: the second run fits, defends and measures nothing and writes the
same bytes; a changed setting recomputes what depends on it and only that."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import neswap_core.disk_memo as disk_memo
from neswap_core.config import RunConfig
from neswap_core.disk_memo import DiskMemo, content_key, texts_digest
from tests.conftest import sample_subset


def test_content_key_is_a_function_of_the_parts_and_the_code(monkeypatch):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = content_key("run", {"b": 1, "a": [1.5, None, True]}, x, b"raw")
    assert a == content_key("run", {"a": [1.5, None, True], "b": 1}, x.copy(), b"raw")  # dict order
    assert a != content_key("run", {"b": 1, "a": [1.5, None, True]}, x.astype(np.float64), b"raw")
    assert a != content_key("run", {"b": 2, "a": [1.5, None, True]}, x, b"raw")
    assert content_key(["ab", "c"]) != content_key(["a", "bc"])  # boundaries count
    assert texts_digest(["ab", "c"]) != texts_digest(["a", "bc"])
    with pytest.raises(TypeError):
        content_key(object())
    monkeypatch.setattr(disk_memo, "code_fingerprint", lambda: "another version of the library")
    assert content_key("run", {"b": 1, "a": [1.5, None, True]}, x, b"raw") != a


def test_a_corpus_digest_names_every_field_of_every_document_once_per_corpus(monkeypatch):
    """The cleaned corpus is kept under ``corpus_digest`` (it was ``repr(corpus)``: 0.44 s at
    100k passages on every page's first draw): any field of any document, the protected column
    and the order change it; equal corpora built apart agree; a corpus is hashed once."""
    import hashlib
    from dataclasses import fields, replace

    import neswap_core.corpus as corpus_mod
    from neswap_core.corpus import Corpus, Document, corpus_digest

    def build() -> Corpus:
        return Corpus((Document("a", "Acme grew.", {"company": "Acme", "ticker": "ACM"}, ("Jo Doe",),
                                ("Acme Inc",), "a.txt", "text", None, ("Al Bee",)),
                       Document("b", "Globex fell.", {"company": "Globex"})))

    base = build()
    assert corpus_digest(base) == corpus_digest(build())
    changed = {"doc_id": "z", "text": "Acme grew!", "metadata": {"company": "Acme", "ticker": "ACX"},
               "executives": ("Jo Dee",), "aliases": (), "source": "b.txt", "layout": "table",
               "q_and_a": "Q?", "analysts": ()}
    assert set(changed) == {f.name for f in fields(Document)}  # a new field must be named here
    for name, value in changed.items():
        other = base.with_documents([replace(base.documents[0], **{name: value}), base.documents[1]])
        assert corpus_digest(other) != corpus_digest(base), name
    assert corpus_digest(replace(base, protect="ticker")) != corpus_digest(base)
    assert corpus_digest(base.with_documents(base.documents[::-1])) != corpus_digest(base)
    calls, sha256 = [], hashlib.sha256
    monkeypatch.setattr(corpus_mod.hashlib, "sha256", lambda *a: calls.append(1) or sha256(*a))
    fresh = build()
    corpus_digest(fresh), corpus_digest(fresh)
    assert len(calls) == 1


def test_memo_keeps_reads_and_recovers(tmp_path):
    memo = DiskMemo(tmp_path, "things", max_entries=3)
    calls = []

    def compute(v):
        calls.append(v)
        return {"value": v}

    assert memo.get_or_compute("k1", lambda: compute(1)) == {"value": 1}
    assert memo.get_or_compute("k1", lambda: compute(99)) == {"value": 1}  # read, not computed
    assert calls == [1]
    # a damaged entry is recomputed and replaced
    (tmp_path / "memo" / "things" / "k1.pkl").write_bytes(b"not a pickle")
    assert memo.get_or_compute("k1", lambda: compute(2)) == {"value": 2}
    assert pickle.loads((tmp_path / "memo" / "things" / "k1.pkl").read_bytes()) == {"value": 2}
    # a value that cannot be pickled is returned and not kept; no temporary file is left
    assert memo.get_or_compute("k2", lambda: (lambda: 3))() == 3
    assert sorted(p.name for p in (tmp_path / "memo" / "things").iterdir()) == ["k1.pkl"]
    # key None and cache_dir None compute every time
    assert memo.get_or_compute(None, lambda: compute(5)) == {"value": 5}
    assert DiskMemo(None, "things").get_or_compute("k1", lambda: compute(6)) == {"value": 6}
    assert calls == [1, 2, 5, 6]


def test_a_mapped_memo_reads_its_arrays_back_mapped_and_read_only(tmp_path):
    """``DiskMemo(mapped=True)`` (issue 21: 155 MB of vectors copied on every restart at 100k):
    the value comes back equal, its arrays read-only views of the file — in the run that
    computes it too, so that run does not hold its own copy (the in-corpus attacker's 1.3 GB of
    arrays at 100,000 passages); a damaged entry is recomputed."""
    import mmap

    def mapped(x) -> bool:
        base = x
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)

    memo = DiskMemo(tmp_path, "vectors", mapped=True)
    value = {"x": np.arange(12, dtype=np.float32).reshape(3, 4), "name": "v"}
    first = memo.get_or_compute("k", lambda: value)
    assert first is not value and first["name"] == "v" and not first["x"].flags.writeable
    assert mapped(first["x"])
    np.testing.assert_array_equal(first["x"], value["x"])
    found, back = memo.get("k")
    assert found and back["name"] == "v" and not back["x"].flags.writeable
    np.testing.assert_array_equal(back["x"], value["x"])
    assert mapped(back["x"])
    # a memo that keeps nothing (no folder) hands the computed value back as it is
    assert DiskMemo(None, "vectors", mapped=True).get_or_compute("k", lambda: value) is value
    (tmp_path / "memo" / "vectors" / "k.pkl").write_bytes(b"not a mapped pickle")
    assert memo.get("k") == (False, None)
    assert memo.get_or_compute("k", lambda: {"x": np.zeros(2)})["x"].tolist() == [0.0, 0.0]


class _CountedSha:
    """``hashlib.sha256`` recording how many bytes it was fed (the array hashing it does)."""

    def __init__(self, monkeypatch) -> None:
        import hashlib

        self.fed, real = [], hashlib.sha256
        counted = self

        class Sha:
            def __init__(self, data=b""):
                self.h = real()
                self.update(data)

            def update(self, data):
                counted.fed.append(memoryview(data).nbytes)
                self.h.update(data)

            def hexdigest(self):
                return self.h.hexdigest()

        monkeypatch.setattr(disk_memo.hashlib, "sha256", Sha)

    def big(self) -> int:
        return sum(1 for n in self.fed if n >= disk_memo.KNOWN_ARRAY_BYTES)


def test_a_read_only_array_is_hashed_once_and_a_writable_one_every_time(monkeypatch):
    """Issue 21: a page's keys hashed the same 155 MB of vectors (100k passages) several times.
    The key is the same whether the digest is remembered or not; an array that may change in
    place (writable, or a read-only view of a writable one) is hashed on every call."""
    x = np.random.default_rng(0).random((1000, 384)).astype(np.float32)
    plain = content_key("run", x)
    sha = _CountedSha(monkeypatch)
    assert content_key("run", x) == plain and content_key("run", x) == plain
    assert sha.big() == 2  # writable: every time
    view = x.view()
    view.setflags(write=False)
    assert content_key("run", view) == content_key("run", view) == plain and sha.big() == 4
    frozen = x.copy()
    frozen.setflags(write=False)
    assert content_key("run", frozen) == content_key("run", frozen) == plain and sha.big() == 5
    assert content_key("run", frozen[::2]) != plain  # another array, hashed
    assert content_key("run", np.ascontiguousarray(x.T)) != plain


def test_remembered_digests_keep_no_array_alive():
    """The digests' table holds its arrays by weak reference: an array the app's memo let go
    (155 MB at 100k) is freed, and a new array at its address is hashed, not taken for it."""
    import gc
    import weakref

    x = np.random.default_rng(2).random((1000, 384)).astype(np.float32)
    x.setflags(write=False)
    first = disk_memo.array_digest(x)
    gone = weakref.ref(x)
    del x
    gc.collect()
    assert gone() is None
    y = np.zeros((1000, 384), np.float32)
    y.setflags(write=False)
    assert disk_memo.array_digest(y) != first


def test_a_mapped_memo_entry_is_read_back_with_its_arrays_digest(tmp_path, monkeypatch):
    """Issue 21: the pre-swap vectors read back by a restarted server were hashed again for
    every key of its first page (0.4 s at 100k). Kept with their digest, they are not; the
    key is the one the array's bytes give."""
    x = np.random.default_rng(1).random((1000, 384)).astype(np.float32)
    plain = content_key("run", x)
    memo = DiskMemo(tmp_path, "vectors", mapped=True)
    memo.put("k", x)
    sha = _CountedSha(monkeypatch)
    found, back = memo.get("k")
    assert found and not back.flags.writeable
    assert content_key("run", back) == plain and sha.big() == 0


def test_a_mapped_pickle_without_meta_still_loads(tmp_path):
    """Entries written before the header held the caller's meta load with an empty one."""
    import pickle as pk

    from neswap_core import mapped_pickle

    path = tmp_path / "old.pkl"
    mapped_pickle.dump({"a": np.arange(3)}, path, {"array_digest": "x"})
    assert mapped_pickle.load_with_meta(path)[1] == {"array_digest": "x"}
    raw = path.read_bytes()
    n = int.from_bytes(raw[8:16], "little")
    inband, spans, _ = pk.loads(raw[16:16 + n])
    old_header = pk.dumps((inband, spans), protocol=5)
    assert len(old_header) <= n  # the old layout: the same buffers, a header without meta
    start = 16 + n + (-(16 + n) % 64)
    body = raw[start:]
    head = mapped_pickle.MAGIC + len(old_header).to_bytes(8, "little") + old_header
    head += b"\0" * (-len(head) % 64)
    path.write_bytes(head + body)
    value, meta = mapped_pickle.load_with_meta(path)
    assert meta == {} and value["a"].tolist() == [0, 1, 2]


def test_memo_keeps_the_most_recently_used_entries(tmp_path):
    memo = DiskMemo(tmp_path, "things", max_entries=3)
    for i in range(3):
        memo.put(f"k{i}", i)
        os.utime(tmp_path / "memo" / "things" / f"k{i}.pkl", (1000 + i, 1000 + i))
    assert memo.get("k0") == (True, 0)  # k0 is now the most recently used
    memo.put("k3", 3)
    kept = sorted(p.stem for p in (tmp_path / "memo" / "things").glob("*.pkl"))
    assert kept == ["k0", "k2", "k3"]


# --- a release run twice ---------------------------------------------------------------------
def _cache_without_memos(folder: Path) -> Path:
    """A fresh cache folder sharing the session's embeddings, NER and models but no memo."""
    shared = Path(os.environ["NESWAP_CACHE_DIR"])
    folder.mkdir()
    shared.mkdir(parents=True, exist_ok=True)
    for entry in shared.iterdir():
        if entry.name != disk_memo.MEMO_FOLDER:
            (folder / entry.name).symlink_to(entry)
    return folder


#: (module, function) computed behind a memo: each is counted while the release runs.
COUNTED = (
    ("neswap_core.generate.context", "fit_mixture_naming_copies"),
    ("neswap_core.choose.candidates", "candidate_table"),
    ("neswap_core.choose.document_candidates", "_defence_levels"),
    ("neswap_core.choose.scorers", "CrossFittedAttacker"),
    ("neswap_core.publish.protection", "attack_report"),
    ("neswap_core.publish.protection", "audit_release"),
    ("neswap_core.publish.bundle", "_computed_key_tables"),
    ("neswap_core.choose.scorers", "pre_scores"),  # the attackers' pre-release scores
    ("neswap_core.publish.bundle", "scan_release"),  # the leak scan
    ("neswap_core.prepare.pipeline", "_cleaned"),  # presentation, people, identifiers
    ("neswap_core.choose.document_candidates", "measure_row"),  # the chosen level's utility
)


@pytest.mark.slow
def test_a_warm_rerun_recomputes_nothing_and_writes_the_same_bytes(tmp_path, monkeypatch):
    import importlib

    from neswap_core.cli import main

    counts: dict[str, int] = {}
    for module_name, name in COUNTED:
        module = importlib.import_module(module_name)
        real = getattr(module, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            counts[_name] = counts.get(_name, 0) + 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)

    corpus = sample_subset(tmp_path / "corpus", 3)
    cache = _cache_without_memos(tmp_path / "cache")
    config = RunConfig.of(corpus=str(corpus), cache_dir=str(cache), n_components=2, n_init=1,
                          max_swaps=4, plan_rounds=1, plan_terms=[True],
                          plan_redaction_levels=[0.0, 0.05], document_levels=[0.1],
                          max_document_accuracy=1.0)
    config.save(tmp_path / "run.toml")

    def release(out: str, toml: str = "run.toml") -> dict[str, int]:
        counts.clear()
        assert main(["release", "--config", str(tmp_path / toml), "--out", str(tmp_path / out)]) in (0, 4)
        return dict(counts)

    cold = release("first")
    assert set(cold) == {name for _, name in COUNTED}, cold  # everything computed once
    assert release("second") == {}  # nothing fitted, defended or measured again

    def files(folder: Path) -> dict[str, bytes]:
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
                if p.is_file() and p.name not in ("timings.json", "config.toml", "report.json",
                                                  "report.html")}  # the out path and the seconds

    first, second = files(tmp_path / "first"), files(tmp_path / "second")
    assert "key/candidates.csv" in first and any(n.startswith("released/") for n in first)
    assert first == second
    # another document level: the defence and the table again (also in the prefetch's walk,
    # which lists the new texts to embed), the same mixture and in-corpus attacker
    config.replace(document_levels=[0.1, 0.2]).save(tmp_path / "levels.toml")
    changed = release("third", "levels.toml")
    assert changed.get("_defence_levels", 0) >= 1 and changed.get("candidate_table", 0) >= 1
    assert "fit_mixture_naming_copies" not in changed and "CrossFittedAttacker" not in changed
    # another trade-off line only chooses among the same candidates: none is defended or
    # measured again (the goal's section was part of the run key)
    config.replace(trade_off_c=0.5, trade_off_a=0.2).save(tmp_path / "line.toml")
    moved = release("fourth", "line.toml")
    assert not {"candidate_table", "_defence_levels", "measure_row", "pre_scores",
                "CrossFittedAttacker", "fit_mixture_naming_copies"} & set(moved), moved
    # another population size N moves only DR (SPEC §5): nothing defended or measured again,
    # and the table is the first run's but for the risk columns (N was in the run key)
    config.replace(population=1e10).save(tmp_path / "population.toml")
    moved = release("fifth", "population.toml")
    assert not {"candidate_table", "_defence_levels", "measure_row", "pre_scores",
                "CrossFittedAttacker", "fit_mixture_naming_copies"} & set(moved), moved
    import pandas as pd

    from neswap_core.choose.candidates import RISK_COLUMNS

    before, after = (pd.read_csv(tmp_path / run / "key" / "candidates.csv") for run in ("first", "fifth"))
    others = [c for c in before.columns if c not in RISK_COLUMNS]
    pd.testing.assert_frame_equal(before[others], after[others])


def test_repr_digest_is_the_digest_of_the_whole_repr_never_made_whole():
    """Issue 21: cache keys of the document plans and the defender hashed ``repr`` of every
    passage (93 MB of text at 10k passages, ~1 GB at 100k). ``repr_digest`` gives the same
    digest (kept caches stay valid), and the largest text it makes is one item's."""
    import hashlib
    import tracemalloc
    from collections import namedtuple

    from neswap_core.disk_memo import feed_repr, repr_digest

    def whole(value):
        return hashlib.sha256(repr(value).encode("utf-8", "surrogatepass")).hexdigest()

    pair = namedtuple("pair", "a b")
    for value in [(), [], (1,), ([],), ([(1,)], ()), ("é\ud800", [("a", "b")], 3, 0.5, None),
                  [[1, [2, (3,)]], pair(1, [2])], {"k": [1, 2]}, (frozenset({1}), b"x", [(), [()]])]:
        assert repr_digest(value) == whole(value), value
    texts = [f"passage {i} " + "word " * 200 for i in range(2_000)]  # 2 MB as one repr
    key = ("members", 0, texts, [str(i % 7) for i in range(2_000)])
    expected = whole(key)
    tracemalloc.start()
    try:
        got = repr_digest(key)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == expected and peak < 100_000, peak
    h = hashlib.sha256(b"settings")
    feed_repr(h, (texts, ["a"] * 3, None))  # the prefetch's record file: a reading's units
    assert h.hexdigest() == hashlib.sha256(b"settings" + repr((texts, ["a"] * 3, None)).encode()).hexdigest()
