"""Draw the risk–utility frontier of a release's candidate table (issue 22's README plot).

    .venv/bin/python benchmarks/frontier_plot.py OUT/key/candidates.csv docs/frontier_dev.png

Two panels over words unchanged: the share of documents and of passages the worst attacker
names (the unsuffixed ``document_accuracy`` / ``chunk_accuracy`` columns: the panel's worst
case when the corpus has an attacker reading), one marker per candidate kind (``sampler``), the
goal's bound as a dashed line, chance as a dotted one, and the written release circled.
Nothing is computed here: every point is a row of the table ``release`` wrote.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

MARKERS = {"paper": "o", "plan": "s", "document": "D", "dp_words": "^"}
NAMES = {"paper": "paper: one round of swaps", "plan": "plan grid",
         "document": "document defence", "dp_words": "word-level DP"}


def main(table_path: str, out_path: str) -> None:
    table = pd.read_csv(table_path)
    report_path = Path(table_path).with_name("report.json")
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    written = (report.get("written") or {}).get("release_id")
    goal = report.get("goal") or {}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    for ax, level in ((axes[0], "document"), (axes[1], "chunk")):
        column = f"{level}_accuracy"
        for sampler, rows in table.groupby("sampler"):
            ax.scatter(100 * rows["words_unchanged"], 100 * rows[column], s=22, alpha=0.75,
                       marker=MARKERS.get(sampler, "x"), label=NAMES.get(sampler, sampler))
        if written is not None and written in set(table["release_id"]):
            row = table.set_index("release_id").loc[written]
            ax.scatter([100 * row["words_unchanged"]], [100 * row[column]], s=160,
                       facecolors="none", edgecolors="black", linewidths=1.5,
                       label="written release")
        bounds = [c["maximum"] for c in goal.get("constraints", []) if c.get("column") == column]
        bound = bounds[0] if bounds else None
        if bound is not None and float(bound) < 1:
            ax.axhline(100 * float(bound), ls="--", c="firebrick", lw=1, label="goal")
        if "chance" in table:
            ax.axhline(100 * float(table["chance"].iloc[0]), ls=":", c="grey", lw=1, label="chance")
        who = "the worst attacker of the panel" if "worst_document_attacker" in table else "the attacker"
        ax.set_title(f"{level}s named by {who}", fontsize=10)
        ax.set_ylabel(f"{level}s named (%)")
        ax.set_xlabel("words unchanged (%)")
        ax.set_ylabel(f"{level}s named (%)")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_path, dpi=120)
    print(f"wrote {out_path}: {len(table)} candidates")


if __name__ == "__main__":
    main(*sys.argv[1:3])
