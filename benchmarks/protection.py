"""Documents nobody can name (issue 22): every candidate of the release path against the panel.

    OMP_NUM_THREADS=1 NESWAP_CACHE_DIR=.neswap-cache .venv/bin/python benchmarks/protection.py \
        [--corpus PATH] [--no-plans] [--no-adaptive] [--adaptive-all] [--levels 0.14 0.19]
        [--csv benchmarks/results/protection.csv]

On the dev corpus (35 calls) with its ``attacker/`` reading (112 other-quarter calls), runs the
library's one release path (``prepare_release`` → ``run_release``: the paper's sweep, the plan
grid, the document-defence candidates with the defender cross-fitted on the reading) with the
default goal, then measures raw, the paper's default release (the trade-off line's choice), the
plan grid's stages and every document-defence candidate with the attacker panel fitted on the
whole reading (``measure.panel``: core word, char, MiniLM, retrieval; evaluation-only bm25, svm,
nb, word C=1) and the Loughran–McDonald tone (``measure.tone``), and prints each figure against
the issue's targets with its ratio:

* at ≥ 85 % of words unchanged every panel attacker names ≤ 50 % of documents and ≤ 0.30 of
  chunks; at ≥ 80 %, ≤ 25 % of documents;
* tone correlation ≥ 0.9 at that release;
* the adaptive attacker (word, char, retrieval refitted on the reading after the same defence)
  within +0.10 of the non-adaptive one, chunks and documents;
* transfer: the families the defender models (word, char, retrieval) against held-out ones
  (MiniLM, bm25, svm, nb, word C=1), and a company split (the level chosen on half the
  companies, figures on the other half).
Wall time, CPU seconds and the load average are printed: the machine is shared.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import resource
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV = ROOT.parent.parent / "shared" / "corpus" / "dev"
if not DEV.is_dir():
    DEV = Path("/work/shared/corpus/dev")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from neswap_core.config import RunConfig  # noqa: E402
from neswap_core.corpus import Chunk  # noqa: E402
from neswap_core.measure.panel import CORE_FAMILIES, EXTRA_FAMILIES, AttackerPanel  # noqa: E402
from neswap_core.measure.tone import tone_report  # noqa: E402

MODELLED = ("word", "char", "retrieval")
HELD_OUT = ("embedding", "bm25", "svm", "nb", "word_c1")
TARGETS = {"chunk": 0.30, "doc85": 0.50, "doc80": 0.25, "tone": 0.9, "adaptive": 0.10}


def cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def check(label: str, value: float, target: float, below: bool = True) -> None:
    ok = value <= target + 1e-12 if below else value >= target
    ratio = value / target if target else float("nan")
    print(f"  {label:<62}{value:7.3f}  target {'<=' if below else '>='} {target:<5g} ratio "
          f"{ratio:5.2f}  {'met' if ok else 'NOT met'}")  # fmt: skip


def cached_panel(units, vectors, families, cache: Path) -> AttackerPanel:
    texts, labels, ids = units
    h = hashlib.sha256(repr((families, texts, labels)).encode()).hexdigest()[:16]
    path = cache / "document_defence" / f"panel_{h}.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    panel = AttackerPanel(families).fit(texts, labels, ids, vectors)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(panel))
    return panel


def doc_texts(chunks) -> list[str]:
    by: dict[str, list[str]] = {}
    for c in chunks:
        by.setdefault(c.doc_id, []).append(c.text)
    return [" ".join(by[k]) for k in sorted(by)]


def measure(name, changed: dict[int, str], row, scorer, base_chunks, before_docs) -> dict:
    score = scorer.score(changed)
    after = [Chunk(c.chunk_id, c.doc_id, c.index, changed.get(p, c.text), c.protected)
             for p, c in enumerate(base_chunks)]
    tone = tone_report(before_docs, doc_texts(after))
    out = {"candidate": name, "words_unchanged": row.get("words_unchanged", 1.0), "du": row.get("du", 1.0),
           **score.row(), "worst_core_chunk": score.worst(CORE_FAMILIES)[0],
           "worst_core_doc": score.worst(CORE_FAMILIES)[1], "worst_all_chunk": score.worst()[0],
           "worst_all_doc": score.worst()[1], "modelled_chunk": score.worst(MODELLED)[0],
           "modelled_doc": score.worst(MODELLED)[1], "held_out_chunk": score.worst(HELD_OUT)[0],
           "held_out_doc": score.worst(HELD_OUT)[1], **tone}  # fmt: skip
    out["_score"] = score
    fams = " ".join(f"{f} {out[f + '_chunk']:.2f}/{out[f + '_doc']:.2f}" for f in CORE_FAMILIES + EXTRA_FAMILIES
                    if f + "_chunk" in out)  # fmt: skip
    print(f"{name:<26} words {out['words_unchanged']:.3f} DU {out['du']:.3f} | worst core "
          f"{out['worst_core_chunk']:.2f}/{out['worst_core_doc']:.2f} all {out['worst_all_chunk']:.2f}/"
          f"{out['worst_all_doc']:.2f} | {fams} | tone r {tone['tone_corr']:.3f} kept "
          f"{tone['tone_words_kept']:.3f}", flush=True)  # fmt: skip
    return out


def adaptive(documents, level: float, units, config, cache: Path, scorer_args) -> dict:
    """Word, char and retrieval refitted on the reading after the same defence (corpus-only
    ranking on the reading itself: the reading has no reading of its own), scoring the release."""
    from neswap_core.generate.document import DefenceParams
    from neswap_core.generate.document_budget import defend, prepare_defence
    from neswap_core.generate.document_terms import TermModel

    texts, labels, ids = units
    reading = [Chunk(f"{d}#{i:05d}", d, i, t, y) for i, (t, y, d) in enumerate(zip(texts, labels, ids, strict=True))]
    s = config.document
    params = DefenceParams(level=level, min_z=s.document_min_z, fill=s.document_fill, top_k=s.document_top_k)
    model = TermModel(random_state=12).fit(reading)
    prep = prepare_defence(reading, model, params, np.random.default_rng(12))
    defended = defend(reading, model, params, prep)
    new_units = ([c.text for c in defended.chunks], labels, ids)
    panel = cached_panel(new_units, None, MODELLED, cache)
    scorer = panel.scorer(*scorer_args)
    return scorer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--no-plans", action="store_true")
    ap.add_argument("--no-adaptive", action="store_true")
    ap.add_argument("--adaptive-all", action="store_true",
                    help="also the adaptive attacker at every document level (about 1 min each)")
    ap.add_argument("--levels", type=float, nargs="*", default=None,
                    help="document_levels to build (default: the product's default grid)")
    ap.add_argument("--csv", default=str(ROOT / "benchmarks" / "results" / "protection.csv"))
    args = ap.parse_args()
    from neswap_core.models.embedding import Embedder
    from neswap_core.paths import resolve_cache_dir
    from neswap_core.publish.evaluate import fit_reading
    from neswap_core.run_release import prepare_release, run_release

    t0, c0 = time.perf_counter(), cpu()
    plans = {} if args.no_plans else {"plan_rounds": 3, "plan_terms": [True],
                                      "plan_redaction_levels": [0.0, 0.08],
                                      "plan_redaction_fill": "decoy"}  # fmt: skip
    if args.levels is not None:
        plans["document_levels"] = list(args.levels)
    config = RunConfig.of(corpus=args.corpus, cache_dir=os.environ.get("NESWAP_CACHE_DIR", ""), **plans)
    cache = resolve_cache_dir(config.prepare.cache_dir)
    embedder = Embedder(config.prepare.embedding_model, cache_dir=cache, backend=config.prepare.embedding_backend)
    prepared = prepare_release(config, embedder=embedder)
    print(f"prepared {len(prepared.chunks)} chunks: {time.perf_counter() - t0:.0f} s (load {load()})", flush=True)
    reading = fit_reading(config.corpus, prepared.chunks, prepared.raw, config.protect, cache)
    t1, c1 = time.perf_counter(), cpu()
    result = run_release(prepared, config, embedder.encode, reading=reading)
    release_wall, release_cpu = time.perf_counter() - t1, cpu() - c1
    cands = result.candidates
    table = cands.table
    print(f"release path (sweep, plans, document defence, reading attacker, candidate table): "
          f"{release_wall:.0f} s wall, {release_cpu:.0f} CPU-s (load {load()}); written: "
          f"{result.choice.release_id} ({result.choice.reason})", flush=True)
    base = cands.ctx.chunks
    units = reading.units_
    t2 = time.perf_counter()
    vectors = np.asarray(embedder.encode(list(units[0])), np.float32)
    panel = cached_panel(units, vectors, CORE_FAMILIES + EXTRA_FAMILIES, cache)
    scorer_args = ([c.text for c in base], [c.protected for c in base], [c.doc_id for c in base])
    scorer = panel.scorer(*scorer_args, np.asarray(cands.ctx.embeddings, np.float32), embedder.encode)
    print(f"panel ({len(units[0])} reading windows, 8 families; cached) + pre-release scores: "
          f"{time.perf_counter() - t2:.0f} s (load {load()})", flush=True)
    before_docs = doc_texts(base)
    rows = [measure("raw", {}, {}, scorer, base, before_docs)]
    line = result.choice.line.index
    names = ([("paper default: " + str(line), str(line))] if line is not None else [])
    names += [(rid, rid) for rid in table.index if table.loc[rid, "sampler"] != "paper"]
    for label, rid in names:
        changed = {p: c.text for p, c in cands.source(rid).changed().items() if c.text != base[p].text}
        rows.append(measure(label, changed, table.loc[rid].to_dict(), scorer, base, before_docs))
    frame = pd.DataFrame([{k: v for k, v in r.items() if k != "_score"} for r in rows])
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.csv, index=False)

    print("\nAgainst the targets (worst case over all eight families, evaluation-only included):")
    for floor, doc_target in ((0.85, TARGETS["doc85"]), (0.80, TARGETS["doc80"])):
        pool = [r for r in rows[1:] if r["words_unchanged"] >= floor]
        if not pool:
            print(f"  no candidate at >= {floor:.0%} of words unchanged")
            continue
        best = min(pool, key=lambda r: (r["worst_all_doc"], r["worst_all_chunk"]))
        print(f" best at >= {floor:.0%} of words: {best['candidate']} ({best['words_unchanged']:.1%} of words)")
        check("every attacker: documents named (worst of 8)", best["worst_all_doc"], doc_target)
        check("every attacker: chunks named (worst of 8)", best["worst_all_chunk"], TARGETS["chunk"])
        check("core panel: documents named (worst of 4)", best["worst_core_doc"], doc_target)
        check("core panel: chunks named (worst of 4)", best["worst_core_chunk"], TARGETS["chunk"])
        check("tone correlation", best["tone_corr"], TARGETS["tone"], below=False)
        print(f"  transfer: modelled (word, char, retrieval) {best['modelled_chunk']:.2f}/"
              f"{best['modelled_doc']:.2f} vs held-out (MiniLM, bm25, svm, nb, C=1) "
              f"{best['held_out_chunk']:.2f}/{best['held_out_doc']:.2f}")
        companies = sorted(set(units[1]))
        rng = np.random.default_rng(0)
        half_a = set(rng.choice(companies, len(companies) // 2, replace=False))
        doc_rows = [r for r in pool if r["candidate"].startswith("document ")]
        if doc_rows:  # company split: the level chosen on half A, its figures on half B
            on_a = min(doc_rows, key=lambda r: scorer.subset(r["_score"], half_a).worst(MODELLED)[::-1])
            a = scorer.subset(on_a["_score"], half_a).worst()
            b = scorer.subset(on_a["_score"], set(companies) - half_a).worst()
            print(f"  company split: chosen on {len(half_a)} companies: {on_a['candidate']}: "
                  f"A {a[0]:.2f}/{a[1]:.2f}, held-out B {b[0]:.2f}/{b[1]:.2f} (worst of 8, chunks/documents)")
        if not args.no_adaptive and best["candidate"].startswith("document "):
            t3 = time.perf_counter()
            level = float(table.loc[best["candidate"], "description"].split("up to ")[1].split(" %")[0]) / 100
            adaptive_scorer = adaptive(cands.documents, level, units, config, cache, scorer_args)
            changed = {p: c.text for p, c in cands.source(best["candidate"]).changed().items()}
            s = adaptive_scorer.score(changed)
            fams = " ".join(f"{f} {s.families[f].chunk_accuracy:.2f}/{s.families[f].document_accuracy:.2f}"
                            for f in MODELLED)  # fmt: skip
            worst_a = s.worst()
            worst_n = best["_score"].worst(MODELLED)
            print(f"  adaptive (word, char, retrieval refitted on the defended reading; "
                  f"{time.perf_counter() - t3:.0f} s): {fams}")
            check("adaptive gain, chunks (worst of 3)", worst_a[0] - worst_n[0], TARGETS["adaptive"])
            check("adaptive gain, documents (worst of 3)", worst_a[1] - worst_n[1], TARGETS["adaptive"])
    if args.adaptive_all:
        print("\nAdaptive attacker at every document level (word, char, retrieval; chunks/documents):")
        for r in rows:
            if not r["candidate"].startswith("document "):
                continue
            level = float(table.loc[r["candidate"], "description"].split("up to ")[1].split(" %")[0]) / 100
            changed = {p: c.text for p, c in cands.source(r["candidate"]).changed().items()}
            s = adaptive(cands.documents, level, units, config, cache, scorer_args).score(changed)
            fams = " ".join(f"{f} {s.families[f].chunk_accuracy:.2f}/{s.families[f].document_accuracy:.2f}"
                            for f in MODELLED)  # fmt: skip
            worst, plain = s.worst(), r["_score"].worst(MODELLED)
            print(f"  {r['candidate']:<16} words {r['words_unchanged']:.3f} | adaptive {fams} | worst "
                  f"{worst[0]:.2f}/{worst[1]:.2f} (non-adaptive {plain[0]:.2f}/{plain[1]:.2f})", flush=True)
    written = result.choice.release_id
    print(f"\nDefault release (goal: documents named at most 0.5 by the primary attacker "
          f"'{table.loc[written, 'attacker'] if 'attacker' in table else '?'}'): {written}, goal met "
          f"{result.goal_met}")
    print(f"whole benchmark: {time.perf_counter() - t0:.0f} s wall, {cpu() - c0:.0f} CPU-s, load {load()}")


if __name__ == "__main__":
    main()
