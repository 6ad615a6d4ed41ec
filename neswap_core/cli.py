"""Command line: ``python -m neswap_core prepare|release|config`` (batch runs, same core as the app).

* ``prepare --corpus PATH --out DIR``: chunks (CSV, JSONL), z, embeddings and a JSON summary.
* ``release --config run.toml``: preprocessing → mixture → candidate releases → choice, then
  the bundle of SPEC §11 (publish/bundle.py): ``OUT/released/`` (documents under random ids,
  the only folder that may be shared) and ``OUT/key/`` (map back, swap log, releases, frontier,
  Pitman table, report, configuration, leak list, TAB annotations; ``KEY_FILES`` has one
  function per file). The leak scan runs first: unaccepted hits leave ``released/`` unwritten
  and exit 4 (``--accept-leaks FILE`` accepts listed hits); no possible release exits 3 with
  the reason. Timings go to ``key/timings.json`` so the rest is identical between reruns.
* ``release`` writes the release run.toml pins (``release``, or ``release_plan`` +
  ``release_stage`` for a plan) with its ``decisions`` applied (choose/chosen.py), the same
  functions the app's Export page uses; without a pinned release the trade-off line chooses.
* ``release`` also writes ``key/audit.json`` (SPEC §9: divergence audit before/after) and
  ``key/attack.json`` and ``key/attack.csv`` (SPEC §8, publish/attack_report.py):
  the measured accuracies of the written release (reading attacker when the corpus has an
  ``attacker/`` folder, in-corpus attacker always); ``releases.csv`` carries them per candidate.
* ``evaluate --release DIR [--corpus PATH]``: the same measures for an existing release folder.
* ``config``: prints the default configuration as TOML, to start a ``run.toml`` from.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .config import RunConfig
from .errors import NeswapError

SAMPLE_CORPUS = paths.SAMPLE_CORPUS  # inside the package: found after any install


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
    from .prepare.pipeline import prepare_path
    from .publish.export import chunks_frame

    corpus = args.corpus or str(SAMPLE_CORPUS)
    config = RunConfig(
        corpus=corpus,
        protect=args.protect,
        threshold=args.threshold,
        cache_dir=args.cache_dir,
        out=args.out,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.engine == "ray":
        from .prepare.ray_engine import RayOptions, prepare_ray
        from .text.loading import load_corpus

        options = RayOptions(address=args.address)
        loaded = load_corpus(corpus, protect=config.protect)
        prepared = prepare_ray(loaded, config, options, embeddings_path=out / "embeddings.npy")
    else:
        bar = _Bar("prepare")
        try:
            extra = {} if args.processes is None else {"processes": args.processes}
            prepared = prepare_path(
                corpus, config, progress=bar, embeddings_path=out / "embeddings.npy", **extra
            )
        finally:
            bar.close()
    frame = chunks_frame(prepared.chunks, prepared.clean.corpus)
    frame.to_csv(out / "chunks.csv", index=False)
    frame.to_json(out / "chunks.jsonl", orient="records", lines=True, force_ascii=False)
    prepared.z.to_csv(out / "z.csv")
    summary = prepared.summary()
    _write_json(out / "summary.json", summary)
    prepared.clean.presentation.to_csv(out / "presentation.csv", index=False)
    if prepared.clean.people is not None:
        prepared.clean.people.to_csv(out / "people.csv", index=False)
    for doc_id, message in summary.get("presentation_warnings", {}).items():
        print(f"warning: {doc_id}: {message}", file=sys.stderr)
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
    print(
        "Wrote chunks.csv, chunks.jsonl, z.csv, embeddings.npy, presentation.csv, people.csv and "
        f"summary.json to {out}"
    )
    return 0


#: Exit codes of ``release``: 0 written, 2 bad input or settings, 3 no release could be made,
#: 4 the leak scan found identifiers the analyst has not accepted (released/ not written).
EXIT_ERROR, EXIT_NO_RELEASE, EXIT_LEAKS = 2, 3, 4


@dataclass
class ReleaseRun:
    """What the ``release`` command computed; each key/ file is one function of it."""

    config: RunConfig
    prepared: object  # pipeline.Prepared
    outcome: object  # analysis.ReleaseOutcome
    records: tuple = ()  # the written swap records (draw 0's first t pairs)
    plans: dict | None = None  # plan candidates (SPEC §10): table, goal report, changes
    released: list | None = None  # the released chunks when they are not just ``records`` (a plan)
    pinned: object = None  # choose.chosen.ChosenRelease when run.toml pins the release


def written_release(run: ReleaseRun) -> dict | None:
    """Which release released/ holds and why: pinned in run.toml, the goal's choice
    (``max_chunk_accuracy``, which replaces the line's) or the trade-off line's choice."""
    if run.pinned is not None:
        return {"release_id": run.pinned.release_id, "why": "pinned in run.toml"}
    goal = (run.plans or {}).get("report", {}).get("goal")
    if goal is not None:
        return {"release_id": goal["release_id"], "sentence": goal["sentence"],
                "why": f"the goal: measured chunk accuracy at most {run.config.max_chunk_accuracy:g}",
                "message": goal["message"]}  # fmt: skip
    chosen = run.outcome.chosen
    if chosen is None:
        return None
    return {"release_id": chosen["release_id"], "sentence": run.outcome.sentence(),
            "why": "the trade-off line's choice"}


def _changed(run: ReleaseRun) -> dict[int, str]:
    """{chunk position: released text} for every chunk the written release changed."""
    from .generate.swapping import apply_swaps

    base = run.outcome.sweep.ctx.chunks
    released = run.released if run.released is not None else apply_swaps(base, run.records)
    return {i: c.text for i, c in enumerate(released) if c.text != base[i].text}


def _csv_bytes(frame) -> bytes:
    return frame.to_csv(index=False).encode("utf-8")


def _json_bytes(payload) -> bytes:
    return (json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n").encode("utf-8")


def key_swap_log(run: ReleaseRun) -> bytes:
    from .generate.swapping import swap_log

    return _csv_bytes(swap_log(run.records))


def key_releases(run: ReleaseRun) -> bytes:
    return _csv_bytes(run.outcome.table)


def key_frontier(run: ReleaseRun) -> bytes:
    return _csv_bytes(run.outcome.frontier())


def key_pitman(run: ReleaseRun) -> bytes:
    return _csv_bytes(run.outcome.sweep.pitman_table(run.config.population))


def key_config(run: ReleaseRun) -> bytes:
    return run.config.to_toml().encode("utf-8")


def key_timings(run: ReleaseRun) -> bytes:
    return _json_bytes(run.prepared.timings)


def key_report(run: ReleaseRun) -> bytes:
    from .publish.export import package_versions

    outcome, prepared = run.outcome, run.prepared
    mix = outcome.sweep.ctx.mixture
    chosen = outcome.chosen
    report = {
        "config": run.config.to_dict(),
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
        "runs": outcome.sweep.messages(),
        "chosen": None
        if chosen is None
        else {
            "release_id": chosen["release_id"],
            "sentence": outcome.sentence(),
            "swaps": int(chosen["swaps"]),
            "swaps_written": len(run.records),
            "du": float(chosen["du_released"]),
            "dr": float(chosen["dr_released"]),
            "du_mean_over_draws": float(chosen["du"]),
            "du_sd_over_draws": float(chosen["du_sd"]),
            "dr_mean_over_draws": float(chosen["dr"]),
            "dr_sd_over_draws": float(chosen["dr_sd"]),
            "draws": int(chosen["draws"]),
            "line_reached": outcome.choice.line_reached,
            "released_draw_seed": list(
                outcome.sweep.draws_for(tuple(chosen["categories"]))[0].seed
            ),
        },
        "written": written_release(run),
        "choice_message": outcome.choice.message,
        "no_release_reason": outcome.no_release_reason(),
        "review_decisions": _review_summary(run),
    }
    if run.plans is not None:
        report["plans"] = run.plans["report"]
    return _json_bytes(report)


def _review_summary(run: ReleaseRun) -> dict | str:
    """What the analyst's review (run.toml's ``decisions``) changed in the written release."""
    pinned, decisions = run.pinned, run.config.decisions
    if pinned is None:
        return ("none applied: no release is pinned in run.toml, so every pair of the line's "
                "choice is kept" + (f" ({len(decisions)} decisions ignored)" if decisions else ""))
    return {"release": pinned.release_id, "source": pinned.source, "decisions": len(decisions),
            "rejected": sum(1 for d in decisions if d["decision"] == "reject"),
            "generated": pinned.generated, "left_out": pinned.rejected,
            "released": len(pinned.records) if pinned.source == "paper" else len(pinned.changes)}


def _reading_attacker(config: RunConfig, prepared):
    """The reading attacker of the corpus's attacker/ folder (None without one)."""
    from .publish.evaluate import fit_reading

    return fit_reading(config.corpus, prepared.chunks, prepared.raw, config.protect)


