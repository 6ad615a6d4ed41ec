"""MiniLM's backends on this CPU: which one ``embedding_backend="auto"`` should pick (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/embedding_backends.py [--groups 600]
        [--backends bf16 onnx torch onnx-int8] [--sentences 3] [--shapes 8x16 1x1]

Embeds the first ``--groups`` sentence groups of the dev corpus (three sentences each, as the
chunker does, SPEC §2.2) with each backend in this process, one thread, a fresh cache (nothing
served from disk; the model's load and first batch are not counted), and prints the seconds of
each and which backend "auto" resolves to here. The quality bar of each backend against float32
PyTorch is ``benchmarks/preprocess.py``'s (ONNX int8 misses it).

``--shapes ROWSxSTEP ...`` also times the ONNX float32 backend with its batches of that shape
(``models/fixed_batches``: rows per batch, width rounded up to a multiple of STEP tokens; the
library's is ``ONNX_ROWS x ONNX_STEP``), each shape twice in alternation; ``--sentences 5``
times passages of five sentences (the size of the corpus's chunks) instead of the chunker's
groups of three.
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
    ap.add_argument("--sentences", type=int, default=3, help="sentences per group (3: the chunker's)")
    ap.add_argument("--shapes", nargs="*", default=[], metavar="ROWSxSTEP",
                    help="ONNX batch shapes to time, e.g. 8x16 1x1")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from neswap_core.config import DEFAULT_EMBEDDING_MODEL
    from neswap_core.models.embedding import Embedder, resolve_backend
    from neswap_core.prepare.pipeline import clean_corpus
    from neswap_core.text.loading import load_corpus

    sentences: list[str] = []
    for doc in clean_corpus(load_corpus(DEV)).corpus.documents:
        sentences += [s for s in re.split(r"(?<=[.!?])\s+", doc.text) if s.strip()]
    n = args.sentences
    step = 1 if n == 3 else n  # the chunker's groups overlap; passages do not
    groups = [" ".join(sentences[i:i + n]) for i in range(0, len(sentences) - n, step)][: args.groups]
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
    if args.shapes:
        time_shapes(groups, args.shapes)
    return 0


def time_shapes(groups: list[str], shapes: list[str]) -> None:
    """ONNX float32 with batches of each shape (module docstring), each twice in alternation."""
    import neswap_core.models.onnx_minilm as onnx_minilm
    from neswap_core.models.embedding import embedding_model_path

    parsed = [tuple(int(v) for v in shape.lower().split("x")) for shape in shapes]
    with tempfile.TemporaryDirectory() as cache:
        encoder = onnx_minilm.OnnxSentenceEncoder(embedding_model_path(), cache, threads=1)
        encoder.encode(groups[:8])
        seconds: dict[tuple[int, int], list[float]] = {shape: [] for shape in parsed}
        library = onnx_minilm.ONNX_ROWS, onnx_minilm.ONNX_STEP
        try:
            for _ in range(2):
                for rows, step in parsed:
                    onnx_minilm.ONNX_ROWS, onnx_minilm.ONNX_STEP = rows, step
                    start = time.perf_counter()
                    encoder.encode(groups[8:])
                    seconds[(rows, step)].append(time.perf_counter() - start)
        finally:
            onnx_minilm.ONNX_ROWS, onnx_minilm.ONNX_STEP = library
    for (rows, step), runs in seconds.items():
        mark = "  (the library's)" if (rows, step) == library else ""
        print(f"  onnx {rows:>2} rows x step {step:>2}: " + ", ".join(f"{s:.2f}" for s in runs)
              + f" s for {len(groups) - 8} groups{mark}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
