"""The whole cold ``release`` against one plain embedding pass over the corpus's sentences (issue 21).

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/release_end_to_end.py [--corpus PATH]
        [--defaults | --rounds 6 --levels 0 0.04 0.08 0.14 --fill mask] [--processes N]
        [--no-warm] [--log FILE] [--keep DIR] [--document-levels 0.10 0.19 0.30]

``--defaults`` times what a user gets with no settings (the default candidate grid, document
defence included, and the default goal); otherwise the plan grid given. ``--document-levels``
replaces the document defence's levels (each costs about one embedding of the changed corpus:
``embedding_volume.py``), to time that trade-off.

One run, one process tree, each measurement in a fresh child process (so no model, cache or
import is shared between them):

1. the anchor: a plain sentence-transformers pass (``SentenceTransformer.encode``, batch 32, the
   installed MiniLM, torch on every core as a plain pass runs) over the sentences of the corpus (``text.sentences.split_sentences`` of
   every document), model load included, run before and after the release (the mean is used,
   since the machine's load moves between the two);
2. the cold release (after the one-time ONNX export of MiniLM into the fresh cache folder, the
   per-machine step ``benchmarks/preprocess.py`` also times apart, printed on its own): the library's one release path (``run_release.prepare_release`` (with
   ``tag_reading``: the reading's people detection in the preparation's processes) →
   ``publish.evaluate.fit_reading`` (the corpus's ``attacker/`` reading; its fit in a worker
   during the mixture and the walk, as ``release_from_config`` does) →
   ``neswap_core.run_release`` (mixture, sweep, attackers, candidate table with the plan grid)
   → ``publish.writer.write_release`` (bundle, leak scan, attack and audit files)) with a fresh
   cache folder, models loaded inside the timing;
3. the warm re-run: the same release again on the now-warm cache (target <= 5 s).

Prints the ratio cold release / anchor (target <= 1.5), each stage's wall seconds (the
ReleaseResult timings plus reading and writing), CPU seconds of each child (threads included),
its peak resident memory and the load average before and after. Beside each stage and each
phase of ``run_release`` it prints how many of the machine's cores were busy on average and
the core-seconds left idle (``/proc/stat`` read at every stage's start and end and at every
progress message: the whole machine, so run it on an idle one): where a faster release has to
find its time. ``--log`` also writes the printed figures as JSON lines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The dev corpus beside the checkout (/work/main) or beside its worktree folder (/work/wt/NAME).
DEV = next((p / "shared" / "corpus" / "dev" for p in ROOT.parents[:2]
            if (p / "shared" / "corpus" / "dev").is_dir()), ROOT.parent / "shared" / "corpus" / "dev")
RATIO_TARGET, WARM_TARGET_S = 1.5, 5.0


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_gb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024**2
    return float("nan")


def _busy_seconds() -> float | None:
    """Seconds the machine's CPUs have been busy since boot (/proc/stat: user, nice, system,
    irq and softirq; idle, iowait and steal left out), or None off Linux."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


class CoreUse:
    """Busy cores per span of a run: ``mark(name)`` ends the running span and starts ``name``."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self._open: tuple[str, float, float | None] | None = None

    def mark(self, name: str | None) -> None:
        now, busy = time.perf_counter(), _busy_seconds()
        if self._open is not None:
            label, t0, b0 = self._open
            if self.spans and self.spans[-1]["name"] == label:  # one span per phase
                self.spans[-1]["s"] += now - t0
                if busy is not None and b0 is not None:
                    self.spans[-1]["busy_s"] += busy - b0
            else:
                self.spans.append({"name": label, "s": now - t0,
                                   "busy_s": (busy - b0) if busy is not None and b0 is not None else 0.0})
        self._open = None if name is None else (name, now, busy)


#: run_release's progress fractions (run_release.py): where each of its phases starts.
RUN_RELEASE_PHASES = ((0.05, "mixture"), (0.1, "prefetch"), (0.5, "sweep"), (0.55, "attackers"),
                      (1.01, "candidates, finish"))


def _phase(fraction: float) -> str:
    return next(name for limit, name in RUN_RELEASE_PHASES if fraction < limit)


def corpus_sentences(corpus: str) -> list[str]:
    """Every sentence of the corpus's documents: what the anchor embeds (also
    ``embedding_volume.py``'s yardstick)."""
    sys.path.insert(0, str(ROOT))
    from neswap_core.text.loading import load_corpus
    from neswap_core.text.sentences import split_sentences

    docs = load_corpus(corpus)
    return [s.text for d in docs.documents for s in split_sentences(d.text)]


