"""Scale: synthetic corpora of 1k, 10k, 100k chunks through prepare, fit, sweep and release.

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/scale.py [--sizes 1000 10000 100000]
        [--real-up-to 1000] [--backend auto]

Each size runs in a fresh process. Sizes up to ``--real-up-to`` run end to end on a synthetic
corpus (real dev-corpus sentences, fresh documents and company labels, so no cache helps):
prepare (chunking, NER, embeddings: chunks per second), mixture fit (PKB, K = 30, d = 384),
candidate sweep (cold, then warm: the swapped texts' vectors cached), release writing. Bigger
sizes skip the text stages: their chunks are the largest real run's chunks repeated under fresh
document ids and companies, their vectors those chunks' real vectors plus small noise,
re-normalised ("generated vectors near real embeddings", said in the output). The text stages
at those sizes are extrapolated from the largest real run's chunks per CPU-second (printed as
such, never presented as measured).
Prints wall and CPU seconds, peak resident memory per stage and the machine load, the ratio to each target (fit <= 30 s,
sweep warm <= 60 s, release writing <= 30 s, memory <= 8 GB at 100k) and the slope of log time
on log n per stage.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "corpus" / "dev"
TARGETS = {"fit": 30.0, "sweep_warm": 60.0, "release": 30.0}
MEMORY_TARGET_GB = 8.0


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS counter (VmHWM) of this process (Linux)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_gb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024**2
    return float("nan")


class Stages:
    """Seconds and peak memory of named stages."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, float]] = {}

    def run(self, name: str, fn, *args, **kwargs):
        _reset_peak()
        start = time.perf_counter()
        cpu = time.process_time()
        out = fn(*args, **kwargs)
        self.rows[name] = {
            "s": time.perf_counter() - start,
            "cpu_s": time.process_time() - cpu,
            "peak_gb": _peak_gb(),
        }
        return out


