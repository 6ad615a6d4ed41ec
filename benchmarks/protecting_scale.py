"""The protecting path at scale (issue 21): plans, document defence, attacker panel, audit.

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/protecting_scale.py [--sizes 1000 10000]

Each size runs in a fresh child process with a fresh cache folder (nothing cached helps) on a
synthetic corpus of real dev-corpus sentences under fresh documents and companies
(``text.synthetic``), and a synthetic attacker reading of the same companies (other random
sentences: the attackers are at chance, which does not change what they cost; with
``--company-words K`` each company also has K invented words of its own, in both, so the
vocabulary grows with the companies and the attackers have a signal). The whole
default release runs through the one release path: ``prepare_release`` → ``reading_attacker``
→ ``run_release`` (the default goal switches the plan grid on; the document defence at its six
levels; the panel's word, char_wb and retrieval families plus the in-corpus attacker; the
candidate table, measured on a sample of whole documents past 300 documents or 6,000 passages,
``measure/candidate_sample.py``) → ``write_release`` (bundle, leak scan, attack report, divergence audit, TAB
spans). Prints each stage's wall and CPU seconds, the peak resident memory of each step, the
load, and the slope of log time on log n between sizes (1 = linear), against the targets of
issue 21 at 100k chunks (sweep with the panel <= 10 min, <= 8 GB).
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
DEV = next((p / "shared" / "corpus" / "dev" for p in ROOT.parents[:2]
            if (p / "shared" / "corpus" / "dev").is_dir()), ROOT.parent / "shared" / "corpus" / "dev")
SWEEP_TARGET_S, MEMORY_TARGET_GB = 600.0, 8.0


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_gb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024**2
    return float("nan")


def _timed(rows: dict, name: str, fn, *args, **kwargs):
    _reset_peak()
    start, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    rows[name] = {"s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
                  "peak_gb": _peak_gb()}
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {rows[name]['s']:.1f} s, {rows[name]['cpu_s']:.1f} CPU-s, "
          f"peak {rows[name]['peak_gb']:.2f} GB", file=sys.stderr, flush=True)  # a long run's stages as they end
    return out


def _say(last: list):
    """Progress of run_release, printed when its message changes (a long run's timeline)."""

    def say(fraction: float, message: str) -> None:
        if message != last[0]:
            last[0] = message
            print(f"[{time.strftime('%H:%M:%S')}] {fraction:.2f} {message}", file=sys.stderr, flush=True)

    return say


def one_size(n: int, workdir: Path, company_words: int = 0) -> dict:
    sys.path.insert(0, str(ROOT))
    from neswap_core.config import RunConfig
    from neswap_core.measure.reading import reading_attacker
    from neswap_core.models.embedding import Embedder
    from neswap_core.prepare.pipeline import clean_corpus
    from neswap_core.publish.writer import write_release
    from neswap_core.run_release import prepare_release, run_release
    from neswap_core.text.loading import load_corpus
    from neswap_core.text.synthetic import (
        documents_for_chunks,
        sentence_pool,
        synthetic_corpus,
        write_corpus_folder,
    )

    pool = sentence_pool(clean_corpus(load_corpus(DEV)).corpus)
    spec = documents_for_chunks(n, company_words=company_words)
    corpus = synthetic_corpus(pool, spec, random_state=n)
    folder = write_corpus_folder(corpus, workdir / "corpus")
    (workdir / "synthetic.json").write_text(json.dumps({"company_words": company_words}))  # for release_rerun.py
    # the reading: one more call of each company, other sentences, its own document ids
    reading = synthetic_corpus(pool, spec, random_state=n + 1)
    reading = reading.with_documents([replace(d, doc_id="R" + d.doc_id,
                                              metadata={**d.metadata, "doc_id": "R" + d.doc_id})
                                      for d in reading.documents])  # fmt: skip
    config = RunConfig.of(corpus=str(folder), cache_dir=str(workdir / "cache"),
                          out=str(workdir / "out"))  # fmt: skip
    embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir,
                        backend=config.prepare.embedding_backend)
    rows: dict = {}
    prepared = _timed(rows, "prepare", prepare_release, config, embedder=embedder)
    rows["prepare"]["cpu_s"] += prepared.cpu_seconds.get("workers", 0.0)
    attacker = _timed(rows, "reading", reading_attacker, reading, prepared.chunks, prepared.raw,
                      cache_dir=config.prepare.cache_dir)  # fmt: skip
    embedded = embedder.n_embedded
    result = _timed(rows, "run_release", run_release, prepared, config, embedder.encode,
                    reading=attacker, progress=_say([""]))  # fmt: skip
    embedded = embedder.n_embedded - embedded  # the candidates' changed passages
    for stage, seconds in result.timings.get("release", {}).items():
        rows[f"  {stage}"] = {"s": seconds, "cpu_s": float("nan"), "peak_gb": float("nan")}

    def write():
        try:
            write_release(result, workdir / "out", accepted=())
        except Exception as exc:  # noqa: BLE001 - a leak-scan hit still wrote key/
            return type(exc).__name__
        return "written"

    outcome = _timed(rows, "write", write)
    table = result.candidates.table
    return {
        "n_target": n, "chunks": len(prepared.chunks), "documents": len(corpus),
        "companies": spec.n_companies, "company_words": company_words, "reading_units": attacker.n_units_,
        "candidates": len(table), "chosen": result.choice.release_id, "write": outcome,
        "release_texts_embedded": embedded,
        "stages": rows, "load": os.getloadavg(),
        "measured_on": (sample.to_dict() if (sample := result.candidates.ctx.sample) is not None
                        else "every document"),
        "worst_chunk_accuracy": float(np.nanmax(table["chunk_accuracy"])) if "chunk_accuracy" in table else None,
        "released": _released_figures(table, result.choice.release_id),
    }  # fmt: skip


