"""MiniLM's backends on this CPU: which one ``embedding_backend="auto"`` should pick (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/embedding_backends.py [--groups 600]
        [--backends bf16 onnx torch onnx-int8]

Embeds the first ``--groups`` sentence groups of the dev corpus (three sentences each, as the
chunker does, SPEC §2.2) with each backend in this process, one thread, a fresh cache (nothing
served from disk; the model's load and first batch are not counted), and prints the seconds of
each and which backend "auto" resolves to here. The quality bar of each backend against float32
PyTorch is ``benchmarks/preprocess.py``'s (ONNX int8 misses it).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV = next((p / "shared" / "corpus" / "dev" for p in ROOT.parents[:2]
            if (p / "shared" / "corpus" / "dev").is_dir()), ROOT.parent / "shared" / "corpus" / "dev")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=600)
    ap.add_argument("--backends", nargs="+", default=["bf16", "onnx", "torch", "onnx-int8"])
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from neswap_core.config import DEFAULT_EMBEDDING_MODEL
    from neswap_core.models.embedding import Embedder, resolve_backend
    from neswap_core.prepare.pipeline import clean_corpus
    from neswap_core.text.loading import load_corpus

    sentences: list[str] = []
    for doc in clean_corpus(load_corpus(DEV)).corpus.documents:
        sentences += [s for s in re.split(r"(?<=[.!?])\s+", doc.text) if s.strip()]
    groups = [" ".join(sentences[i:i + 3]) for i in range(len(sentences) - 3)][: args.groups]
    print(f"{len(groups)} sentence groups of the dev corpus; 'auto' is {resolve_backend('auto')!r} "
          f"on this CPU; load {os.getloadavg()[0]:.2f}", flush=True)
    for backend in args.backends:
        with tempfile.TemporaryDirectory() as cache:
            embedder = Embedder(DEFAULT_EMBEDDING_MODEL, cache, backend=backend)
            embedder.encode(groups[:8])  # the model's load and first batch: not counted
            start, cpu = time.perf_counter(), time.process_time()
            embedder.encode(groups[8:])
            print(f"{backend:>10}: {time.perf_counter() - start:6.1f} s wall, "
                  f"{time.process_time() - cpu:6.1f} CPU-s for {len(groups) - 8} groups", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
