"""Executive-name suppression on the dev corpus, with and without ``executives.csv`` (issue 10).

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/identifiers.py [corpus folder]

Ground truth: the company-side executives listed in ``executives.csv`` for each call. Their
mentions are counted in the presentation text (before suppression) by rules written here,
independently of ``identifiers.py``: the full name with or without middle initials, given name
or a nickname (``nicknames.py``) plus surname, surname alone, given name alone unless another
capitalised word follows (another person), possessives included. Recall = 1 - mentions left
after suppression / mentions before. A false suppression is an ``[Executive #]`` replacement
whose text is no variant of a listed executive of that call: listed, so they can be judged
(some are real executives the file does not list). Target: recall >= 0.98 without the file.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from neswap_core.text.entities import load_ner  # noqa: E402
from neswap_core.text.identifiers import document_aliases, suppress_identifiers  # noqa: E402
from neswap_core.text.layouts import is_company_side  # noqa: E402
from neswap_core.text.loading import load_corpus  # noqa: E402
from neswap_core.text.nicknames import FORMAL, NICKNAMES  # noqa: E402
from neswap_core.text.people import add_detected_people  # noqa: E402
from neswap_core.text.presentation import extract_presentations  # noqa: E402

TARGET = 0.98
DEV = ROOT.parent / "shared" / "corpus" / "dev"
CACHE = ROOT / "benchmarks" / ".cache" / "identifiers"


def variants(name: str) -> set[str]:
    """Every written form of one executive counted as a mention (module docstring)."""
    tokens = re.sub(r"^(?:Dr|Mr|Mrs|Ms)\.?\s*", "", " ".join(name.split())).split()
    core = [t for t in tokens if not re.fullmatch(r"[A-Z]\.?(?:[A-Z]\.?)*", t)]
    forms = {" ".join(tokens), " ".join(core)}
    if len(core) >= 2:
        given, surname = core[0], core[-1]
        givens = {given, *NICKNAMES.get(given, ()), *FORMAL.get(given, ())}
        forms |= {f"{g} {surname}" for g in givens} | {surname, given, *NICKNAMES.get(given, ())}
        if len(core) >= 3:
            forms |= {f"{g} {' '.join(core[1:])}" for g in givens} | {" ".join(core[1:])}
    return {f for f in forms if f}


def mention_regex(names: list[str]) -> re.Pattern[str] | None:
    forms = sorted({v for n in names for v in variants(n)}, key=lambda v: (-len(v), v))
    if not forms:
        return None
    alts = "|".join(r"\s+".join(map(re.escape, f.split())) for f in forms)
    # a lone given name followed by another capitalised word is someone else ("Adam Tindle")
    return re.compile(rf"(?<![\w\[])(?:{alts})(?!\w)(?![ \t]+[A-Z][a-z])")


def listed_executives(folder: Path) -> dict[tuple[str, str], list[str]]:
    frame = pd.read_csv(folder / "executives.csv", dtype=str, keep_default_na=False)
    out: dict[tuple[str, str], list[str]] = {}
    for row in frame.to_dict("records"):
        if is_company_side(row["name"], row.get("role", "")):
            out.setdefault((row["ticker"], row.get("quarter", "")), []).append(row["name"])
    return out


def without_file(folder: Path, tmp: Path) -> Path:
    """A view of ``folder`` without executives.csv (symlinks)."""
    for entry in folder.iterdir():
        if entry.name != "executives.csv" and entry.name != "attacker":
            (tmp / entry.name).symlink_to(entry.resolve())
    return tmp


def measure(folder: Path, truth: dict, nlp) -> dict:
    corpus = load_corpus(folder)
    presented, _ = extract_presentations(corpus)
    start = time.perf_counter()
    detected, _ = add_detected_people(presented, nlp, CACHE)
    seconds = time.perf_counter() - start
    before = after = 0
    missed: Counter = Counter()
    false: list[tuple[str, str]] = []  # in calls with a list: not one of its executives
    unlisted: list[tuple[str, str]] = []  # in calls the file does not cover: cannot be judged
    for doc in detected.documents:
        listed = truth.get((doc.metadata.get("ticker", ""), doc.metadata.get("quarter", "")))
        result = suppress_identifiers(
            doc.text, document_aliases(doc.metadata, doc.aliases), doc.executives
        )
        if listed:
            pattern = mention_regex(listed)
            before += len(pattern.findall(doc.text))
            left = pattern.findall(result.text)
            after += len(left)
            missed.update(f"{doc.doc_id}: {m}" for m in left)
        own = {" ".join(v.split()) for n in listed or [] for v in variants(n)}
        for text, _placeholder in result.executive_mentions:
            if " ".join(text.split()) not in own:
                (false if listed else unlisted).append((doc.doc_id, text))
    recall = 1 - after / before if before else float("nan")
    return {
        "recall": recall,
        "mentions": before,
        "left": after,
        "missed": missed,
        "false": Counter(false),
        "unlisted": Counter(unlisted),
        "seconds": seconds,
    }


def report(label: str, r: dict) -> None:
    print(f"\n== {label}")
    print(
        f"recall {r['recall']:.4f} = 1 - {r['left']}/{r['mentions']} mentions left; "
        f"ratio to target {TARGET}: {r['recall'] / TARGET:.3f}"
    )
    n_false, n_unlisted = sum(r["false"].values()), sum(r["unlisted"].values())
    print(
        f"false suppressions in listed calls: {n_false} ({len(r['false'])} distinct); "
        f"suppressions in calls without a list (not judged): {n_unlisted}; "
        f"detection {r['seconds']:.1f} s"
    )
    if r["missed"]:
        print("missed:", "; ".join(f"{k} x{v}" for k, v in r["missed"].most_common()))
    for key, label in (("false", "false"), ("unlisted", "not judged")):
        if r[key]:
            items = sorted(r[key].items())
            print(f"{label}:", "; ".join(f"{d}: {t} x{v}" for (d, t), v in items))


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else DEV
    if not (folder / "executives.csv").is_file():
        sys.exit(f"{folder} has no executives.csv: nothing to measure against.")
    truth = listed_executives(folder)
    nlp = load_ner()
    with_file = measure(folder, truth, nlp)
    with tempfile.TemporaryDirectory() as tmp:
        withheld = measure(without_file(folder, Path(tmp)), truth, nlp)
    report("executives.csv withheld (detected from the text only)", withheld)
    report("executives.csv given (listed + detected)", with_file)
    print(
        f"\nSUMMARY recall without file {withheld['recall']:.4f} "
        f"(ratio {withheld['recall'] / TARGET:.3f}), with file {with_file['recall']:.4f} "
        f"(ratio {with_file['recall'] / TARGET:.3f}); false suppressions in listed calls "
        f"without/with {sum(withheld['false'].values())}/{sum(with_file['false'].values())}"
    )


if __name__ == "__main__":
    main()
