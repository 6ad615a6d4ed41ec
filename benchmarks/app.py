"""Seconds of the dashboard's first load and of every interaction, as ratios to targets
(issues 5 and 13).

Usage: python benchmarks/app.py [--small] [--repeats 3]

Runs the app in ``streamlit.testing.v1.AppTest`` on the bundled sample corpus with a fresh
workspace (default settings: K = 10, 30 swaps; ``--small``: K = 5, 10 swaps). First the cold
first load of this process (models loaded, disk caches of NER and embeddings as they are), then
each page's first run (which fits and builds the releases once), then the *first load with warm
caches*: a new session opening the app, as a second analyst or a reload does (target ≤ 5 s).
Then interactions on the corpus, entities, frontier and swaps pages (median of ``--repeats``,
target ≤ 1 s each).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from neswap_core.workspace.store import Workspace  # noqa: E402

PAGES = ["1_corpus", "2_entities", "3_clusters", "4_swaps", "5_frontier", "6_export"]
TARGET_S = 1.0
FIRST_LOAD_TARGET_S = 5.0


def open_page(page: str) -> tuple[AppTest, float]:
    """A new session on ``page`` after its first run, and how long that first run took."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    at.switch_page(f"pages/{page}.py")
    start = time.perf_counter()
    at.run()
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].value}")
    return at, time.perf_counter() - start


def first_load() -> float:
    """Seconds for a new session to open the app (app.py, sidebar and the first page)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    start = time.perf_counter()
    at.run()
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return time.perf_counter() - start


def preparation_interactions(repeats: int) -> dict[str, float]:
    """Corpus threshold, entity correction (save, double-click, undo) and role changes."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    at.run()
    out = {"corpus · threshold slider": timed(
        lambda i: at.slider(key="threshold").set_value([80, 70, 75][i % 3]).run(), repeats)}
    ent, _ = open_page("2_entities")

    def save(i: int) -> AppTest:
        ent.text_input(key="corr_text").set_value(["SummerSlam", "Cardtronics", "GreenLake"][i % 3])
        next(b for b in ent.button if b.label == "Save correction").click()
        return ent.run()

    out["entities · save correction"] = timed(save, repeats)
    out["entities · save again (double click)"] = timed(
        lambda i: next(b for b in ent.button if b.label == "Save correction").click().run(),
        repeats)
    out["entities · role of a category"] = timed(
        lambda i: ent.selectbox(key="role_Location").set_value(["F", "S", "U"][i % 3]).run(),
        repeats)
    ent.selectbox(key="role_Location").set_value("S").run()
    times = []
    for _ in range(repeats):  # a new session each time: the sidebar of its first page
        home = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
        home.run()
        start = time.perf_counter()
        home.button(key="undo").click().run()
        times.append(time.perf_counter() - start)
    out["sidebar · undo"] = statistics.median(times)
    return out


def timed(action, repeats: int) -> float:
    """Median seconds of ``action()`` (each call runs the script once)."""
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        at = action(i)
        times.append(time.perf_counter() - start)
        if at.exception:
            raise RuntimeError(at.exception[0].value)
    return statistics.median(times)


def frontier_interactions(repeats: int) -> dict[str, float]:
    at, _ = open_page("5_frontier")
    c = at.slider(key="frontier_c")
    values = [c.min + (c.max - c.min) * f for f in (0.2, 0.5, 0.8, 0.35, 0.65)]
    out = {"frontier · offset c slider": timed(
        lambda i: at.slider(key="frontier_c").set_value(round(values[i % 5], 3)).run(), repeats)}
    out["frontier · slope a slider"] = timed(
        lambda i: at.slider(key="frontier_a").set_value([2.0, 5.0, 0.0][i % 3]).run(), repeats)
    labels = ["10¹⁰", "10³⁰", "10²⁰"]
    out["frontier · population N"] = timed(
        lambda i: at.radio(key="frontier_population").set_value(labels[i % 3]).run(), repeats)
    return out


def swaps_interactions(repeats: int) -> dict[str, float]:
    at, _ = open_page("4_swaps")
    keys = [r.key for r in at.radio if r.key and r.key.startswith("dec::")]
    out = {"swaps · accept/reject a pair": timed(
        lambda i: at.radio(key=keys[i % len(keys)]).set_value(["reject", "accept", ""][i % 3]).run(),
        repeats)}
    ids = at.selectbox(key="swaps_release").options
    out["swaps · switch release"] = timed(
        lambda i: at.selectbox(key="swaps_release").select_index((i * 7 + 3) % len(ids)).run(),
        repeats)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="K = 5, 10 swaps (as the tests)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="neswap-bench-"))
    os.environ["NESWAP_WORKSPACE"] = str(folder)
    if args.small:
        Workspace.open(folder).update_settings({"max_swaps": 10, "n_components": 5, "n_init": 1})
    rows: list[tuple[str, float, float | None]] = []
    rows.append(("first load, cold (models, disk caches as they are)", first_load(), None))
    for page in PAGES:  # first runs warm every cache (embedding, NER, mixture, sweep)
        at, first = open_page(page)
        start = time.perf_counter()
        at.run()
        rows.append((f"page {page} (first run {first:.1f} s)", time.perf_counter() - start,
                     None))
    rows.append(("first load with warm caches (new session)", first_load(), FIRST_LOAD_TARGET_S))
    for name, seconds in {**frontier_interactions(args.repeats),
                          **swaps_interactions(args.repeats),
                          **preparation_interactions(args.repeats)}.items():
        rows.append((name, seconds, TARGET_S))
    settings = "K = 5, 10 swaps" if args.small else "default settings (K = 10, 30 swaps)"
    print(f"AppTest on the bundled sample, {settings}; warm caches; median of {args.repeats} "
          "for interactions\n")
    print(f"{'what':<52} {'seconds':>8}  {'target':>7}  {'ratio':>6}")
    for name, seconds, target in rows:
        if target is None:
            print(f"{name:<52} {seconds:>8.3f}")
        else:
            print(f"{name:<52} {seconds:>8.3f}  {target:>6g}s  {seconds / target:>6.2f}")
    print("\nratio = seconds / target (≤ 1 meets the target)")


if __name__ == "__main__":
    main()
