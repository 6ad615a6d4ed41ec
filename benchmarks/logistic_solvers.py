"""The attackers' logistic regression, solved by ``newton-cg`` against ``lbfgs`` (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/logistic_solvers.py [--log FILE]

Fits the library's multinomial logistic regression (C = 10, one BLAS thread) with both of
scikit-learn's smooth solvers on the same features, in one run:

* ``line-up`` / ``line-up char``: one line-up of 40 companies of a 10,000-passage synthetic
  corpus (the in-corpus attacker's fold models and the panel's line-up fits at scale), word
  1–2-grams and char_wb 2–5-grams;
* ``dev word`` / ``dev char``: the dev corpus's ``attacker/`` reading (4,347 passages, 35
  companies), word 1–2-grams and char_wb 2–5-grams (the reading attacker and the panel's
  character family).

Each is fitted on 80 % of its passages and scored on the other 20 %. Prints for each solver the
seconds, Newton / L-BFGS iterations, the objective, the largest gradient element, the held-out
accuracy, and the ratio lbfgs / newton-cg, with the share of held-out passages both name alike;
then the library's own fit (``logistic_regression``: newton-cg on float32 features, the most
used columns first, the products on MKL: ``models/single_precision_fit.py``,
``models/sparse_products.py``) against newton-cg in float64, against newton-cg on float32
features in the vocabulary's own column order with scipy's products (the library's fit before
2026-12-08) and with the columns reordered but scipy's products: seconds, Newton steps and the
largest coefficient difference. torch (MKL) is imported before the first fit.
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
sys.path.insert(0, str(ROOT / "benchmarks"))
DEV = next((p / "shared" / "corpus" / "dev" for p in ROOT.parents[:2]
            if (p / "shared" / "corpus" / "dev").is_dir()), ROOT.parent / "shared" / "corpus" / "dev")


def _problems() -> dict:
    from fit_processes import passages

    from neswap_core.measure.lineups import assign_lineups, lineup_rows
    from neswap_core.measure.reading import reading_units
    from neswap_core.publish.evaluate import load_attacker
    from neswap_core.text.loading import load_corpus

    texts, labels, _ = passages(10_000)
    y = np.asarray(labels, dtype=object)
    classes = np.array(sorted(set(y)), dtype=object)
    rows = next(iter(lineup_rows(y, classes, assign_lineups(classes, 50))))
    out = {"line-up": ([texts[i] for i in rows], y[rows], "word"),
           "line-up char": ([texts[i] for i in rows], y[rows], "char")}
    reading = load_attacker(DEV, protect="company")
    units, unit_labels, _ = reading_units(reading, 4, load_corpus(DEV))
    out["dev word"] = (units, np.asarray(unit_labels, dtype=object), "word")
    out["dev char"] = (units, np.asarray(unit_labels, dtype=object), "char")
    return out


def _objective(model, x, y) -> tuple[float, float]:
    """scikit-learn's objective of a fitted model and its largest gradient element."""
    from sklearn._loss.loss import HalfMultinomialLoss
    from sklearn.linear_model._linear_loss import LinearModelLoss

    classes = model.classes_
    target = np.searchsorted(classes, y).astype(np.float64)
    loss = LinearModelLoss(base_loss=HalfMultinomialLoss(n_classes=len(classes)), fit_intercept=True)
    w = np.hstack([model.coef_, model.intercept_[:, None]]).ravel(order="F")
    value, grad = loss.loss_gradient(w, x, target, None, 1.0 / (model.C * x.shape[0]))
    return float(value), float(np.abs(grad).max())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", help="also append the figures as one JSON line to this file")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch  # noqa: F401  (imported once, as a fit worker does at its first fit)
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    from neswap_core.models.logistic import logistic_regression
    from neswap_core.models.single_precision_fit import most_used_columns_first, single_precision

    rows = []
    for name, (texts, y, kind) in _problems().items():
        vec = (TfidfVectorizer(ngram_range=(1, 2), min_df=3, sublinear_tf=True) if kind == "word" else
               TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), min_df=3, sublinear_tf=True))
        held = np.random.default_rng(0).random(len(texts)) < 0.2
        x_train = vec.fit_transform([t for t, h in zip(texts, held, strict=True) if not h])
        x_held = vec.transform([t for t, h in zip(texts, held, strict=True) if h])
        row = {"problem": name, "passages": len(texts), "companies": len(set(y)),
               "coefficients": x_train.shape[1] * len(set(y[~held])), "load": os.getloadavg()[0]}
        named, coef = {}, {}
        for solver in ("lbfgs", "newton-cg", "given order", "columns first", "library"):
            model = (logistic_regression(C=10.0, max_iter=2000) if solver == "library" else
                     LogisticRegression(C=10.0, max_iter=2000, solver="newton-cg") if solver == "given order" else
                     LogisticRegression(C=10.0, max_iter=2000, solver=solver))  # fmt: skip
            features, rank = (single_precision(x_train), None) if solver == "given order" else (x_train, None)
            if solver == "columns first":
                model = LogisticRegression(C=10.0, max_iter=2000, solver="newton-cg")
                features, rank = most_used_columns_first(x_train)
            with threadpool_limits(1, user_api="blas"):
                start = time.perf_counter()
                model.fit(features, y[~held])
                seconds = time.perf_counter() - start
            if rank is not None:
                model.coef_ = np.asarray(model.coef_, dtype=np.float64)[:, rank]
            coef[solver] = np.asarray(model.coef_, dtype=np.float64)
            objective, gradient = _objective(model, x_train, y[~held])
            named[solver] = model.predict(x_held)
            row[solver] = {"s": seconds, "iterations": int(model.n_iter_[0]), "objective": objective,
                           "max_gradient": gradient, "held_out_accuracy": float((named[solver] == y[held]).mean())}
            print(f"{name:>9} {solver:>9}: {seconds:6.2f} s, {int(model.n_iter_[0]):3d} iterations, objective "
                  f"{objective:.8f}, max |gradient| {gradient:.1e}, held-out accuracy "
                  f"{row[solver]['held_out_accuracy']:.3f}", flush=True)
        row["ratio"] = row["lbfgs"]["s"] / row["newton-cg"]["s"]
        row["named_alike"] = float((named["lbfgs"] == named["newton-cg"]).mean())
        row["single_ratio"] = row["newton-cg"]["s"] / row["library"]["s"]
        row["single_named_alike"] = float((named["library"] == named["newton-cg"]).mean())
        row["order_ratio"] = row["given order"]["s"] / row["library"]["s"]
        row["columns_ratio"] = row["given order"]["s"] / row["columns first"]["s"]
        row["order_coef_difference"] = float(np.abs(coef["given order"] - coef["library"]).max())
        print(f"{name:>9}: {row['passages']:,} passages, {row['companies']} companies, "
              f"{row['coefficients']:,} coefficients: lbfgs / newton-cg = {row['ratio']:.2f}; "
              f"{row['named_alike']:.3f} of held-out passages named alike; newton-cg float64 / "
              f"the library's float32 solve = {row['single_ratio']:.2f}, "
              f"{row['single_named_alike']:.3f} named alike; float32 in the vocabulary's column order / "
              f"most used columns first = {row['columns_ratio']:.2f} (scipy's products), "
              f"/ the library's (MKL's products) = {row['order_ratio']:.2f} "
              f"({row['given order']['iterations']} / {row['library']['iterations']} Newton steps, "
              f"coefficients within {row['order_coef_difference']:.1e})", flush=True)
        rows.append(row)
    if args.log:
        with open(args.log, "a") as fh:
            fh.write(json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                 "rows": rows}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