def anchor(corpus: str) -> dict:
    """A plain sentence-transformers pass over every sentence of the corpus, model load included."""
    sentences = corpus_sentences(corpus)  # puts the checkout on the path
    from neswap_core.models.embedding import embedding_model_path

    start, cpu = time.perf_counter(), _cpu()
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(os.cpu_count() or 1)  # what a plain pass uses: every core
    model = SentenceTransformer(str(embedding_model_path()), device="cpu")
    model.encode(sentences, batch_size=32, show_progress_bar=False)
    return {"s": time.perf_counter() - start, "cpu_s": _cpu() - cpu, "sentences": len(sentences),
            "peak_gb": _peak_gb()}


def export(cache: str) -> dict:
    """The one-time export of the packaged MiniLM for the ONNX backends into ``cache``."""
    sys.path.insert(0, str(ROOT))
    from neswap_core.config import DEFAULT_EMBEDDING_BACKEND
    from neswap_core.models.embedding import load_encoder, resolve_backend

    start = time.perf_counter()
    backend = resolve_backend(DEFAULT_EMBEDDING_BACKEND)
    if backend.startswith("onnx"):
        load_encoder(backend=backend, cache_dir=cache)
    return {"s": time.perf_counter() - start, "backend": backend}


def release(corpus: str, cache: str, out: str, rounds: int, levels: list[float], fill: str,
            processes: int | None, defaults: bool = False,
            document_levels: list[float] | None = None) -> dict:
    """The library's one release path, cold or warm depending on ``cache``; seconds per stage."""
    start, cpu = time.perf_counter(), _cpu()
    sys.path.insert(0, str(ROOT))
    import neswap_core as nc
    from neswap_core.config import RunConfig
    from neswap_core.models.embedding import Embedder
    from neswap_core.publish.evaluate import fit_reading
    from neswap_core.publish.writer import write_release
    from neswap_core.run_release import prepare_release

    extra = {} if document_levels is None else {"document_levels": list(document_levels)}
    config = (RunConfig.of(corpus=corpus, cache_dir=cache, out=out, **extra) if defaults else
              RunConfig.of(corpus=corpus, cache_dir=cache, out=out, plan_rounds=rounds,
                           plan_redaction_levels=levels, plan_redaction_fill=fill, **extra))
    embedder = Embedder(config.prepare.embedding_model, cache,
                        backend=config.prepare.embedding_backend)
    stages: dict[str, float] = {"imports": time.perf_counter() - start}
    use = CoreUse()
    mark = time.perf_counter()
    use.mark("prepare")
    prepared = prepare_release(config, embedder=embedder, tag_reading=True)
    stages["prepare"] = time.perf_counter() - mark
    mark = time.perf_counter()
    use.mark("reading")
    reading = fit_reading(config.corpus, prepared.chunks, prepared.raw, config.protect, cache,
                          config.sweep.lineup, background=True)  # as release_from_config
    stages["reading"] = time.perf_counter() - mark
    mark = time.perf_counter()
    result = nc.run_release(prepared, config, embedder.encode, reading=reading, processes=processes,
                            progress=lambda fraction, message: use.mark(f"run_release: {_phase(fraction)}"))
    stages["run_release"] = time.perf_counter() - mark
    mark = time.perf_counter()
    use.mark("write")
    write_release(result, out)
    stages["write"] = time.perf_counter() - mark
    use.mark(None)
    row = result.row
    chosen = {} if row is None else {
        "words_unchanged": float(row["words_unchanged"]), "du": float(row["du"]),
        "chunk_accuracy": float(row["chunk_accuracy"]),
        "document_accuracy": float(row["document_accuracy"]),
        "worst": f"{row.get('worst_chunk_attacker', '')}/{row.get('worst_document_attacker', '')}",
        "goal_met": result.goal_met}
    return {"chosen": chosen, "s": time.perf_counter() - start, "cpu_s": _cpu() - cpu, "stages": stages,
            "timings": result.timings, "chunks": len(prepared.chunks),
            "documents": len(prepared.raw), "candidates": len(result.candidates.table),
            "release_id": str(result.choice.release_id), "peak_gb": _peak_gb(),
            "core_use": use.spans, "cpus": os.cpu_count() or 1}