def _attack(run: ReleaseRun) -> tuple[dict, object]:
    """attack.json and attack.csv contents for the written release (computed once per run)."""
    cached = run.__dict__.get("_attack")
    if cached is not None:
        return cached
    from .choose.attack_columns import draw_steps
    from .publish.attack_report import attack_report

    outcome = run.outcome
    base = outcome.sweep.ctx.chunks
    changed = _changed(run)
    draws = []
    if run.released is not None:  # a plan's release is one concrete text, not a set of draws
        draws = [changed]
    elif outcome.chosen is not None:
        t = len(run.records)
        for draw in outcome.sweep.draws_for(tuple(outcome.chosen["categories"])):
            merged: dict[int, str] = {}
            for step in draw_steps(draw)[:t]:
                merged.update(step)
            draws.append(merged)
    summary, table = attack_report(outcome.scorers, changed, [c.chunk_id for c in base], draws)
    written = written_release(run)
    summary["release_id"] = None if written is None else written["release_id"]
    run.__dict__["_attack"] = (summary, table)
    return summary, table


def key_attack_json(run: ReleaseRun) -> bytes:
    return _json_bytes(_attack(run)[0])


def key_attack_csv(run: ReleaseRun) -> bytes:
    return _csv_bytes(_attack(run)[1])


