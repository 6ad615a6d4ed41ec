"""Command line: ``python -m neswap_core prepare|release|evaluate|config``.

It parses arguments and prints; the work is the library's: ``release`` runs
``run_release.release_from_config`` (prepare → candidates → the pinned, goal or trade-off
release) and ``publish.writer.write_release`` (the one writer of ``released/`` and ``key/``, as
the app's Export page). Exit codes (``EXIT_CODES``, also in ``--help`` and the README):

* 0 — done (``release``: written, and the goal, if any, met);
* 1 — an unexpected error: a bug (the traceback is printed; please report it);
* 2 — bad input or settings: the message names the setting or file and what to do;
* 3 — ``release``: no release could be made (the reason is printed; key/ has the report);
* 4 — ``release``: the leak scan found identifiers you have not accepted; released/ was not
  written (key/leaks.csv lists them; accept rows with ``--accept-leaks FILE``);
* 5 — ``release``: no candidate meets the goal: the closest one was written, flagged
  ``goal_met = false`` in key/report.json, and the sentence says what to change;
* 130 — interrupted (Ctrl-C): the previous release, if any, is left as it was.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from . import paths
from .choose.candidates import describe_candidate
from .config import RunConfig
from .errors import LeakError, NeswapError
from .measure.llm import LLMAttacker, LLMSettings
from .models.embedding import Embedder
from .prepare.pipeline import prepare_path
from .prepare.ray_engine import RayOptions, prepare_ray
from .publish.bundle import FOLDER_PURPOSE
from .publish.evaluate import evaluate_release, evaluation_files
from .publish.export import prepared_files, write_files
from .publish.folders import check_writable
from .publish.leaks import read_accepted
from .publish.writer import write_release
from .run_release import release_from_config
from .text.loading import load_corpus

SAMPLE_CORPUS = paths.SAMPLE_CORPUS  # inside the package: found after any install

EXIT_OK, EXIT_BUG, EXIT_ERROR, EXIT_NO_RELEASE, EXIT_LEAKS, EXIT_GOAL_MISSED = 0, 1, 2, 3, 4, 5
EXIT_INTERRUPTED = 130
EXIT_CODES = {
    EXIT_OK: "done (release: written, and the goal, if any, met)",
    EXIT_BUG: "an unexpected error, a bug: please report it with the traceback",
    EXIT_ERROR: "bad input or settings: the message names the setting or file and what to do",
    EXIT_NO_RELEASE: "no release could be made: the reason is printed, key/report.json has it",
    EXIT_LEAKS: "leak-scan hits you have not accepted: released/ was not written (key/leaks.csv)",
    EXIT_GOAL_MISSED: "no candidate meets the goal: the closest was written with goal_met = false",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C): the previous release, if any, is left as it was",
}


class _Bars:
    """tqdm bars for the stages of a command, one at a time: ``bars("prepare")`` is a
    (fraction, message) callback whose bar opens on its first call and closes the previous one;
    a bar appears only for stages over 1 s."""

    def __init__(self) -> None:
        self.bar: tqdm | None = None

    def __call__(self, desc: str):
        def report(fraction: float, message: str) -> None:
            bar = self.bar
            if bar is None or bar.desc != desc:
                self.close()
                bar = self.bar = tqdm(total=100, desc=desc, delay=1.0, leave=False, file=sys.stderr,
                                      bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed} {postfix}")
            bar.n = int(round(100 * min(max(fraction, 0.0), 1.0)))
            bar.set_postfix_str(message, refresh=False)
            bar.refresh()

        return report

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _say(*lines: str, err: bool = False) -> None:
    for line in lines:
        if line:
            print(line, file=sys.stderr if err else sys.stdout)


def load_config(path: str | None) -> RunConfig:
    """run.toml (migrated from the flat layout, with a one-line message) or the defaults."""
    if not path:
        return RunConfig.of(corpus=str(SAMPLE_CORPUS))
    config, note = RunConfig.load_with_note(path)
    _say(note, err=True)
    return config


def cmd_prepare(args: argparse.Namespace) -> int:

    config = RunConfig.of(corpus=args.corpus or str(SAMPLE_CORPUS), protect=args.protect,
                       threshold=args.threshold, cache_dir=args.cache_dir, out=args.out,
                       text_column=args.text_column)  # fmt: skip
    out = check_writable(args.out)
    if args.engine == "ray":
        loaded = load_corpus(config.corpus, protect=config.protect, text_column=config.prepare.text_column)
        prepared = prepare_ray(loaded, config, RayOptions(address=args.address),
                               embeddings_path=out / "embeddings.npy")  # fmt: skip
    else:
        bars = _Bars()
        try:
            extra = {} if args.processes is None else {"processes": args.processes}
            prepared = prepare_path(config.corpus, config, progress=bars("prepare"),
                                    embeddings_path=out / "embeddings.npy", **extra)  # fmt: skip
        finally:
            bars.close()
    files = prepared_files(prepared)
    write_files(files, out)
    summary = prepared.summary()
    for doc_id, message in summary.get("presentation_warnings", {}).items():
        _say(f"warning: {doc_id}: {message}", err=True)
    keys = ("documents", "chunks", "entities_per_category", "identifiers_suppressed", "seconds")
    print(json.dumps({k: summary[k] for k in keys}, indent=2))
    print(f"Wrote {', '.join(files)} and embeddings.npy to {out}")
    return EXIT_OK


def cmd_release(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    overrides = {"out": args.out, "text_column": args.text_column}
    config = config.replace(**{k: v for k, v in overrides.items() if v})
    out = check_writable(config.out)  # before any work
    accepted = read_accepted(args.accept_leaks) if args.accept_leaks else set()
    embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir, backend=config.prepare.embedding_backend)
    ray = RayOptions(address=args.address) if args.engine == "ray" else None
    bars = _Bars()
    try:
        result = release_from_config(config, embedder, prepare_progress=bars("prepare"),
                                     progress=bars("releases"), ray=ray)  # fmt: skip
    finally:
        bars.close()
    _say(*result.notes)
    if result.release is None:
        write_release(result, out)
        _say(f"error: {result.no_release_reason()} Nothing was released; the report is in "
             f"{out / 'key'}.", err=True)
        return EXIT_NO_RELEASE
    choice = result.choice
    _say(f"Released {choice.release_id}, {choice.reason}: {describe_candidate(result.row)}.")
    if choice.why == "line":
        _say(choice.line.message)
    elif choice.line.index is not None and choice.line.index != choice.release_id:
        _say(f"(The trade-off line alone would pick {choice.line.index}.)")
    try:
        bundle = write_release(result, out, accepted)
    except LeakError as exc:
        _say(f"error: {exc}", err=True)
        return EXIT_LEAKS
    assert bundle is not None  # written: the result has a release
    _say(f"Wrote {out / 'released'}: {FOLDER_PURPOSE['released']}",
         f"Wrote {out / 'key'}: {FOLDER_PURPOSE['key']}",
         f"Leak scan: {len(bundle.hits)} hit(s)" + (", all accepted." if bundle.hits else "."))
    if result.goal_met is False:
        _say(f"Goal not met: {choice.goal_sentence}", err=True)
        return EXIT_GOAL_MISSED
    return EXIT_OK


def cmd_evaluate(args: argparse.Namespace) -> int:
    result = evaluate_release(args.release, args.corpus)
    if args.llm:
        settings = LLMSettings.from_env(url=args.llm_url, model=args.llm_model,
                                        cache_path=args.llm_cache)  # fmt: skip
        attacker = LLMAttacker(settings, result.candidates, confirm=args.confirm_llm)
        llm = result.add_llm(attacker)
        print(f"llm attacker ({settings.model}): changed chunks {llm['changed_pre_top1']} -> "
              f"{llm['changed_post_top1']}, document accuracy {llm.get('document_accuracy')}")
    out = Path(args.out) if args.out else Path(args.release) / "key"
    write_files(evaluation_files(result), out)
    for name, entry in result.summary["attackers"].items():
        if "pre_release" not in entry:
            continue  # the LLM's figures were printed above
        pre, post = entry["pre_release"], entry["release"]
        print(f"{name} attacker: chunk accuracy {pre['chunk_top1']:.3f} -> {post['chunk_top1']:.3f}, "
              f"documents named {pre['documents_named']} -> {post['documents_named']} of "
              f"{post['n_documents']} ({post['n_changed']} chunks changed, chance "
              f"{post['chance']:.3f})")
    print(f"Wrote attack.json and attack.csv to {out}")
    return EXIT_OK


def cmd_config(args: argparse.Namespace) -> int:
    print(RunConfig.of(corpus=str(SAMPLE_CORPUS)).to_toml(), end="")
    return EXIT_OK


def _exit_codes_text() -> str:
    return "exit codes:\n" + "\n".join(f"  {code:>3}  {text}" for code, text in EXIT_CODES.items())


def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m neswap_core", description=__doc__.splitlines()[0],
                                     epilog=_exit_codes_text(), formatter_class=formatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="preprocess a corpus: chunks, entities, z, embeddings",
                       epilog=_exit_codes_text(), formatter_class=formatter)
    p.add_argument("--corpus", help="folder (txt + manifest.csv), CSV/JSONL file or Motley Fool "
                   "JSON; default: the bundled sample")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--protect", default="company", help="metadata column to protect (default: company)")
    p.add_argument("--text-column", default="text",
                   help="column holding the text in a CSV/JSONL corpus (default: text)")
    p.add_argument("--threshold", type=float, default=75.0,
                   help="chunking percentile 0-100 (default 75)")
    p.add_argument("--cache-dir", default="",
                   help="cache folder (default: $NESWAP_CACHE_DIR or the per-user cache folder)")
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local: this machine, documents shared by --processes processes "
                   "(default); ray: Ray Data stages on a cluster")
    p.add_argument("--processes", type=int, default=None,
                   help="processes of the local engine (default: one per CPU, at most 4; each "
                   "holds its own models, ~0.5 GB)")
    p.add_argument("--address", help="Ray cluster address HOST:6379 (with --engine ray; "
                   "default: start a local Ray)")
    p.set_defaults(func=cmd_prepare)
    r = sub.add_parser("release", help="run the whole method from a config file and write the release",
                       epilog=_exit_codes_text(), formatter_class=formatter)
    r.add_argument("--config", help="run.toml (see `python -m neswap_core config`); default "
                   "settings if omitted")
    r.add_argument("--out", help="output folder (overrides the config's `out`); released/ and "
                   "key/ in it are replaced whole once the new release is complete")
    r.add_argument("--text-column", help="column holding the text in a CSV/JSONL corpus "
                   "(overrides the config's `text_column`)")
    r.add_argument("--accept-leaks", metavar="FILE",
                   help="CSV of accepted leak-scan hits (rows copied from key/leaks.csv: "
                   "document, chunk, identifier, case); any other hit blocks released/")
    r.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local: this machine's processes (default); ray: preparation and the "
                   "sweep's embeddings on Ray (the same candidates and released/ bytes)")
    r.add_argument("--address", help="Ray cluster address HOST:6379 (with --engine ray; "
                   "default: start a local Ray)")
    r.set_defaults(func=cmd_release)
    e = sub.add_parser("evaluate", help="measure an existing release folder with the attackers "
                       "(SPEC §8)", epilog=_exit_codes_text(), formatter_class=formatter)
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


def _interrupted(args: argparse.Namespace) -> str:
    """The one line printed on Ctrl-C: what is left in the output folder."""
    if args.command != "release":
        return "Interrupted."
    where = f" in {args.out}" if args.out else ""
    return (f"Interrupted: no new release was written; the previous release{where}, if any, is "
            "left as it was.")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(_interrupted(args), file=sys.stderr)
        return EXIT_INTERRUPTED
    except NeswapError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # ``python -m neswap_core.cli`` ran nothing and exited 0
    sys.exit(main())