@contextlib.contextmanager
def _kept(folder: str):
    """A folder made for the run and left in place afterwards (``--keep``)."""
    Path(folder).mkdir(parents=True)
    yield folder


def child(kind: str, args: argparse.Namespace, *extra: str) -> dict:
    """Run one measurement in a fresh Python process; its JSON result."""
    with tempfile.NamedTemporaryFile(suffix=".json") as handle:
        cmd = [sys.executable, __file__, "--corpus", args.corpus, "--rounds", str(args.rounds),
               *(["--processes", str(args.processes)] if args.processes else []),
               "--fill", args.fill, "--levels", *map(str, args.levels),
               *(["--defaults"] if args.defaults else []),
               *(["--document-levels", *map(str, args.document_levels)] if args.document_levels else []),
               "--child", kind, handle.name, *extra]
        subprocess.run(cmd, check=True, env={**os.environ, "TQDM_DISABLE": "1"})
        return json.loads(Path(handle.name).read_text())


def _print_release(label: str, r: dict) -> None:
    print(f"{label}: {r['s']:.1f} s wall, {r['cpu_s']:.1f} CPU-s, peak {r['peak_gb']:.2f} GB; "
          f"{r['documents']} documents, {r['chunks']} chunks, {r['candidates']} candidates, "
          f"released {r['release_id']}")
    if r.get("chosen"):
        c = r["chosen"]
        print(f"    chosen: {c['words_unchanged']:.1%} of words unchanged, DU {c['du']:.3f}; worst "
              f"attacker ({c['worst']}) names {c['chunk_accuracy']:.2f} of passages and "
              f"{c['document_accuracy']:.2f} of documents; goal met: {c['goal_met']}")
    for name, secs in r["stages"].items():
        print(f"    {name:<12}{secs:8.2f} s")
    if r.get("core_use"):
        cpus = r["cpus"]
        idle = sum(max(0.0, cpus * u["s"] - u["busy_s"]) for u in r["core_use"])
        print(f"    cores busy (of {cpus}; idle core-seconds), machine-wide:")
        for u in r["core_use"]:
            print(f"      {u['name']:<32}{u['s']:8.1f} s  {u['busy_s'] / max(u['s'], 1e-9):4.2f} busy  "
                  f"{max(0.0, cpus * u['s'] - u['busy_s']):6.1f} idle")
        print(f"      idle in all: {idle:.1f} of {cpus * sum(u['s'] for u in r['core_use']):.1f} "
              f"core-seconds")
    for group, table in r["timings"].items():
        if isinstance(table, dict):
            parts = ", ".join(f"{k} {v:.2f}" for k, v in table.items() if isinstance(v, (int, float)))
            print(f"    timings[{group}]: {parts}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--rounds", type=int, default=6, help="plan rounds of the grid (0: paper only)")
    ap.add_argument("--levels", type=float, nargs="+", default=[0.0, 0.04, 0.08, 0.14])
    ap.add_argument("--fill", default="mask", choices=("mask", "decoy"))
    ap.add_argument("--defaults", action="store_true",
                    help="the default settings (candidate grid, document defence, goal) instead")
    ap.add_argument("--processes", type=int, default=None,
                    help="embedding workers of the sweep (default one per CPU; 1: serial)")
    ap.add_argument("--no-warm", action="store_true", help="skip the warm re-run")
    ap.add_argument("--document-levels", type=float, nargs="+", default=None,
                    help="the document defence's levels instead of the settings' (default six)")
    ap.add_argument("--log", help="also append the figures as JSON lines to this file")
    ap.add_argument("--keep", metavar="DIR",
                    help="run in DIR (cache/, out/) and keep it, to study the run afterwards; "
                         "DIR must not exist (the cold run needs an empty cache)")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument("--release-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.child:
        kind, out = args.child
        if kind == "anchor":
            payload = anchor(args.corpus)
        elif kind == "export":
            payload = export(args.cache)
        else:
            payload = release(args.corpus, args.cache, args.release_out, args.rounds, args.levels,
                              args.fill, args.processes, args.defaults, args.document_levels)
        Path(out).write_text(json.dumps(payload))
        return 0

    load0 = os.getloadavg()
    grid = ("the default settings" if args.defaults else f"plan grid: {args.rounds} rounds x terms "
            f"on/off x redaction {args.levels} ({args.fill})")
    if args.document_levels:
        grid += f", document levels {args.document_levels}"
    print(f"corpus {args.corpus}; {grid}; {os.cpu_count()} CPUs, load {load0[0]:.2f} {load0[1]:.2f} "
          f"{load0[2]:.2f}; OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}", flush=True)
    if args.keep and Path(args.keep).exists():
        ap.error(f"--keep {args.keep} exists: the cold run needs a fresh folder")
    with (_kept(args.keep) if args.keep else tempfile.TemporaryDirectory(prefix="neswap-e2e-")) as tmp:
        cache, out = str(Path(tmp) / "cache"), str(Path(tmp) / "out")
        before = child("anchor", args)
        print(f"anchor (before): {before['s']:.1f} s wall, {before['cpu_s']:.1f} CPU-s over "
              f"{before['sentences']} sentences, peak {before['peak_gb']:.2f} GB", flush=True)
        made = child("export", args, "--cache", cache)
        print(f"one-time model export ({made['backend']} backend): {made['s']:.1f} s, not counted",
              flush=True)
        cold = child("release", args, "--cache", cache, "--release-out", out)
        _print_release("cold release", cold)
        after = child("anchor", args)
        print(f"anchor (after): {after['s']:.1f} s wall, {after['cpu_s']:.1f} CPU-s", flush=True)
        warm = None if args.no_warm else child("release", args, "--cache", cache,
                                               "--release-out", out)
        if warm:
            _print_release("warm re-run", warm)
    plain = (before["s"] + after["s"]) / 2
    ratio = cold["s"] / plain
    load1 = os.getloadavg()
    print(f"\nratio cold release / plain embedding pass: {cold['s']:.1f} / {plain:.1f} = "
          f"{ratio:.2f} (target <= {RATIO_TARGET}: {'met' if ratio <= RATIO_TARGET else 'NOT met'})")
    if warm:
        ok = warm["s"] <= WARM_TARGET_S
        print(f"warm re-run: {warm['s']:.1f} s (target <= {WARM_TARGET_S:g} s: "
              f"{'met' if ok else 'NOT met'}; ratio {warm['s'] / WARM_TARGET_S:.2f})")
    print(f"load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}; "
          f"whole run {_cpu():.1f} CPU-s (children included)")
    if args.log:
        with open(args.log, "a") as handle:
            handle.write(json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                     "load_before": load0, "load_after": load1,
                                     "anchor": [before, after], "cold": cold, "warm": warm,
                                     "ratio": ratio, "args": vars(args)}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