def _audit(run: ReleaseRun) -> dict:
    """audit.json's contents: the kNN Rényi divergence audit before and after the written
    release (SPEC §9), computed once per run.

    Per document (its chunks against all others) and for the corpus (the largest ε), with the
    permutation floor; only the changed chunks are embedded again (through the cache).
    """
    cached = run.__dict__.get("_audit")
    if cached is not None:
        return cached
    from .measure.audit import audit_comparison, audit_release, released_embeddings

    ctx = run.outcome.sweep.ctx
    groups = [c.doc_id for c in ctx.chunks]
    after = released_embeddings(ctx.embeddings, _changed(run), ctx.embed)
    before_audit, after_audit = audit_release(ctx.embeddings, after, groups)
    table = audit_comparison(before_audit, after_audit).reset_index()
    result = {
        "before": before_audit.to_dict(),
        "after": after_audit.to_dict(),
        "corpus_epsilon_before": before_audit.epsilon_,
        "corpus_epsilon_after": after_audit.epsilon_,
        "documents": table.to_dict("records"),
        "note": "ε is read against the permutation floor (the estimator's bias at no true "
                "divergence), not against 0.",
    }
    run.__dict__["_audit"] = result
    return result


def key_audit_json(run: ReleaseRun) -> bytes:
    return _json_bytes(_audit(run))