def _tiled(prepared_dir: Path, n: int, rng: np.random.Generator):
    """n chunks: real chunks repeated under fresh ids/companies; vectors = real + noise."""
    import pickle
    from dataclasses import replace

    from neswap_core.corpus import Corpus, chunk_id

    with open(prepared_dir / "prepared.pkl", "rb") as handle:
        chunks, corpus = pickle.load(handle)
    x = np.load(prepared_dir / "embeddings.npy")
    reps = -(-n // len(chunks))
    out_chunks, docs = [], []
    for r in range(reps):
        for doc in corpus.documents:
            doc_id = f"{doc.doc_id}r{r}"
            meta = {**doc.metadata, "doc_id": doc_id, "company": f"{doc.metadata['company']} r{r}"}
            docs.append(replace(doc, doc_id=doc_id, metadata=meta))
        for c in chunks:
            out_chunks.append(replace(c, chunk_id=chunk_id(f"{c.doc_id}r{r}", c.index),
                                      doc_id=f"{c.doc_id}r{r}", protected=f"{c.protected} r{r}"))
    out_chunks = out_chunks[:n]
    keep_docs = {c.doc_id for c in out_chunks}
    corpus = Corpus(tuple(d for d in docs if d.doc_id in keep_docs), corpus.protect, "tiled")
    noisy = np.tile(x, (reps, 1))[:n] + rng.normal(scale=0.01, size=(n, x.shape[1]))
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    return out_chunks, corpus, noisy.astype(np.float32)


def one_size(n: int, workdir: Path, real: bool, source: Path | None, backend: str) -> dict:
    sys.path.insert(0, str(ROOT))
    import pickle

    from neswap_core.choose.candidates import build_candidates
    from neswap_core.config import RunConfig
    from neswap_core.generate.context import fit_mixture, release_inputs
    from neswap_core.generate.releases import ReleaseContext, sweep_for_config
    from neswap_core.models.embedding import Embedder
    from neswap_core.prepare.lanes import default_processes
    from neswap_core.prepare.pipeline import clean_corpus, prepare
    from neswap_core.publish.writer import release_bundle
    from neswap_core.run_release import finish_release
    from neswap_core.text.loading import load_corpus
    from neswap_core.text.synthetic import documents_for_chunks, sentence_pool, synthetic_corpus

    stages = Stages()
    cfg = RunConfig.of(cache_dir=str(workdir / "cache"), n_components=30, family="pkb",
                    embedding_backend=backend)
    embedder = Embedder(cfg.prepare.embedding_model, cfg.prepare.cache_dir, backend=backend)
    info: dict = {"n_target": n, "real": real}
    if real:
        pool = sentence_pool(clean_corpus(load_corpus(DEV)).corpus)
        corpus = synthetic_corpus(pool, documents_for_chunks(n), random_state=n)
        prepared = stages.run("prepare", prepare, corpus, cfg, embedder=embedder,
                              embeddings_path=workdir / "embeddings.npy",
                              processes=default_processes())
        cpu = prepared.cpu_seconds
        stages.rows["prepare"]["cpu_s"] += cpu.get("workers", 0.0)  # every process's CPU
        info["processes"] = default_processes()
        for k in ("chunking", "ner", "embedding"):
            stages.rows[f"  {k}"] = {"s": prepared.timings[k], "cpu_s": cpu.get(k, float("nan")),
                                     "peak_gb": float("nan")}
        chunks, x, clean = prepared.chunks, np.asarray(prepared.embeddings), prepared.clean.corpus
        with open(workdir / "prepared.pkl", "wb") as handle:
            pickle.dump((chunks, clean), handle)
        info["documents"] = len(corpus)
    else:
        chunks, clean, x = _tiled(source, n, np.random.default_rng(n))
        info["documents"] = len(clean)
    info["chunks"] = len(chunks)
    pre_chunks, pre_x = release_inputs(chunks, x, cfg.roles, embedder.encode)
    mixture = stages.run("fit", fit_mixture, pre_x, cfg)
    info["fit_iterations"] = int(mixture.n_iter_)
    ctx = ReleaseContext(pre_chunks, pre_x, mixture, embedder.encode)
    sweep = stages.run("sweep_cold", sweep_for_config, ctx, cfg)
    sweep = stages.run("sweep_warm", sweep_for_config, ctx, cfg)

    def write_release():
        """The runner's choice and the one writer (released/ and the key tables, leak scan;
        without the attack and the audit, which are not what this benchmark times)."""
        result = finish_release(cfg, clean, clean, build_candidates(sweep, cfg))
        bundle = release_bundle(result, with_key_files=False)
        bundle.write(workdir / "release", accepted={h.key for h in bundle.hits})

    stages.run("release", write_release)
    info["stages"] = stages.rows
    info["load"] = os.getloadavg()
    return info


def _slope(ns: list[int], ts: list[float]) -> float:
    if len(ns) < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(np.maximum(ts, 1e-6)), 1)[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--real-up-to", type=int, default=1000)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n, workdir, real, source = args.child
        src = Path(source) if source != "-" else None
        info = one_size(int(n), Path(workdir), real == "1", src, args.backend)
        Path(workdir, "result.json").write_text(json.dumps(info))
        return 0
    if not DEV.exists():
        print(f"skip: {DEV} not found")
        return 0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        source = "-"
        for n in sorted(args.sizes):
            work = Path(tmp) / str(n)
            work.mkdir()
            real = n <= args.real_up_to
            cmd = [sys.executable, __file__, "--backend", args.backend,
                   "--child", str(n), str(work), "1" if real else "0", source]
            subprocess.run(cmd, check=True, env={**os.environ})
            info = json.loads((work / "result.json").read_text())
            results.append(info)
            if real:
                source = str(work)
            _print_size(info)
    _print_summary(results)
    return 0


def _print_size(info: dict) -> None:
    kind = "synthetic corpus, end to end" if info["real"] else (
        "generated unit vectors near real embeddings (text stages skipped)")
    print(f"\n{info['chunks']:,} chunks, {info['documents']:,} documents — {kind}")
    print(f"{'stage':<14}{'wall s':>9}{'cpu s':>9}{'peak GB':>9}   note")
    for stage, row in info["stages"].items():
        note = ""
        if stage.strip() in ("chunking", "ner", "embedding"):
            note = f"{info['chunks'] / max(row['cpu_s'], 1e-9):,.1f} chunks per CPU-s"
            note += f" (seconds summed over the {info.get('processes', 1)} processes)"
        if stage == "prepare" and info["real"]:
            note = (f"{info['chunks'] / max(row['s'], 1e-9):,.1f} chunks per wall s; CPU of all "
                    "processes; peak memory of the main one")
        if stage == "fit":
            note = f"{info['fit_iterations']} EM iterations"
        print(f"{stage:<14}{row['s']:>9.2f}{row['cpu_s']:>9.2f}{row['peak_gb']:>9.2f}   {note}")
    print("machine load (1/5/15 min) after this size: " + "/".join(f"{x:.1f}" for x in info["load"]))


def _print_summary(results: list[dict]) -> None:
    ns = [r["chunks"] for r in results]
    print("\nslope of log time on log n (1 = linear), of wall and of CPU seconds (CPU is the "
          "figure to read when the machine load changes between sizes):")
    stages = ("fit", "sweep_cold", "sweep_warm", "release")
    if all(r["real"] for r in results):
        stages = ("prepare", *stages)
    for stage in stages:
        ts = [r["stages"][stage]["s"] for r in results]
        cs = [r["stages"][stage]["cpu_s"] for r in results]
        print(f"  {stage:<12} wall {_slope(ns, ts):.2f}   CPU {_slope(ns, cs):.2f}")
    _print_extrapolation(results)
    big = max(results, key=lambda r: r["chunks"])
    print(f"\ntargets at {big['chunks']:,} chunks (ratio = measured / target, <= 1 passes):")
    for stage, target in TARGETS.items():
        s, c = big["stages"][stage]["s"], big["stages"][stage]["cpu_s"]
        print(f"  {stage:<12} {s:8.2f} s wall ({c:.2f} CPU-s)  target <= {target:g} s  "
              f"ratio {s / target:.2f} (CPU-s / target {c / target:.2f})")
    peak = max(row["peak_gb"] for row in big["stages"].values() if row["peak_gb"] == row["peak_gb"])
    print(f"  peak memory  {peak:8.2f} GB target <= {MEMORY_TARGET_GB:g} GB ratio "
          f"{peak / MEMORY_TARGET_GB:.2f}")


def _print_extrapolation(results: list[dict]) -> None:
    """Text stages at the sizes that skipped them: n / (chunks per CPU-second of a real run)."""
    real = [r for r in results if r["real"]]
    if not real or len(real) == len(results):
        return
    ref = max(real, key=lambda r: r["chunks"])
    rates = {k: ref["chunks"] / max(ref["stages"][f"  {k}"]["cpu_s"], 1e-9)
             for k in ("chunking", "ner", "embedding")}
    print(f"\ntext stages, EXTRAPOLATED (not run) from the {ref['chunks']:,}-chunk real run's "
          "chunks per CPU-second (linear in n: each chunk is chunked, tagged, embedded once):")
    print("  " + ", ".join(f"{k} {v:,.1f} chunks/CPU-s" for k, v in rates.items()))
    for r in results:
        if r["real"]:
            continue
        total = sum(r["chunks"] / v for v in rates.values())
        print(f"  {r['chunks']:,} chunks: {total:,.0f} CPU-s = {total / 3600:.2f} CPU-hours "
              f"(~{total / 2 / 60:.0f} min wall on two quiet cores: one embeds, one tags)")


if __name__ == "__main__":
    sys.exit(main())
