"""``run_release`` again on a kept protecting-path run, everything after the preparation cold
(issue 21): the same corpus, reading and machine, so two versions of the code compare stage by
stage without the hour a fresh preparation costs at 30k chunks.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/release_rerun.py DIR/30000 --chunks 30000 [--write]

``DIR`` is a folder ``benchmarks/protecting_scale.py --keep DIR`` left. Removed first: the
document defence's defenders, builds, plans and measures, the attackers' panels and folds, the
candidate tables and the prefetch's text lists — everything ``run_release`` computes. Kept: the
preparation's caches (NER, vectors) and the embedding cache, which also holds the vectors of the
reading's units and of the candidates' changed passages, so the prefetch's embedding and the
panel's MiniLM family are warm here (cold, at 30k: 46 s and most of the attackers' 594 s). Prints
each stage's seconds, the main process's peak resident memory (VmHWM) and peak anonymous memory
(sampled every 0.2 s: what the process itself allocated, not the memory-mapped caches) and
the stage it was reached in, the peak of the same summed over the process and its workers, the
load. ``--write``: then ``write_release`` into the folder's
``out/``, its memos removed first too (the bundle's key tables, leak scan, attack report on
every document, audit, adaptive attacker): its seconds and its peaks (resident and anonymous,
from the start of the writing). ``--warm-release`` (with ``--write``): ``run_release``'s own
memos are kept, so it reads its release back and only the writing is cold.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: What write_release computes (``--write``): the bundle's key tables, leak scan, attack
#: report, audit and adaptive attacker.
WRITE_COLD = ("memo/key_tables", "memo/leak_scans", "memo/attack_reports", "memo/audits",
              "memo/adaptive_attacks")
#: What run_release computes, under a protecting_scale.py folder's cache.
COLD = ("document_defence", "attacker_panels", "memo/document_builds", "memo/document_levels",
        "memo/document_preps",
        "memo/document_measures", "memo/document_candidates", "memo/candidate_tables",
        "memo/in_corpus_attackers", "memo/pre_release_scores")  # fmt: skip


def _status(field: str, pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024**2
    return float("nan")


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its workers that have ended (user + system)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _tree_anonymous() -> float:
    """GB of anonymous memory of this process and every process below it (its workers: the
    attackers' fits, the defence's scoring, the embedding pool), summed."""
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            total += _status("RssAnon", pid)
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue  # a worker that ended meanwhile
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="one size's folder of protecting_scale.py --keep")
    ap.add_argument("--chunks", type=int, required=True, help="the size it was run at (its reading's seed)")
    ap.add_argument("--write", action="store_true",
                    help="then write the release (bundle, attack report, audit, adaptive attacker), cold too")
    ap.add_argument("--warm-release", action="store_true",
                    help="keep what run_release computed (its memos, read back: the writer's "
                         "figures alone, cold, in minutes); with --write")
    args = ap.parse_args()
    from kept_run import kept_config, kept_reading

    from neswap_core.measure.reading import reading_attacker
    from neswap_core.run_release import prepare_release, run_release

    work = Path(args.folder)
    cache = work / "cache"
    computed = () if args.warm_release else (*COLD, *cache.glob("*/prefetch"))
    for cold in [*(cache / c for c in (*computed, *(WRITE_COLD if args.write else ())))]:
        shutil.rmtree(cold, ignore_errors=True)
    reading = kept_reading(work, args.chunks)
    config, embedder = kept_config(work)
    start = time.perf_counter()
    prepared = prepare_release(config, embedder=embedder)
    attacker = reading_attacker(reading, prepared.chunks, prepared.raw, cache_dir=config.prepare.cache_dir)
    print(f"{len(prepared.chunks):,} chunks; preparation and reading back in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    peak_anon = [0.0, 0.0]  # GB, seconds into run_release when reached
    peak_tree = [0.0]  # GB, the process and its workers, summed (sampled alike)
    samples: list[tuple[float, float]] = []  # (seconds into run_release, anonymous GB)

    def sample() -> None:
        while True:
            anon = _status("RssAnon")
            samples.append((time.perf_counter() - start, anon))
            if anon > peak_anon[0]:
                peak_anon[:] = [anon, time.perf_counter() - start]
            peak_tree[0] = max(peak_tree[0], _tree_anonymous())
            time.sleep(0.2)

    start = time.perf_counter()
    threading.Thread(target=sample, daemon=True).start()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here
    cpu = _cpu_seconds()
    result = run_release(prepared, config, embedder.encode, reading=attacker)
    wall = time.perf_counter() - start
    print(f"run_release {wall:.1f} s, {_cpu_seconds() - cpu:.0f} CPU-s with its workers, chosen "
          f"{result.choice.release_id}; peak {_status('VmHWM'):.2f} GB resident, {peak_anon[0]:.2f} GB "
          f"anonymous; load {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    at, stage_of_peak = 0.0, "after the stages"
    for stage, seconds in result.timings.get("release", {}).items():
        inner = stage.startswith("prefetch ")  # a part of the prefetch, not a stage of its own
        held = [gb for t, gb in list(samples) if at <= t < at + seconds] if not inner else []
        print(f"  {stage:20s} {seconds:8.1f} s" + (f"   peak anonymous {max(held):.2f} GB" if held else ""))
        if not inner and at <= peak_anon[1] < at + seconds:
            stage_of_peak = stage
        at += 0.0 if inner else seconds
    print(f"peak anonymous memory {peak_anon[1]:.0f} s into run_release, in: {stage_of_peak}; "
          f"with its workers {peak_tree[0]:.2f} GB")
    print(_protection(result.candidates.table, result.choice.release_id), flush=True)
    if args.write:
        from neswap_core.publish.writer import write_release

        written = time.perf_counter()
        Path("/proc/self/clear_refs").write_text("5")
        write_release(result, work / "out")
        during = [gb for t, gb in list(samples) if t >= written - start]
        print(f"write {time.perf_counter() - written:.1f} s; peak {_status('VmHWM'):.2f} GB resident, "
              f"{max(during, default=float('nan')):.2f} GB anonymous; load "
              f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    return 0


def _protection(table, release_id: str) -> str:
    """The chosen release's measured figures, each attacker's share of passages and documents
    named (``chunk_accuracy.<member>``) and words kept: whether the release protects."""
    rows = table[table["release_id"] == release_id] if "release_id" in table else table.iloc[:0]
    if rows.empty:
        return f"{release_id}: not in the candidate table"
    row = rows.iloc[0]
    members = sorted(c.split(".", 1)[1] for c in table.columns if c.startswith("chunk_accuracy."))
    parts = [f"{m} {row[f'chunk_accuracy.{m}']:.3f} / {row.get(f'document_accuracy.{m}', float('nan')):.3f}"
             for m in members]  # fmt: skip
    head = ", ".join(f"{k} {float(row[k]):.3f}" for k in ("chunk_accuracy", "document_accuracy",
                                                         "words_unchanged", "du", "chance") if k in row)  # fmt: skip
    return f"released {release_id}: {head}\n  passages / documents named: " + "; ".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