def key_report_html(run: ReleaseRun) -> bytes:
    """report.html: the written release in sentences, measured protection (attack.json,
    audit.json), before/after examples, change log, frontier and tables, settings, corrections
    and review decisions — the report the app's Export page writes, without its chart."""
    import dataclasses

    import pandas as pd

    from .choose.frontier import frontier_mask
    from .generate.swapping import swap_log
    from .publish.export import before_after_examples, html_report
    from .publish.report_parts import log_table, protection_facts, report_columns

    outcome, prepared = run.outcome, run.prepared
    written = written_release(run) or {}
    chosen = written.get("sentence") or f"release {written.get('release_id')}"
    review = _review_summary(run)
    facts = {
        "corpus": f"{len(prepared.raw)} documents, {len(prepared.chunks)} passages",
        "release": f"{written.get('release_id')}: {chosen}",
        "why this release": written.get("why", ""),
        "your review": review if isinstance(review, str) else (
            f"{review['decisions']} decisions in run.toml, {review['rejected']} rejected; "
            f"{review['released']} of {review['generated']} changes released"),
    }
    if written.get("message"):
        facts["goal"] = written["message"]
    if outcome.choice.message:
        facts["trade-off line"] = outcome.choice.message
    facts.update(protection_facts(_attack(run)[0], _audit(run)))
    changes = (run.plans or {}).get("changes")
    title, log = (log_table(changes, "changes.csv") if changes is not None
                  else log_table(swap_log(run.records), "swap_log.csv"))
    table = outcome.table
    front = table[frontier_mask(table["du"].to_numpy(float), table["dr"].to_numpy(float))]
    tables = {title: log, "Frontier releases": report_columns(front, "releases"),
              "Pitman estimates per combination (the paper's Table 1)":
                  outcome.sweep.pitman_table(run.config.population)}
    candidates = (run.plans or {}).get("table")
    if candidates is not None and len(candidates):
        tables["Plan candidates"] = report_columns(candidates[candidates["source"] == "plan"],
                                                   "releases")
    tables["All paper releases (every column in key/releases.csv)"] = report_columns(table,
                                                                                     "releases")
    base = outcome.sweep.ctx.chunks
    changed = _changed(run)
    released = [dataclasses.replace(c, text=changed.get(i, c.text)) for i, c in enumerate(base)]
    decisions = pd.DataFrame(run.config.decisions) if run.config.decisions else None
    page = html_report("neswap release report", chosen, facts, tables,
                       settings=run.config.to_dict(), corrections=run.config.corrections,
                       decisions=decisions, examples=before_after_examples(base, released))
    return page.encode("utf-8")


KEY_FILES: dict[str, Callable[[ReleaseRun], bytes]] = {
    "swap_log.csv": key_swap_log,
    "releases.csv": key_releases,
    "frontier.csv": key_frontier,
    "pitman.csv": key_pitman,
    "config.toml": key_config,
    "report.json": key_report,
    "timings.json": key_timings,
    "attack.json": key_attack_json,
    "attack.csv": key_attack_csv,
    "audit.json": key_audit_json,
    "report.html": key_report_html,
}


#: The key/ files written when no release could be made (nothing was swapped or measured).
NO_RELEASE_KEY_FILES = ("report.json", "config.toml", "releases.csv", "pitman.csv", "timings.json")


def key_files(run: ReleaseRun, names=None) -> dict[str, bytes]:
    files = {name: make(run) for name, make in KEY_FILES.items() if names is None or name in names}
    if run.plans is not None:
        if run.plans["table"] is not None:
            files["candidates.csv"] = _csv_bytes(run.plans["table"])
        if run.plans["changes"] is not None:
            files["changes.csv"] = _csv_bytes(run.plans["changes"])
    return files


