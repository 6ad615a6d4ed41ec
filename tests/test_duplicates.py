"""Documents that repeat each other: a short message naming them and saying what to do, and a
smaller K advised only where one can fit (issue 23 item 11)."""

from __future__ import annotations

import numpy as np
import pytest

from neswap_core.config import RunConfig
from neswap_core.corpus import Chunk
from neswap_core.errors import FitError
from neswap_core.generate.context import fit_mixture_naming_copies
from neswap_core.models.mixture import SphericalMixture
from neswap_core.text.duplicates import cluster_count_advice, duplicates_message, repeated_documents

TEMPLATE = ["[Company Name] grew 12%.", "Margins expanded by 150 basis points.", "Cash was strong."]


def copies(n_docs: int = 6) -> dict[str, list[str]]:
    return {f"DOC{k}_q1": list(TEMPLATE) for k in range(n_docs)}


def unit_rows(distinct: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(distinct, 384))
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    return base[np.arange(n) % distinct]


def test_repeated_documents_are_grouped_and_distinct_ones_are_not():
    passages = {**copies(3), "OTHER_q1": ["A different call.", "Nothing alike here.", "At all."]}
    assert repeated_documents(passages) == [("DOC0_q1", "DOC1_q1", "DOC2_q1")]
    boiler = {f"D{k}": ["Thank you.", f"Unique text {k}.", f"More {k}.", f"Again {k}."] for k in range(4)}
    assert repeated_documents(boiler) == []  # one shared sentence does not make a copy


def test_the_message_is_short_structured_and_names_the_documents():
    message = duplicates_message(copies(), k=2)
    lines = message.split("\n")
    assert len(message) < 600 and len(lines) == 4
    assert lines[0] == "Documents repeat each other: only 3 of the 18 passages are distinct."
    assert all(f"DOC{k}_q1" in lines[1] for k in range(6))
    assert lines[2].startswith("What to do: keep one document of each group")
    assert "smaller K" not in message and "no number of clusters fits" in lines[3]
    assert duplicates_message({"A": ["x."], "B": ["y."]}, k=2) is None


@pytest.mark.parametrize(
    "n, distinct, k, advised",
    [(18, 3, 2, False), (18, 6, 5, False), (18, 12, 5, True), (18, 12, 1, False), (40, 40, 50, True)],
)
def test_a_smaller_k_is_advised_only_where_one_can_fit(n, distinct, k, advised):
    advice = cluster_count_advice(n, distinct, k)
    assert ("smaller K" in advice) is advised
    if advised:
        largest = int(advice.split("at most ")[1].split(" ")[0])
        assert 1 <= largest < k and largest <= distinct


def test_a_collapsed_mixture_does_not_advise_a_k_that_collapses_too():
    """The defect: "Choose a smaller K (e.g. K = 1)" where K = 1 collapsed as well."""
    x = unit_rows(3, 18)
    for k in (2, 1):
        with pytest.raises(FitError) as info:
            SphericalMixture(n_components=k, n_init=1, random_state=0).fit(x)
        assert "smaller K" not in str(info.value) and "copies" in str(info.value)


def test_the_release_path_names_the_copies_when_the_fit_fails():
    passages = copies()
    chunks = [Chunk(f"{d}#{i}", d, i, t, d) for d, ts in passages.items() for i, t in enumerate(ts)]
    x = unit_rows(3, len(chunks))
    with pytest.raises(FitError) as info:
        fit_mixture_naming_copies(chunks, x, RunConfig.of(n_components=2, n_init=1))
    assert str(info.value).startswith("Documents repeat each other")
    assert "DOC5_q1" in str(info.value)
