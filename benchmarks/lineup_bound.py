"""Line-ups bound the whole-corpus figures from above (issue 21, measure/lineups.py): measured.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/lineup_bound.py --release DIR
        [--corpus ../shared/corpus/dev] [--lineups 0 25 12]

``DIR`` is a release of the corpus (``python -m neswap_core release CORPUS --out DIR``; the dev
default release). For each line-up size L (0: every company at once) the reading attacker, the
panel (word, char, embedding, retrieval) and the in-corpus attacker are fitted with line-ups of
at most L companies, exactly as a release with ``sweep.lineup = L`` fits them, and score the
raw corpus and the release's written text. Prints chunk / document accuracy per attacker and the
worst case, and chance. Naming among fewer companies is the easier task, so every figure at a
small L should be at or above the whole-corpus one: a release judged with line-ups is judged by
stronger attackers (conservative), never weaker.

``--two-stage``: also the alternative that was rejected, for the word (reading) attacker — a
line-up classifier times the line-up's own model (a hierarchical softmax: names among *all*
companies at about linear cost, no masking). It is a different model from the flat one and can
be weaker than it: it would understate the risk.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

ROOT = Path(__file__).resolve().parents[1]
DEV = next((p / "shared" / "corpus" / "dev" for p in ROOT.parents[:2]
            if (p / "shared" / "corpus" / "dev").is_dir()), ROOT.parent / "shared" / "corpus" / "dev")


class _TwoStage:
    """log p(company) = log p(line-up | text) + log p(company | text, line-up)."""

    def __init__(self, top, inner, lineup):
        self.top, self.inner, self.classes_ = top, inner, inner.classes_
        where = {c: i for i, c in enumerate(top.classes_)}
        self.columns_ = [where[f"lineup{g}"] for g in lineup]

    def log_proba_at(self, positions, texts):
        return self.inner.predict_log_proba(texts) + self.top.predict_log_proba(texts)[:, self.columns_]


def _two_stage(reading, pre, changed, size: int, seed: int) -> list[float]:
    from neswap_core.measure.attack import TextAttacker, text_attacker
    from neswap_core.measure.attack_scores import ReleaseScorer

    texts, labels, _ = reading.units_
    inner = text_attacker(texts, labels, lineup=size, random_state=seed)
    of = dict(zip(inner.classes_, inner.lineup_, strict=True))
    top = TextAttacker(random_state=seed).fit(texts, [f"lineup{of[v]}" for v in labels])
    model = _TwoStage(top, inner, inner.lineup_)  # no lineup_: scored among every company
    scorer = ReleaseScorer(model, [c.text for c in pre], [c.protected for c in pre], [c.doc_id for c in pre])
    raw, out = scorer.pre_release(), scorer.score(changed)
    return [raw.chunk_top1, raw.document_accuracy, out.chunk_top1, out.document_accuracy]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", required=True, help="a release folder of the corpus")
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--lineups", type=int, nargs="+", default=[0, 25, 12])
    ap.add_argument("--two-stage", action="store_true", help="also the rejected two-stage word attacker")
    ap.add_argument("--log", help="also append the figures as one JSON line to this file")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from neswap_core.choose.scorers import build_scorers
    from neswap_core.config import RunConfig
    from neswap_core.generate.rewrite import apply_roles
    from neswap_core.models.embedding import Embedder
    from neswap_core.prepare.pipeline import prepare_path
    from neswap_core.publish.attack_report import released_changes
    from neswap_core.publish.evaluate import _released_texts, fit_reading

    release = Path(args.release)
    config = RunConfig.load(release / "key" / "config.toml")
    config.corpus = args.corpus
    config.prepare.cache_dir = str(ROOT / ".neswap-cache")
    embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir,
                        backend=config.prepare.embedding_backend)
    prepared = prepare_path(args.corpus, config, embedder=embedder)
    pre = apply_roles(list(prepared.chunks), dict(config.roles))
    changed = released_changes([c.text for c in pre], [c.doc_id for c in pre], _released_texts(release))
    companies = len({c.protected for c in pre})
    print(f"{args.corpus}: {len(pre)} passages, {companies} companies; release {release} changes "
          f"{len(changed)} passages (load {os.getloadavg()[0]:.2f})")
    rows = []
    for size in args.lineups:
        start = time.perf_counter()
        reading = fit_reading(args.corpus, prepared.chunks, prepared.raw, config.protect,
                              config.prepare.cache_dir, size)
        scorers = build_scorers(pre, reading, random_state=config.sweep.seed,
                                families=config.sweep.panel_families, embed=embedder.encode,
                                cache_dir=config.prepare.cache_dir, lineup=size)  # fmt: skip
        row: dict = {"lineup": size, "attackers": {}}
        for name, scorer in scorers.items():
            raw, out = scorer.pre_release(), scorer.score(changed)
            row["attackers"][name] = [raw.chunk_top1, raw.document_accuracy, out.chunk_top1,
                                      out.document_accuracy]  # fmt: skip
            row["chance"] = out.chance
        panel = [v for k, v in row["attackers"].items() if k != "in-corpus"]
        row["worst"] = [max(v[i] for v in panel) for i in range(4)]
        row["seconds"] = time.perf_counter() - start
        rows.append(row)
        label = f"line-ups of <= {size}" if size and size < companies else "whole corpus"
        print(f"{label} (chance {row['chance']:.3f}, {row['seconds']:.0f} s): raw / release, "
              "chunks / documents")
        for name, v in row["attackers"].items():
            print(f"  {name:<10} raw {v[0]:.3f} / {v[1]:.3f}   release {v[2]:.3f} / {v[3]:.3f}")
        w = row["worst"]
        print(f"  {'worst':<10} raw {w[0]:.3f} / {w[1]:.3f}   release {w[2]:.3f} / {w[3]:.3f}", flush=True)
        if args.two_stage and size and size < companies:
            v = _two_stage(reading, pre, changed, size, config.sweep.seed)
            row["two_stage_word"] = v
            print(f"  {'two-stage':<10} raw {v[0]:.3f} / {v[1]:.3f}   release {v[2]:.3f} / {v[3]:.3f}"
                  "  (word, among every company; rejected)", flush=True)
    base = rows[0]
    for row in rows[1:]:
        below = [(n, i) for n, v in row["attackers"].items() for i in range(4)
                 if n in base["attackers"] and v[i] < base["attackers"][n][i] - 1e-12]  # fmt: skip
        print(f"line-ups of <= {row['lineup']}: {len(below)} of {4 * len(row['attackers'])} figures "
              f"below the line-up of {base['lineup'] or 'the whole corpus'}"
              + (f" ({below})" if below else ""))
    if args.log:
        with open(args.log, "a") as handle:
            handle.write(json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                     "release": str(release), "rows": rows}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
