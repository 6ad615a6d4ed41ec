"""The attackers' fits run ahead, in a process beside the candidates' walk and the sweep
(issue 21, ``choose.scorers.fit_attackers_ahead``): the same release whether they ran ahead,
died on the way or did not run; an interrupted release stops them."""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from neswap_core.choose import scorers as scorers_module
from neswap_core.config import RunConfig
from tests.test_releases import embed, make_chunks

runner = importlib.import_module("neswap_core.run_release")


def _release(chunks, cache: Path):
    prepared = SimpleNamespace(chunks=chunks, embeddings=embed([c.text for c in chunks]), raw=None,
                               clean=SimpleNamespace(corpus=None), timings={})  # fmt: skip
    cfg = RunConfig.of(roles={"Organization": "S", "Person": "F", "Product": "F", "Location": "F",
                              "Event": "F", "Date": "F"}, combination_size=1, n_components=2,
                       n_init=1, max_swaps=6, max_document_accuracy=1.0, document_levels=[],
                       cache_dir=str(cache))  # fmt: skip (its own cache: nothing read back)
    return runner.run_release(prepared, cfg, embed)


def _table(result) -> pd.DataFrame:
    return result.candidates.table.reset_index(drop=True)


def _kept_attackers(cache: Path) -> list[Path]:
    return sorted((cache / "memo" / "in_corpus_attackers").glob("*"))


@pytest.fixture(scope="module")
def chunks():
    return make_chunks(n_docs=4, per_doc=10, seed=3)


@pytest.fixture(scope="module")
def reference(chunks, tmp_path_factory):
    return _release(chunks, tmp_path_factory.mktemp("reference"))  # 40 passages: none ahead


def test_the_attackers_fitted_ahead_during_the_walk_give_the_same_release(monkeypatch, tmp_path, chunks, reference):
    monkeypatch.setattr(scorers_module, "AHEAD_MIN_CHUNKS", 0)
    seen = []

    def walk(*args, **kwargs):  # waits until the process ahead has kept the in-corpus attacker
        deadline = time.monotonic() + 120
        while not _kept_attackers(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        seen.append(bool(_kept_attackers(tmp_path)))
        return 0

    monkeypatch.setattr(runner, "prefetch_candidates", walk)
    result = _release(chunks, tmp_path)
    assert seen == [True], "the attackers were not fitted while the candidates' walk ran"
    pd.testing.assert_frame_equal(_table(result), _table(reference))
    assert result.choice.release_id == reference.choice.release_id
    assert "attackers ahead, waited for" in result.timings["release"]


def test_fits_ahead_that_died_leave_the_release_the_same(monkeypatch, tmp_path, chunks, reference):
    monkeypatch.setattr(scorers_module, "AHEAD_MIN_CHUNKS", 0)
    start = scorers_module.fit_attackers_ahead
    stopped = []

    def killed(*args, **kwargs):
        fits = start(*args, **kwargs)
        fits.stop()  # whatever it had done: build_scorers fits the rest
        stopped.append(fits.process.exitcode)
        return fits

    monkeypatch.setattr(runner, "fit_attackers_ahead", killed)
    result = _release(chunks, tmp_path)
    assert stopped and stopped[0] is not None
    pd.testing.assert_frame_equal(_table(result), _table(reference))


def test_a_failed_walk_stops_the_fits_ahead_and_raises_its_own_error(monkeypatch, tmp_path, chunks):
    monkeypatch.setattr(scorers_module, "AHEAD_MIN_CHUNKS", 0)
    start = scorers_module.fit_attackers_ahead
    started = []

    def keep(*args, **kwargs):
        started.append(start(*args, **kwargs))
        return started[-1]

    def walk(*args, **kwargs):
        raise RuntimeError("the walk failed")

    monkeypatch.setattr(runner, "fit_attackers_ahead", keep)
    monkeypatch.setattr(runner, "prefetch_candidates", walk)
    with pytest.raises(RuntimeError, match="the walk failed"):
        _release(chunks, tmp_path)
    assert started and started[0] is not None and not started[0].process.is_alive()


def test_no_fits_ahead_without_a_cache_or_outside_the_sizes(chunks, tmp_path):
    assert scorers_module.fit_attackers_ahead(chunks, None, cache_dir=None) is None
    assert scorers_module.fit_attackers_ahead(chunks, None, cache_dir=str(tmp_path)) is None  # 40 < 1,000
    # above the size whose fits beside the walk would add more memory than the sweep may use
    assert scorers_module.fit_attackers_ahead(chunks, None, cache_dir=str(tmp_path), min_chunks=0,
                                              max_chunks=len(chunks) - 1) is None  # fmt: skip
    assert not list(tmp_path.iterdir())  # nothing started, nothing written
