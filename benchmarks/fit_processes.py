"""Independent fits on every core against the same fits one after the other (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/fit_processes.py [--passages 10000] [--log FILE]

On a synthetic corpus of real dev-corpus sentences under fresh documents and companies
(``text.synthetic``, cut into 4-sentence passages like the attacker's reading units), fits in
one run, each way in this process:

1. the in-corpus attacker (``CrossFittedAttacker``: five folds of word TF-IDF + LR) and
2. the panel's families of a release (char_wb, embedding on random unit vectors, retrieval;
   ``AttackerPanel``) and the document defender (word, char_wb, retrieval on two halves)

serially (``MIN_TEXTS`` above the corpus: the anchor) and in worker processes
(``models.fit_processes``), prints wall and CPU seconds of this process, the ratio parallel /
serial (1 / cores at best), the load, and checks that both ways give the same coefficients.
Last, a release's two attacker batches, both in workers: the panel then the in-corpus folds,
against the two side by side (``fit_processes.side_by_side``, as ``build_scorers`` fits them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV = next((p / "shared" / "corpus" / "dev" for p in ROOT.parents[:2]
            if (p / "shared" / "corpus" / "dev").is_dir()), ROOT.parent / "shared" / "corpus" / "dev")


def passages(n: int) -> tuple[list[str], list[str], list[str]]:
    """(texts, companies, document ids) of about ``n`` synthetic 4-sentence passages."""
    from neswap_core.measure.reading import sentence_windows
    from neswap_core.prepare.pipeline import clean_corpus
    from neswap_core.text.loading import load_corpus
    from neswap_core.text.synthetic import documents_for_chunks, sentence_pool, synthetic_corpus

    pool = sentence_pool(clean_corpus(load_corpus(DEV)).corpus)
    corpus = synthetic_corpus(pool, documents_for_chunks(n), random_state=n)
    texts, labels, ids = [], [], []
    for doc in corpus.documents:
        for window in sentence_windows(doc.text, 4):
            texts.append(window)
            labels.append(corpus.protected_value(doc))
            ids.append(doc.doc_id)
    return texts[:n], labels[:n], ids[:n]


def _coefs(fitted) -> list[bytes]:
    out = []
    for model in fitted:
        clf = getattr(model, "clf_", None) or getattr(model, "model_", None)
        out.append(clf.coef_.tobytes() if clf is not None else model.profiles_.data.tobytes())
    return out


def timed(fn) -> tuple[object, float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - start, time.process_time() - cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=10_000)
    ap.add_argument("--log", help="also append the figures as one JSON line to this file")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from neswap_core.generate.document_budget import DocumentDefender
    from neswap_core.measure.attack import CrossFittedAttacker
    from neswap_core.measure.panel import AttackerPanel
    from neswap_core.models import fit_processes

    texts, labels, ids = passages(args.passages)
    vectors = np.random.default_rng(0).normal(size=(len(texts), 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    load0 = os.getloadavg()
    print(f"{len(texts)} passages, {len(set(labels))} companies, {len(set(ids))} documents; "
          f"{os.cpu_count()} CPUs, load {load0[0]:.2f}", flush=True)
    fits = {
        "in-corpus attacker (5 folds)": lambda: CrossFittedAttacker(random_state=0).fit(texts, labels, ids),
        "panel (char, embedding, retrieval)": lambda: AttackerPanel(("char", "embedding", "retrieval")).fit(
            texts, labels, ids, vectors),
        "document defender (3 members x 2 halves)": lambda: DocumentDefender(random_state=0).fit(texts, labels, ids),
    }
    parts = {
        "in-corpus attacker (5 folds)": lambda m: m.models_,
        "panel (char, embedding, retrieval)": lambda m: list(m.families_.values()),
        "document defender (3 members x 2 halves)": lambda m: [f for _, _, f in m.members_],
    }
    rows = {}
    for name, fit in fits.items():
        fit_processes.MIN_TEXTS = 10**12  # the anchor: one fit after the other, here
        serial, s_wall, s_cpu = timed(fit)
        fit_processes.MIN_TEXTS = 0
        pooled, p_wall, p_cpu = timed(fit)
        same = _coefs(parts[name](serial)) == _coefs(parts[name](pooled))
        rows[name] = {"serial_s": s_wall, "serial_cpu_s": s_cpu, "processes_s": p_wall,
                      "processes_main_cpu_s": p_cpu, "ratio": p_wall / s_wall, "same_bits": same}
        print(f"{name}: serial {s_wall:.1f} s ({s_cpu:.1f} CPU-s), in processes {p_wall:.1f} s "
              f"({p_cpu:.1f} CPU-s here): ratio {p_wall / s_wall:.2f}; same bits: {same}", flush=True)
    # a release's attackers: the panel, then the in-corpus folds (both in workers), against
    # the two side by side (models.fit_processes.side_by_side, what build_scorers does)
    panel_fit, folds_fit = fits["panel (char, embedding, retrieval)"], fits["in-corpus attacker (5 folds)"]
    (seq_panel, seq_folds), q_wall, q_cpu = timed(lambda: (panel_fit(), folds_fit()))
    (sbs_panel, sbs_folds), b_wall, b_cpu = timed(lambda: fit_processes.side_by_side(panel_fit, folds_fit))
    same = (_coefs(list(seq_panel.families_.values())) == _coefs(list(sbs_panel.families_.values()))
            and _coefs(seq_folds.models_) == _coefs(sbs_folds.models_))
    name = "panel then in-corpus folds vs side by side (both in processes)"
    rows[name] = {"serial_s": q_wall, "serial_cpu_s": q_cpu, "processes_s": b_wall,
                  "processes_main_cpu_s": b_cpu, "ratio": b_wall / q_wall, "same_bits": same}
    print(f"{name}: one after the other {q_wall:.1f} s, side by side {b_wall:.1f} s: ratio "
          f"{b_wall / q_wall:.2f}; same bits: {same}", flush=True)
    load1 = os.getloadavg()
    print(f"load after {load1[0]:.2f}")
    if args.log:
        with open(args.log, "a") as handle:
            handle.write(json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                     "passages": len(texts), "companies": len(set(labels)),
                                     "load": [load0, load1], "fits": rows}) + "\n")
    return 0 if all(r["same_bits"] for r in rows.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
