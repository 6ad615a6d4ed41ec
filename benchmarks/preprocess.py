"""Preprocessing throughput on the dev corpus (35 calls), cold and with a warm embedding cache.

    .venv/bin/python benchmarks/preprocess.py [--corpus PATH] [--threshold 75]

Runs the whole pipeline twice in fresh processes sharing one new cache folder: first cold
(models loaded, every sentence group and chunk embedded), then warm (nothing re-embedded).
Prints chunks, entities per category, the share of chunks with an entity per category, and
throughput per stage. Targets (issue 2, this 2-core machine): cold < 180 s, warm < 15 s.
The paper had 1,819 chunks for its 35 calls.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "corpus" / "dev"


def one_run(corpus: str, cache: str, threshold: float) -> dict:
    sys.path.insert(0, str(ROOT))
    start = time.perf_counter()
    from neswap_core.config import RunConfig
    from neswap_core.pipeline import prepare_path

    cfg = RunConfig(corpus=corpus, cache_dir=cache, threshold=threshold)
    prepared = prepare_path(corpus, cfg)
    total = time.perf_counter() - start
    s = prepared.summary()
    t = prepared.timings
    n_sent = sum(len(d.text.splitlines()) for d in prepared.clean.corpus.documents)
    words = sum(len(c.text.split()) for c in prepared.chunks)
    return {
        "total_s": total, "timings": t, "summary": s, "sentences": n_sent, "words": words,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--threshold", type=float, default=75.0)
    ap.add_argument("--child", nargs=2, metavar=("CACHE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        Path(args.child[1]).write_text(json.dumps(one_run(args.corpus, args.child[0], args.threshold), default=str))
        return 0
    if not Path(args.corpus).exists():
        print(f"skip: {args.corpus} not found (the dev corpus lives in ../shared/corpus/dev)")
        return 0
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("cold", "warm"):
            out = Path(tmp) / f"{mode}.json"
            cmd = [sys.executable, __file__, "--corpus", args.corpus, "--threshold", str(args.threshold),
                   "--child", str(Path(tmp) / "cache"), str(out)]
            wall = time.perf_counter()
            subprocess.run(cmd, check=True)
            results[mode] = json.loads(out.read_text())
            results[mode]["wall_s"] = time.perf_counter() - wall
    cold, warm = results["cold"], results["warm"]
    s = cold["summary"]
    n_chunks = s["chunks"]
    print(f"corpus: {args.corpus}\ndocuments: {s['documents']}  chunks at threshold {args.threshold:g}: {n_chunks} (paper: 1,819)")
    print(f"{'category':<14}{'entities':>10}{'chunks with >=1':>18}{'share':>8}")
    for cat, n in s["entities_per_category"].items():
        print(f"{cat:<14}{n:>10}{s['chunks_with_entity_per_category'][cat]:>18}{s['share_chunks_with_entity'][cat]:>8.1%}")
    print(f"identifiers suppressed: {s['identifiers_suppressed']}")
    print(f"\n{'stage':<14}{'cold s':>9}{'warm s':>9}   throughput (cold)")
    rates = {
        "chunking": f"{cold['sentences'] / max(cold['timings']['chunking'], 1e-9):,.0f} sentences/s, "
                    f"{n_chunks / max(cold['timings']['chunking'], 1e-9):,.1f} chunks/s",
        "ner": f"{cold['words'] / max(cold['timings']['ner'], 1e-9):,.0f} words/s",
        "embedding": f"{n_chunks / max(cold['timings']['embedding'], 1e-9):,.1f} chunks/s",
    }
    for stage in cold["timings"]:
        print(f"{stage:<14}{cold['timings'][stage]:>9.2f}{warm['timings'].get(stage, 0):>9.2f}   {rates.get(stage, '')}")
    print(f"\nwhole run (process wall time, imports included): cold {cold['wall_s']:.1f} s (target < 180 s), "
          f"warm {warm['wall_s']:.1f} s (target < 15 s)")
    print(f"ratios: cold/target {cold['wall_s'] / 180:.2f}, warm/target {warm['wall_s'] / 15:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