def _released_figures(table, release_id: str) -> dict:
    """The written release's measured figures (passages and documents named, words kept):
    with ``--company-words`` the attackers have a signal, so these say whether it protects."""
    rows = table[table["release_id"] == release_id] if "release_id" in table else table.iloc[:0]
    if rows.empty:
        return {}
    row = rows.iloc[0]
    return {name: float(row[name]) for name in ("chunk_accuracy", "document_accuracy", "words_unchanged", "du")
            if name in row and row[name] == row[name]}


def _slope(ns, ts) -> float:
    if len(ns) < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(np.maximum(ts, 1e-6)), 1)[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--log", help="also write each size's figures as a JSON line here")
    ap.add_argument("--keep", help="run in this folder and keep each size's corpus, cache and "
                    "release there (to profile a stage again warm) instead of a temporary one")
    ap.add_argument("--company-words", type=int, default=0,
                    help="invented words of each company's own (text.synthetic): a vocabulary "
                    "that grows with the companies and a signal for the attackers; 0: none")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        info = one_size(int(args.child[0]), Path(args.child[1]), args.company_words)
        Path(args.child[1], "result.json").write_text(json.dumps(info))
        return 0
    if not DEV.exists():
        print(f"skip: {DEV} not found")
        return 0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sorted(args.sizes):
            work = Path(args.keep or tmp) / str(n)
            work.mkdir(parents=True)  # a kept size's folder must be new: nothing cached helps
            subprocess.run([sys.executable, __file__, "--child", str(n), str(work),
                            "--company-words", str(args.company_words)], check=True)
            info = json.loads((work / "result.json").read_text())
            results.append(info)
            if args.log:
                with open(args.log, "a") as fh:
                    fh.write(json.dumps(info) + "\n")
            print(f"\n{info['chunks']:,} chunks, {info['documents']:,} documents, "
                  f"{info['companies']} companies, {info['reading_units']:,} reading units: "
                  f"{info['candidates']} candidates, released {info['chosen']} ({info['write']})")
            measured = info.get("measured_on")
            print("candidates measured on " + (measured if isinstance(measured, str) else
                  f"{measured['documents']:,} of {measured['total_documents']:,} documents "
                  f"({measured['passages']:,} passages; document shares ±"
                  f"{measured['document_margin']:.3f} at 95 %)"))
            print(f"{'stage':<16}{'wall s':>9}{'cpu s':>9}{'peak GB':>9}")
            for stage, row in info["stages"].items():
                print(f"{stage:<16}{row['s']:>9.2f}{row['cpu_s']:>9.2f}{row['peak_gb']:>9.2f}")
            print(f"texts embedded by run_release: {info.get('release_texts_embedded', 0):,}")
            if info.get("released"):
                print("written release: " + ", ".join(f"{k} {v:.3f}" for k, v in info["released"].items()))
            print("load after: " + "/".join(f"{x:.1f}" for x in info["load"]), flush=True)
    ns = [r["chunks"] for r in results]
    print("\nslope of log wall time on log n (1 = linear):")
    for stage in ("prepare", "reading", "run_release", "write"):
        print(f"  {stage:<12} {_slope(ns, [r['stages'][stage]['s'] for r in results]):.2f}")
    big = results[-1]
    sweep = big["stages"]["run_release"]["s"]
    peak = max(r["peak_gb"] for r in big["stages"].values() if r["peak_gb"] == r["peak_gb"])
    print(f"at {big['chunks']:,} chunks: sweep with the panel {sweep:.0f} s (target at 100k "
          f"<= {SWEEP_TARGET_S:.0f} s), peak {peak:.2f} GB (target <= {MEMORY_TARGET_GB:g} GB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
