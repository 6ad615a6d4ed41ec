"""The Ray engine (issue 14): same output as the local engine on the bundled sample."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from neswap_core.config import RunConfig
from neswap_core.text.loading import load_corpus

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


@pytest.mark.slow
def test_ray_engine_equals_local_engine(tmp_path):
    ray = pytest.importorskip("ray")
    from neswap_core.engines.ray_engine import RayOptions, prepare_ray
    from neswap_core.pipeline import prepare

    full = load_corpus(SAMPLE)
    corpus = replace(full, documents=full.documents[:3])
    config = RunConfig(cache_dir=str(tmp_path / "local"))
    local = prepare(corpus, config)
    # a separate embedding and NER cache, so Ray really computes; the one-time ONNX export shared
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "onnx").symlink_to(tmp_path / "local" / "onnx")
    config = replace(config, cache_dir=str(tmp_path / "ray"))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        options = RayOptions(documents_per_batch=2, chunks_per_batch=16, cpus_per_actor=0.5)
        remote = prepare_ray(corpus, config, options, embeddings_path=tmp_path / "e.npy")
    finally:
        ray.shutdown()
    assert [(c.chunk_id, c.text, c.protected, c.entities) for c in remote.chunks] == [
        (c.chunk_id, c.text, c.protected, c.entities) for c in local.chunks
    ]
    assert remote.z.equals(local.z)
    np.testing.assert_allclose(remote.embeddings, local.embeddings, atol=1e-6)
    assert [d.text for d in remote.clean.corpus.documents] == [
        d.text for d in local.clean.corpus.documents
    ]
    assert remote.clean.identifiers.equals(local.clean.identifiers)
    assert remote.summary()["chunks"] == local.summary()["chunks"] > 3


def test_local_ray_actors_fit_the_machine():
    """Three actor pools run at once: on 2 local CPUs each actor may ask for 2/3 CPU at most;
    a cluster address keeps the requested CPUs (its nodes have their own)."""
    from neswap_core.engines.ray_engine import RayOptions, actor_cpus

    assert actor_cpus(RayOptions(num_cpus=2)) == pytest.approx(2 / 3)
    assert actor_cpus(RayOptions(num_cpus=8)) == 1.0
    assert actor_cpus(RayOptions(num_cpus=2, cpus_per_actor=0.5)) == 0.5
    assert actor_cpus(RayOptions(address="10.0.0.1:6379", num_cpus=2)) == 1.0
