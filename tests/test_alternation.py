"""text.alternation: one prefix-tree regex matches what the longest-first alternation matched.

Second method: the alternation the leak scan and the role-C rewrite compiled before (every
string, longest first, ``"|".join``), on random strings and texts over a small alphabet that
makes prefixes, shared words, case and white space collide; with the boundaries each caller
puts around it, with and without IGNORECASE and ``\\s+`` between words.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from neswap_core.text.alternation import alternation

WORD = st.text(alphabet="aAbBc.&'-", min_size=1, max_size=4)
BODY = st.lists(WORD, min_size=1, max_size=3).map(" ".join)
GLUE = st.sampled_from([" ", "  ", "\t", "", ".", "x", "'s ", "\n"])


def _reference(bodies, whitespace: bool) -> str:
    ordered = sorted(set(bodies), key=lambda s: (-len(s), s))
    if whitespace:
        return "|".join(r"\s+".join(re.escape(w) for w in b.split()) for b in ordered)
    return "|".join(map(re.escape, ordered))


BOUNDS = [(r"(?<!\w)", r"(?!\w)"), (r"(?<![\w.])", r"(?!\w)"), ("", "")]


@settings(max_examples=300, deadline=None)
@given(bodies=st.lists(BODY, min_size=1, max_size=12), pieces=st.lists(st.tuples(BODY, GLUE), max_size=12),
       whitespace=st.booleans(), fold=st.booleans(), bounds=st.sampled_from(BOUNDS))  # fmt: skip
def test_the_tree_matches_what_the_longest_first_alternation_matches(bodies, pieces, whitespace, fold, bounds):
    text = "".join(p + g for p, g in pieces)
    if fold:  # texts in another case than the bodies
        text = text.swapcase()
    before, after = bounds
    flags = re.IGNORECASE if fold else 0
    expected = re.compile(before + "(?:" + _reference(bodies, whitespace) + ")" + after, flags)
    tree = re.compile(before + "(?:" + alternation(bodies, whitespace=whitespace, fold=fold) + ")" + after, flags)
    assert [m.span() for m in tree.finditer(text)] == [m.span() for m in expected.finditer(text)]


def test_shared_prefixes_become_one_path_longest_first():
    assert alternation(["Acme", "Acme Corp", "Acme Corporation", "Apple"], whitespace=True) == (
        r"A(?:cme(?:\s+Corp(?:oration)?)?|pple)"
    )
    assert alternation([]) is None and alternation(["", "  "], whitespace=True) is None
    pattern = re.compile(r"(?<!\w)(?:" + alternation(["Acme", "Acme Corp"], whitespace=True) + r")(?!\w)")
    assert [m.group() for m in pattern.finditer("Acme Corpx, Acme  Corp. and Acme's")] == ["Acme", "Acme  Corp", "Acme"]


def test_leak_scan_terms_are_found_as_before_on_many_identifiers():
    """The leak scan's own use: thousands of names (the 100k corpus held 1,587 companies and
    their executives), a text that mentions some, in exact and in any case."""
    import random

    from neswap_core.publish.leaks import LeakScanner, LeakTerm

    rng = random.Random(0)
    syllables = ["ka", "lo", "mi", "ne", "ro", "ta", "vu", "ze"]
    names = sorted({" ".join("".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))).title()
                             for _ in range(rng.randint(1, 3))) for _ in range(3000)})  # fmt: skip
    terms = [LeakTerm(n, "executive" if " " in n else "protected", frozenset({"d"})) for n in names]
    scanner = LeakScanner(tuple(terms))
    mentioned = rng.sample(names, 40)
    text = " ".join(f"{rng.choice(['We met', 'and', 'with', 'said'])} {m}{rng.choice(['.', ',', chr(39) + 's', ''])}"
                    for m in mentioned)  # fmt: skip
    for flags, source in ((0, text), (re.IGNORECASE, text.lower())):
        expected = re.compile(r"(?<!\w)(?:" + _reference(names, True) + r")(?!\w)", flags)
        got = re.compile(r"(?<!\w)(?:" + alternation(names, whitespace=True, fold=bool(flags)) + r")(?!\w)", flags)
        assert [m.span() for m in got.finditer(source)] == [m.span() for m in expected.finditer(source)]
    found = {term.text for _, _, term, _ in scanner.scan(text)}
    assert set(mentioned) <= found
