"""The attackers are fitted in a thread beside the candidates' walk and the sweep (issue 21,
``choose.scorers.ScorersInBackground``): the same release, their errors raised, no fit left
running when the release fails."""

from __future__ import annotations

import importlib
import threading
from types import SimpleNamespace

import pandas as pd
import pytest

from neswap_core.config import RunConfig
from neswap_core.errors import NeswapError
from tests.test_releases import embed, make_chunks

runner = importlib.import_module("neswap_core.run_release")


def _release(chunks, cache):
    prepared = SimpleNamespace(chunks=chunks, embeddings=embed([c.text for c in chunks]), raw=None,
                               clean=SimpleNamespace(corpus=None), timings={})  # fmt: skip
    cfg = RunConfig.of(roles={"Organization": "S", "Person": "F", "Product": "F", "Location": "F",
                              "Event": "F", "Date": "F"}, combination_size=1, n_components=2,
                       n_init=1, max_swaps=6, max_document_accuracy=1.0, document_levels=[],
                       cache_dir=str(cache))  # fmt: skip (its own cache: nothing read back)
    return runner.run_release(prepared, cfg, embed)


def _table(result) -> pd.DataFrame:
    return result.candidates.table.reset_index(drop=True)


@pytest.mark.parametrize("order", ["during", "before"])
def test_the_attackers_fitted_beside_the_walk_give_the_release_of_attackers_fitted_first(monkeypatch, tmp_path, order):
    chunks = make_chunks(n_docs=4, per_doc=10, seed=3)
    reference = _release(chunks, tmp_path / "reference")
    started, finished = threading.Event(), threading.Event()
    build = runner.build_scorers

    def building(*args, **kwargs):
        started.set()
        try:
            return build(*args, **kwargs)
        finally:
            finished.set()

    def walk(*args, **kwargs):  # "during": the walk waits until the attackers are being fitted
        assert (started if order == "during" else finished).wait(timeout=60), (
            "the attackers were not fitted while the candidates' walk ran")
        return 0

    monkeypatch.setattr(runner, "build_scorers", building)
    monkeypatch.setattr(runner, "prefetch_candidates", walk)
    result = _release(chunks, tmp_path / order)
    assert "in-corpus" in result.scorers
    pd.testing.assert_frame_equal(_table(result), _table(reference))
    assert result.choice.release_id == reference.choice.release_id
    timings = result.timings["release"]
    assert timings["attackers in all"] >= 0 and timings["attackers"] >= 0


def test_an_attackers_error_is_raised_by_the_release(monkeypatch, tmp_path):
    def failing(*args, **kwargs):
        raise NeswapError("the attackers could not be fitted")

    monkeypatch.setattr(runner, "build_scorers", failing)
    with pytest.raises(NeswapError, match="could not be fitted"):
        _release(make_chunks(n_docs=4, per_doc=10, seed=3), tmp_path)


def test_a_failed_walk_raises_its_own_error_once_the_attackers_have_stopped(monkeypatch, tmp_path):
    finished = threading.Event()
    build = runner.build_scorers

    def building(*args, **kwargs):
        try:
            return build(*args, **kwargs)
        finally:
            finished.set()

    def walk(*args, **kwargs):
        raise RuntimeError("the walk failed")

    monkeypatch.setattr(runner, "build_scorers", building)
    monkeypatch.setattr(runner, "prefetch_candidates", walk)
    with pytest.raises(RuntimeError, match="the walk failed"):
        _release(make_chunks(n_docs=4, per_doc=10, seed=3), tmp_path)
    assert finished.is_set()  # no fit outlives the failed release
