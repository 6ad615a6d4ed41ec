"""Local engine vs Ray engine on the same corpus: the Ray overhead and chunks per second per worker.

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/ray_engine.py [--corpus PATH]
        [--documents 8] [--actors 1] [--address HOST:6379]

Both engines run cold (fresh embedding and NER caches; the one-time ONNX export is shared) on
the first ``--documents`` documents of the corpus, in fresh processes. Without ``--address``
Ray is started locally with ``num_cpus`` = the machine's cores. Prints both wall times, the
Ray overhead (ratio Ray / local; on one machine Ray cannot be faster than the local engine
unless it has more cores than the local run uses), whether the outputs are equal, and chunks
per second per worker (chunks / wall seconds / MiniLM actors).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "corpus" / "dev"
CACHE = ROOT / "benchmarks" / ".cache"


def child(engine: str, corpus_path: str, n_docs: int, cache: str, out: str, actors: int,
          address: str | None) -> None:
    sys.path.insert(0, str(ROOT))
    from neswap_core.config import RunConfig
    from neswap_core.prepare.pipeline import prepare
    from neswap_core.text.loading import load_corpus

    full = load_corpus(corpus_path)
    corpus = replace(full, documents=full.documents[:n_docs])
    config = RunConfig.of(cache_dir=cache)
    start = time.perf_counter()
    if engine == "ray":
        from neswap_core.prepare.ray_engine import RayOptions, prepare_ray

        options = RayOptions(address=address, spacy_actors=actors, minilm_actors=actors,
                             num_cpus=None if address else os.cpu_count(), cpus_per_actor=0.5)
        prepared = prepare_ray(corpus, config, options, embeddings_path=Path(out) / "e.npy")
    else:
        from neswap_core.prepare.lanes import default_processes

        prepared = prepare(corpus, config, embeddings_path=Path(out) / "e.npy",
                           processes=default_processes())  # what `prepare` (CLI) runs
    wall = time.perf_counter() - start
    Path(out, "chunks.json").write_text(json.dumps([[c.chunk_id, c.text, [list(map(str, (
        s.start, s.end, s.category))) for s in c.entities]] for c in prepared.chunks]))
    Path(out, "result.json").write_text(json.dumps({"wall_s": wall, "chunks": len(prepared.chunks)}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--documents", type=int, default=8)
    ap.add_argument("--actors", type=int, default=1)
    ap.add_argument("--address", default=None)
    ap.add_argument("--child", nargs=3, metavar=("ENGINE", "CACHE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.corpus, args.documents, args.child[1], args.child[2],
              args.actors, args.address)
        return 0
    if not Path(args.corpus).exists():
        print(f"skip: {args.corpus} not found")
        return 0
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for engine in ("local", "ray"):
            cache, out = Path(tmp) / engine / "cache", Path(tmp) / engine / "out"
            cache.mkdir(parents=True)
            out.mkdir()
            if (CACHE / "onnx").exists():
                os.symlink(CACHE / "onnx", cache / "onnx")
            cmd = [sys.executable, __file__, "--corpus", args.corpus, "--documents",
                   str(args.documents), "--actors", str(args.actors), "--child", engine,
                   str(cache), str(out)]
            if args.address:
                cmd += ["--address", args.address]
            wall = time.perf_counter()
            subprocess.run(cmd, check=True)
            res[engine] = json.loads((out / "result.json").read_text())
            res[engine]["process_s"] = time.perf_counter() - wall
            res[engine]["chunks_json"] = (out / "chunks.json").read_text()
            res[engine]["e"] = np.load(out / "e.npy")
    local, ray = res["local"], res["ray"]
    same = local["chunks_json"] == ray["chunks_json"] and np.allclose(local["e"], ray["e"], atol=1e-6)
    n = local["chunks"]
    print(f"corpus: {args.corpus}, first {args.documents} documents, {n} chunks; "
          f"Ray: {'cluster ' + args.address if args.address else 'local, num_cpus=' + str(os.cpu_count())}, "
          f"{args.actors} actor(s) per stage")
    print(f"{'engine':<8}{'prepare s':>11}{'process s':>11}{'chunks/s':>10}")
    for name, r in res.items():
        print(f"{name:<8}{r['wall_s']:>11.1f}{r['process_s']:>11.1f}{n / r['wall_s']:>10.2f}")
    print(f"Ray overhead: ratio Ray/local {ray['wall_s'] / local['wall_s']:.2f} "
          f"(+{ray['wall_s'] - local['wall_s']:.1f} s); outputs equal: {same}")
    print(f"chunks per second per MiniLM worker (Ray): {n / ray['wall_s'] / args.actors:.2f}")
    print(f"machine load (1-min average) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
