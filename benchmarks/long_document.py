"""Long documents: seconds per MB of every step a release runs on whole documents (issue 23 #10).

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/long_document.py [--mb 1 2 4]
        [--release MB]

Part 1 (no models, a few seconds): a synthetic call of 1, 2 and 4 MB (sentences of common words
and figures, invented) through presentation extraction, identifier suppression, the leak scan
of its chunks, the words-unchanged measure of its chunks and the TAB spans of ``key/`` (a
whole-document token diff against the text with 2 % of its words replaced, as a release does).
Prints wall and CPU seconds, CPU seconds per MB, and the slope of log CPU time on log size
(1 = linear, 2 = quadratic) per step, against the target: every slope <= 1.2.

Part 2 (``--release MB``, minutes): the command-line ``release`` on the bundled sample with one
document made ``MB`` megabytes long (its own text repeated, so the embedding and entity caches
of a first run serve later runs), default settings: wall seconds and seconds per MB of the whole
corpus. The issue's 5.8 MB document did not finish in 10 minutes (a whole-document difflib).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from neswap_core.corpus import Document  # noqa: E402
from neswap_core.measure.release_measures import word_counts  # noqa: E402
from neswap_core.publish.annotations import changed_mentions  # noqa: E402
from neswap_core.publish.leaks import LeakTerm, scan_release  # noqa: E402
from neswap_core.text.identifiers import suppress_identifiers  # noqa: E402
from neswap_core.text.presentation import extract_presentation  # noqa: E402

SLOPE_TARGET = 1.2
WORDS = (
    "revenue margin growth quarter customers demand pricing costs cash flow guidance segment "
    "market product services supply chain backlog orders inventory capital dividend outlook "
    "the a of and in to we our for with on as by strong higher lower year million billion"
).split()


def synthetic_call(mb: float, seed: int = 0) -> str:
    """About ``mb`` megabytes of prepared remarks: paragraphs of sentences, invented."""
    rng = np.random.default_rng(seed)
    n = int(mb * 1e6 / 6.5)
    words, figures = rng.choice(WORDS, size=n), rng.integers(1, 999, size=n)
    out, sentence = [], []
    for k in range(n):
        sentence.append(f"{words[k]} {figures[k]}" if k % 9 == 0 else str(words[k]))
        if len(sentence) >= 12 + k % 7:
            out.append(" ".join(sentence).capitalize() + ". ")
            sentence = []
            if len(out) % 6 == 0:
                out.append("Acme Widgets grew, said Jane Doe.\n\n")
    return "".join(out)


def replaced(text: str, share: float = 0.02, seed: int = 1) -> str:
    rng = np.random.default_rng(seed)
    tokens = text.split(" ")
    for k in rng.choice(len(tokens), size=int(share * len(tokens)), replace=False):
        tokens[k] = "[Location]"
    return " ".join(tokens)


def steps(text: str) -> dict:
    """The release's whole-document steps on ``text`` (module docstring), as callables."""
    chunks = [c for c in text.split("\n\n") if c.strip()]
    after = [replaced(c) for c in chunks]
    terms = [LeakTerm("Acme Widgets", "alias", frozenset({"d"})), LeakTerm("Jane Doe", "executive")]
    released = replaced(text)
    return {
        "presentation": lambda: extract_presentation(Document("d", text)),
        "suppression": lambda: suppress_identifiers(text, ("Acme Widgets",), ("Jane Doe",)),
        "leak scan": lambda: scan_release({"d": after}, terms, {"d": "d"}),
        "words unchanged": lambda: [word_counts(a, b) for a, b in zip(chunks, after, strict=True)],
        "TAB spans": lambda: changed_mentions(text, released),
    }


def timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def part_one(sizes: list[float]) -> int:
    print("Part 1: whole-document steps on a synthetic call (no models)")
    print(f"{'step':<17}" + "".join(f"{f'{mb:g} MB wall/CPU s':>22}" for mb in sizes)
          + f"{'CPU s per MB':>14}{'slope':>7}")
    for fn in steps(synthetic_call(0.01)).values():  # load word lists and compile patterns once
        fn()
    texts = {mb: synthetic_call(mb) for mb in sizes}
    real_mb = {mb: len(t.encode()) / 1e6 for mb, t in texts.items()}
    rows: dict[str, list[tuple[float, float]]] = {}
    for mb in sizes:
        for name, fn in steps(texts[mb]).items():
            rows.setdefault(name, []).append(timed(fn))
    worst = 0.0
    for name, times in rows.items():
        cpu = [c for _, c in times]
        slope = float(np.polyfit(np.log([real_mb[m] for m in sizes]), np.log(np.maximum(cpu, 1e-4)), 1)[0])
        worst = max(worst, slope)
        cells = "".join(f"{w:>13.2f} / {c:<6.2f}" for w, c in times)
        print(f"{name:<17}{cells}{cpu[-1] / real_mb[sizes[-1]]:>14.2f}{slope:>7.2f}")
    print(f"worst slope {worst:.2f}; target <= {SLOPE_TARGET} (ratio {worst / SLOPE_TARGET:.2f})")
    print("machine load (1/5/15 min): " + "/".join(f"{x:.1f}" for x in os.getloadavg()))
    return 0


def part_two(mb: float) -> int:
    sample = ROOT / "data" / "sample"
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        shutil.copytree(sample, corpus)
        long_doc = corpus / "docs" / "DLB_q3_2021.txt"
        base = long_doc.read_text()
        long_doc.write_text("\n".join([base] * max(1, round(mb * 1e6 / len(base)))))
        size = sum(p.stat().st_size for p in (corpus / "docs").glob("*.txt")) / 1e6
        cache = ROOT / "benchmarks" / ".cache" / "long_document"
        config = Path(tmp) / "run.toml"
        out = subprocess.run([sys.executable, "-m", "neswap_core", "config"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        lines = [f'corpus = "{corpus}"' if x.startswith("corpus =") else
                 f'cache_dir = "{cache}"' if x.startswith("cache_dir =") else x
                 for x in out.splitlines()]
        config.write_text("\n".join(lines) + "\n")
        wall, cpu0 = time.perf_counter(), os.times()
        done = subprocess.run([sys.executable, "-m", "neswap_core", "release", "--config",
                               str(config), "--out", str(Path(tmp) / "out")], cwd=ROOT,
                              capture_output=True, text=True)
        wall, cpu1 = time.perf_counter() - wall, os.times()
        cpu = (cpu1.children_user + cpu1.children_system) - (cpu0.children_user + cpu0.children_system)
    print(f"\nPart 2: release on the sample with one {mb:g} MB "
          f"document ({size:.1f} MB in all): exit {done.returncode}, {wall:.1f} s wall, "
          f"{cpu:.1f} CPU-s, {wall / size:.1f} s per MB of corpus")
    if done.returncode not in (0, 3, 4):
        print(done.stderr[-2000:])
    print("machine load (1/5/15 min): " + "/".join(f"{x:.1f}" for x in os.getloadavg()))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    ap.add_argument("--release", type=float, default=0.0, metavar="MB")
    args = ap.parse_args()
    part_one(sorted(args.mb))
    if args.release:
        part_two(args.release)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