def cmd_release(args: argparse.Namespace) -> int:
    from .analysis import run_analysis
    from .choose.chosen import configured_release
    from .errors import LeakError
    from .generate.swapping import apply_swaps
    from .models.embedding import Embedder
    from .prepare.pipeline import prepare_path
    from .publish.bundle import FOLDER_PURPOSE, build_bundle, check_publishable
    from .publish.leaks import read_accepted
    from .text.loading import check_swappable

    config = RunConfig.load(args.config) if args.config else RunConfig(corpus=str(SAMPLE_CORPUS))
    if args.out:
        config.out = args.out
    accepted = read_accepted(args.accept_leaks) if args.accept_leaks else set()
    embedder = Embedder(config.embedding_model, config.cache_dir, backend=config.embedding_backend)
    bar = _Bar("prepare")
    try:
        prepared = prepare_path(config.corpus, config, embedder=embedder, progress=bar)
    finally:
        bar.close()
    check_swappable(prepared.raw)
    check_publishable(config.publishable_columns, prepared.raw)
    bar = _Bar("releases")
    try:
        reading = _reading_attacker(config, prepared)
        outcome = run_analysis(
            prepared.chunks, prepared.embeddings, embedder.encode, config, progress=bar,
            attack=True, reading=reading,
        )
    finally:
        bar.close()
    out = Path(config.out)
    run = ReleaseRun(config, prepared, outcome)
    if outcome.chosen is None:
        from .publish.export import write_files

        write_files(key_files(run, NO_RELEASE_KEY_FILES), out / "key")
        print(f"error: {outcome.no_release_reason()} Nothing was released; the report is in "
              f"{out / 'key'}.", file=sys.stderr)
        return EXIT_NO_RELEASE
    run.records = tuple(outcome.chosen_records())
    released = apply_swaps(outcome.sweep.ctx.chunks, run.records)
    from .choose.attack_columns import primary_name

    scorer = outcome.scorers.get(primary_name(outcome.scorers)) if outcome.scorers else None
    plans = None
    if config.plan_rounds > 0:
        released, run.plans, plans = _plan_release(outcome, config, released, scorer)
        run.released = list(released)
    pinned = configured_release(outcome.sweep, outcome.table, config, plans, scorer)
    if pinned is not None:
        released = _use_pinned(run, pinned)
    bundle = build_bundle(
        prepared.raw, prepared.clean.corpus, released, seed=config.bundle_seed,
        shuffle_chunks=config.shuffle_chunks, publishable_columns=config.publishable_columns,
        key_files=key_files(run),
    )
    written = written_release(run)
    if "goal" in written["why"]:  # the line's choice was not written: say what was, and why
        print(f"Released {written['release_id']}, {written['why']}: {written['sentence']}.")
        if written["message"]:
            print(written["message"])
        print(f"(The trade-off line alone would pick {outcome.chosen['release_id']}.)")
    else:
        print(outcome.sentence())
        if outcome.choice.message:
            print(outcome.choice.message)
    try:
        bundle.write(out, accepted)
    except LeakError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_LEAKS
    accepted_hits = len(bundle.hits)
    print(f"Wrote {out / 'released'}: {FOLDER_PURPOSE['released']}")
    print(f"Wrote {out / 'key'}: {FOLDER_PURPOSE['key']}")
    print(f"Leak scan: {accepted_hits} hit(s)" + (", all accepted." if accepted_hits else "."))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .publish.evaluate import evaluate_release

    result = evaluate_release(args.release, args.corpus)
    if args.llm:
        from .measure.llm import LLMAttacker, LLMSettings

        settings = LLMSettings.from_env(
            url=args.llm_url, model=args.llm_model, cache_path=args.llm_cache
        )
        attacker = LLMAttacker(settings, result.candidates, confirm=args.confirm_llm)
        llm = result.add_llm(attacker)
        print(f"llm attacker ({settings.model}): changed chunks {llm['changed_pre_top1']} -> "
              f"{llm['changed_post_top1']}, document accuracy {llm.get('document_accuracy')}")
    out = Path(args.out) if args.out else Path(args.release) / "key"
    out.mkdir(parents=True, exist_ok=True)
    (out / "attack.json").write_bytes(_json_bytes(result.summary))
    (out / "attack.csv").write_bytes(_csv_bytes(result.table))
    for name, entry in result.summary["attackers"].items():
        if "pre_release" not in entry:
            continue  # the LLM's figures were printed above
        pre, post = entry["pre_release"], entry["release"]
        print(
            f"{name} attacker: chunk accuracy {pre['chunk_top1']:.3f} -> {post['chunk_top1']:.3f}, "
            f"documents named {pre['documents_named']} -> {post['documents_named']} of "
            f"{post['n_documents']} ({post['n_changed']} chunks changed, chance "
            f"{post['chance']:.3f})"
        )
    print(f"Wrote attack.json and attack.csv to {out}")
    return 0


def _plan_release(outcome, config: RunConfig, released, scorer=None):
    """Plan candidates (SPEC §10) for ``key/candidates.csv``; with ``max_chunk_accuracy`` < 1
    the goal's release replaces the line's (its changes go to ``key/changes.csv``).
    Returns (released chunks, the key/ payload, the PlanCandidates)."""
    import pandas as pd

    from . import analysis
    from .choose.candidates import changes_of, chunks_of, describe_candidate
    from .generate.swapping import apply_swaps

    table, plans = analysis.candidates_for_config(outcome.sweep, config, scorer)
    report: dict = {"candidates": len(table), "plan_candidates": int((table["source"] == "plan").sum())}
    result = {"table": table, "report": report, "changes": None}
    if config.max_chunk_accuracy >= 1.0:
        return released, result, plans
    choice = analysis.goal_choice(table, config)
    row = table.loc[choice.index]
    report["goal"] = {"release_id": choice.index, "sentence": describe_candidate(row),
                      "reached": choice.line_reached, "message": choice.message,
                      "plan": row["plan"]}  # fmt: skip
    if row["source"] == "plan":
        changes = changes_of(plans, choice.index)
        result["changes"] = pd.DataFrame([c.to_dict() for c in changes])
        return chunks_of(plans, choice.index), result, plans
    draw = outcome.sweep.draws_for(tuple(outcome.table.loc[choice.index, "categories"]))[0]
    return apply_swaps(outcome.sweep.ctx.chunks, draw.run.records[: int(row["swaps"])]), result, plans


