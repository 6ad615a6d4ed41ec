"""Long documents in linear time (issue 23 item 10): a release diffs, scans and re-reads whole
documents; a 5.8 MB document froze `release` for over 10 minutes in a whole-document difflib.

Each function a release runs on whole documents is timed on a synthetic document of size n and
4n built here (CPU time of this process, the best of two runs): linear work grows about 4×,
quadratic 16×; the bound is 8×. The token diff is also checked by counting its work (pairs of
tokens compared by difflib), which no machine load can disturb."""

from __future__ import annotations

import difflib
import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neswap_core.corpus import Document
from neswap_core.measure.release_measures import word_counts
from neswap_core.publish.annotations import changed_mentions
from neswap_core.publish.leaks import LeakTerm, scan_release
from neswap_core.text import token_diff
from neswap_core.text.layouts import detect_layout
from neswap_core.text.presentation import extract_presentation

WORDS = (
    "revenue margin growth quarter customers demand pricing costs cash flow guidance segment "
    "market product services supply chain backlog orders inventory capital dividend outlook "
    "the a of and in to we our for with on as by strong higher lower year million billion"
).split()
MAX_RATIO = 10.0  # n -> 4n: linear about 4, quadratic 16


def synthetic(n_words: int, seed: int = 0, distinct: bool = True) -> str:
    """Paragraphs of sentences of common words and figures (a long call, invented). With
    ``distinct`` every figure occurs once (tokens that anchor a diff); otherwise the figures
    repeat and no token is unique (the worst case for the diff)."""
    rng = np.random.default_rng(seed)
    words = rng.choice(WORDS, size=n_words)
    figures = np.arange(n_words) if distinct else rng.integers(1, 50, size=n_words)
    out, sentence = [], []
    for k, word in enumerate(words):
        sentence.append(f"{word} {figures[k]}" if k % 9 == 0 else str(word))
        if len(sentence) >= 12 + k % 7:
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
        if len(out) % 6 == 5 and not sentence:
            out.append("\n\n")
    return " ".join(out)


def released(text: str, seed: int = 1, share: float = 0.02) -> str:
    """``text`` with a share of its words replaced, as suppression and swaps do."""
    rng = np.random.default_rng(seed)
    tokens = text.split(" ")
    for k in rng.choice(len(tokens), size=int(share * len(tokens)), replace=False):
        tokens[k] = rng.choice(["[Company Name]", "[Location]", "Northwind", "[…]"])
    return " ".join(tokens)


def cpu_seconds(fn, *args) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        fn(*args)
        best = min(best, time.process_time() - start)
    return best


def ratio(fn, make, n: int) -> float:
    """CPU time at 4n over CPU time at n, the best of two runs each: on a loaded machine one run
    measured 8.96 for a linear function (cache misses of the other processes)."""
    small, large = make(n), make(4 * n)
    return (min(cpu_seconds(fn, *large) for _ in range(2))
            / max(min(cpu_seconds(fn, *small) for _ in range(2)), 1e-3))


# --- the token diff ------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abcde"), max_size=40), st.lists(st.sampled_from("abcde"), max_size=40))
def test_token_diff_is_difflib_on_ordinary_sizes(a, b):
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    assert token_diff.opcodes(a, b) == [tuple(op) for op in matcher.get_opcodes()]
    assert token_diff.matching_blocks(a, b) == [tuple(m) for m in matcher.get_matching_blocks()]


def test_token_diff_finds_the_same_changes_as_difflib_on_a_long_document():
    """Over the exact-difflib size, sparse in-place changes give difflib's very answer."""
    a = re.findall(r"\S+", synthetic(9000))
    b = re.findall(r"\S+", released(" ".join(a)))
    assert len(a) + len(b) > token_diff.DIRECT
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    assert token_diff.opcodes(a, b) == [tuple(op) for op in matcher.get_opcodes()]


@pytest.mark.parametrize("distinct", [True, False], ids=["anchored", "no-unique-token"])
def test_token_diff_work_grows_linearly(monkeypatch, distinct):
    work = []
    real = token_diff._difflib

    def counted(a, b, i, j):
        work[-1] += len(a) * len(b)
        return real(a, b, i, j)

    monkeypatch.setattr(token_diff, "_difflib", counted)
    sizes = (60_000, 240_000)
    for n in sizes:
        a = synthetic(n, distinct=distinct).split()
        work.append(0)
        blocks = token_diff.matching_blocks(a, released(" ".join(a)).split())
        assert sum(s for _, _, s in blocks) > 0.95 * len(a)  # the unchanged words are found
    assert work[1] / work[0] < 4.5  # linear; a whole-document difflib would be 16
    assert work[1] < 2 * token_diff.WINDOW * 2 * sizes[1]  # about WINDOW pairs per token


# --- the functions of a release that see whole documents ---------------------------------------------
def test_tab_spans_of_a_few_megabytes_in_linear_time():
    def make(n):
        text = synthetic(n)
        return text, released(text)

    assert len(make(150_000)[0]) > 1_000_000  # 1 MB and 4 MB of text
    assert ratio(changed_mentions, make, 150_000) < MAX_RATIO


def test_words_unchanged_of_a_long_chunk_in_linear_time():
    def make(n):
        text = synthetic(n)
        return text, released(text)

    assert ratio(word_counts, make, 100_000) < MAX_RATIO


def test_presentation_of_a_long_prose_text_in_linear_time():
    """Every agenda sentence was a candidate hand-over whose sentence start was found by a scan
    from the top of the text (quadratic)."""
    agenda = "After our prepared remarks we will open the line for questions. "

    def make(n):
        body = synthetic(n).replace("\n\n", "\n\n" + agenda)
        return (Document("long", body),)

    result = extract_presentation(make(2000)[0])
    assert result.status in ("no_qa", "extracted") and len(result.text) > 0.9 * len(make(2000)[0].text)
    assert ratio(extract_presentation, make, 40_000) < MAX_RATIO


def test_layout_of_a_long_text_with_many_short_lines_in_linear_time():
    """Repeated short lines were counted with list.count for each line (quadratic)."""

    def make(n):
        lines = [f"Item {k % 997} of the table" for k in range(n)]
        return ("\n".join(lines),)

    assert detect_layout(make(1000)[0]) in ("unknown", "prose")
    assert ratio(detect_layout, make, 20_000) < MAX_RATIO


def test_leak_scan_of_a_long_document_in_linear_time():
    terms = [LeakTerm("Northwind", "alias", frozenset({"x"})), LeakTerm("Regions", "alias")]

    def make(n):
        text = released(synthetic(n))
        chunks = [c for c in text.split("\n\n") if c.strip()]
        return {"d": chunks}, terms, {"d": "x"}

    documents = make(20_000)[0]
    assert scan_release(documents, terms, {"d": "x"})  # the swapped-in name is found
    assert ratio(scan_release, make, 100_000) < MAX_RATIO


@pytest.mark.parametrize("n", [5_000])
def test_tab_spans_still_type_each_change(n):
    text = synthetic(n)
    mentions = changed_mentions(text, released(text), {"Northwind": "Organization"})
    kinds = {m["replaced_by"]: (m["entity_type"], m["identifier_type"]) for m in mentions}
    assert kinds["[Company Name]"] == ("ORG", "DIRECT")
    assert kinds["Northwind"] == ("ORG", "QUASI")
