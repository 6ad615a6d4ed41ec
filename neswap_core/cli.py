"""Command line: ``python -m neswap_core prepare|release|config`` (batch runs, same core as the app).

* ``prepare --corpus PATH --out DIR``: chunks (CSV, JSONL), z, embeddings and a JSON summary.
* ``release --config run.toml``: preprocessing → mixture → candidate releases → choice, and
  writes the anonymised corpus in the input's layout, the swap log, the releases table, the
  frontier, the Pitman table and a JSON report that pins every setting, seed and version.
  Timings go to ``timings.json`` so that the rest of the output is identical between reruns.
* ``config``: prints the default configuration as TOML, to start a ``run.toml`` from.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .config import RunConfig
from .errors import NeswapError

SAMPLE_CORPUS = Path(__file__).resolve().parent.parent / "data" / "sample"


class _Bar:
    """A tqdm bar driven by (fraction, message) callbacks; appears only for stages over 1 s."""

    def __init__(self, desc: str) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=100,
            desc=desc,
            delay=1.0,
            leave=False,
            file=sys.stderr,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed} {postfix}",
        )

    def __call__(self, fraction: float, message: str) -> None:
        self.bar.n = int(round(100 * min(max(fraction, 0.0), 1.0)))
        self.bar.set_postfix_str(message, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def _write_json(path: Path, payload) -> None:
    path.write_text(
        json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
    )


def cmd_prepare(args: argparse.Namespace) -> int:
    import numpy as np

    from .pipeline import prepare_path
    from .release.export import chunks_frame

    corpus = args.corpus or str(SAMPLE_CORPUS)
    config = RunConfig(
        corpus=corpus,
        protect=args.protect,
        threshold=args.threshold,
        cache_dir=args.cache_dir,
        out=args.out,
    )
    bar = _Bar("prepare")
    try:
        prepared = prepare_path(corpus, config, progress=bar)
    finally:
        bar.close()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame = chunks_frame(prepared.chunks, prepared.clean.corpus)
    frame.to_csv(out / "chunks.csv", index=False)
    frame.to_json(out / "chunks.jsonl", orient="records", lines=True, force_ascii=False)
    prepared.z.to_csv(out / "z.csv")
    np.save(out / "embeddings.npy", prepared.embeddings)
    summary = prepared.summary()
    _write_json(out / "summary.json", summary)
    print(
        json.dumps(
            {
                k: summary[k]
                for k in (
                    "documents",
                    "chunks",
                    "entities_per_category",
                    "identifiers_suppressed",
                    "seconds",
                )
            },
            indent=2,
        )
    )
    print(f"Wrote chunks.csv, chunks.jsonl, z.csv, embeddings.npy and summary.json to {out}")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from .analysis import run_analysis
    from .models.embedding import Embedder
    from .pipeline import prepare_path
    from .release.export import corpus_files, document_texts, package_versions, write_files
    from .release.swapping import apply_swaps, swap_log

    config = RunConfig.load(args.config) if args.config else RunConfig(corpus=str(SAMPLE_CORPUS))
    if args.out:
        config.out = args.out
    embedder = Embedder(config.embedding_model, config.cache_dir)
    bar = _Bar("prepare")
    try:
        prepared = prepare_path(config.corpus, config, embedder=embedder, progress=bar)
    finally:
        bar.close()
    from .text.loading import check_swappable

    check_swappable(prepared.raw)
    bar = _Bar("releases")
    try:
        outcome = run_analysis(
            prepared.chunks, prepared.embeddings, embedder.encode, config, progress=bar
        )
    finally:
        bar.close()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    records = outcome.chosen_records()
    released = apply_swaps(outcome.sweep.ctx.chunks, records)
    texts = document_texts(prepared.clean.corpus, released)
    write_files(corpus_files(prepared.clean.corpus, texts), out / "corpus")
    swap_log(records).to_csv(out / "swap_log.csv", index=False)
    outcome.table.to_csv(out / "releases.csv", index=False)
    outcome.frontier().to_csv(out / "frontier.csv", index=False)
    outcome.sweep.pitman_table(config.population).to_csv(out / "pitman.csv", index=False)
    config.save(out / "config.toml")
    mix = outcome.sweep.ctx.mixture
    report = {
        "config": config.to_dict(),
        "versions": package_versions(),
        "documents": len(prepared.raw),
        "chunks": len(prepared.chunks),
        "mixture": {
            "converged": bool(mix.converged_),
            "n_iter": int(mix.n_iter_),
            "components_kept": int(mix.n_components_),
            "lower_bound": float(mix.lower_bound_),
            "warnings": outcome.fit_warnings,
        },
        "valid_pairs": outcome.sweep.valid_pair_counts(),
        "chosen": None
        if outcome.chosen is None
        else {
            "release_id": outcome.chosen["release_id"],
            "sentence": outcome.sentence(),
            "du": float(outcome.chosen["du"]),
            "dr": float(outcome.chosen["dr"]),
            "swaps": int(outcome.chosen["swaps"]),
            "line_reached": outcome.choice.line_reached,
        },
        "choice_message": outcome.choice.message,
        "released_draw_seed": list(
            outcome.sweep.draws_for(tuple(outcome.chosen["categories"]))[0].seed
        )
        if outcome.chosen is not None
        else None,
    }
    _write_json(out / "report.json", report)
    _write_json(out / "timings.json", prepared.timings)
    print(outcome.sentence() or outcome.choice.message)
    if outcome.choice.message:
        print(outcome.choice.message)
    print(
        f"Wrote the anonymised corpus, swap_log.csv, releases.csv, frontier.csv, pitman.csv and report.json to {out}"
    )
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    print(RunConfig(corpus=str(SAMPLE_CORPUS)).to_toml(), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m neswap_core", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="preprocess a corpus: chunks, entities, z, embeddings")
    p.add_argument(
        "--corpus",
        help="folder (txt + manifest.csv), CSV/JSONL file or Motley Fool JSON; default: the bundled sample",
    )
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--protect", default="company", help="metadata column to protect (default: company)"
    )
    p.add_argument(
        "--threshold", type=float, default=75.0, help="chunking percentile 0-100 (default 75)"
    )
    p.add_argument("--cache-dir", default=".neswap-cache", help="embedding cache folder")
    p.set_defaults(func=cmd_prepare)
    r = sub.add_parser(
        "release", help="run the whole method from a config file and write the release"
    )
    r.add_argument(
        "--config",
        help="run.toml (see `python -m neswap_core config`); default settings if omitted",
    )
    r.add_argument("--out", help="output folder (overrides the config's `out`)")
    r.set_defaults(func=cmd_release)
    c = sub.add_parser("config", help="print the default run configuration as TOML")
    c.set_defaults(func=cmd_config)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except NeswapError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