def _use_pinned(run: ReleaseRun, pinned) -> list:
    """Write the release run.toml pins, with its review decisions applied (choose/chosen.py).

    A pinned paper release becomes the outcome's choice (the report, the attack and the audit
    describe it); a pinned plan release is written as one concrete text, like the goal's.
    """
    import dataclasses

    import pandas as pd

    outcome, config = run.outcome, run.config
    run.pinned = pinned
    if pinned.source == "paper":
        message = (f"The release {pinned.release_id} is pinned in run.toml (the trade-off line "
                   f"DR = {config.trade_off_c:g} + {config.trade_off_a:g}·DU is not used).")
        outcome.choice = dataclasses.replace(outcome.choice, index=pinned.release_id,
                                             line_reached=True, message=message)  # fmt: skip
        run.records = pinned.records
        run.released = list(pinned.chunks) if pinned.rejected else None
    else:
        run.records = ()
        run.released = list(pinned.chunks)
        run.plans = run.plans or {"table": None, "report": {}, "changes": None}
        run.plans["changes"] = pd.DataFrame([c.to_dict() for c in pinned.changes])
        run.plans["report"]["pinned"] = {"release_id": pinned.release_id,
                                         "plan": config.release_plan,
                                         "stage_index": config.release_stage}  # fmt: skip
    return list(pinned.chunks)


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
    p.add_argument("--cache-dir", default="",
                   help="cache folder (default: $NESWAP_CACHE_DIR or the per-user cache folder)")
    p.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local: this machine, documents shared by --processes processes (default); "
        "ray: Ray Data stages on a cluster",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=None,
        help="processes of the local engine (default: one per CPU, at most 4; each holds its "
        "own models, ~0.5 GB)",
    )
    p.add_argument(
        "--address",
        help="Ray cluster address HOST:6379 (with --engine ray; default: start a local Ray)",
    )
    p.set_defaults(func=cmd_prepare)
    r = sub.add_parser(
        "release", help="run the whole method from a config file and write the release"
    )
    r.add_argument(
        "--config",
        help="run.toml (see `python -m neswap_core config`); default settings if omitted",
    )
    r.add_argument("--out", help="output folder (overrides the config's `out`)")
    r.add_argument(
        "--accept-leaks",
        metavar="FILE",
        help="CSV of accepted leak-scan hits (rows copied from key/leaks.csv: document, chunk, "
        "identifier, case); any other hit blocks released/",
    )
    r.set_defaults(func=cmd_release)
    e = sub.add_parser(
        "evaluate", help="measure an existing release folder with the attackers (SPEC §8)"
    )
    e.add_argument("--release", required=True, help="folder written by `release` (released/, key/)")
    e.add_argument("--corpus", help="the corpus it was made from (default: key/config.toml's)")
    e.add_argument("--out", help="where to write attack.json/attack.csv (default: RELEASE/key)")
    e.add_argument("--llm", action="store_true",
                   help="also ask an OpenAI-compatible endpoint (NESWAP_LLM_URL/_MODEL/_API_KEY)")
    e.add_argument("--llm-url", help="endpoint URL (overrides NESWAP_LLM_URL)")
    e.add_argument("--llm-model", help="model name (overrides NESWAP_LLM_MODEL)")
    e.add_argument("--llm-cache", help="JSON-lines answer cache (default: llm/ in the cache folder)")
    e.add_argument("--confirm-llm", action="store_true",
                   help="confirm that the released text may be sent to that endpoint")
    e.set_defaults(func=cmd_evaluate)
    c = sub.add_parser("config", help="print the default run configuration as TOML")
    c.set_defaults(func=cmd_config)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except NeswapError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # ``python -m neswap_core.cli`` ran nothing and exited 0
    sys.exit(main())
