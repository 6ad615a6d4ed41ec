"""Counts after replacing spans, from the changed words only (measure/count_delta.py), are the
counts of the replaced text, bit for bit: on the bundled sample's real passages, for every
vectorizer the attacker families use, with spans that start mid-word, end a passage, meet, hold
whitespace or vanish; and the document defence's plans are the plans of re-scoring whole passages.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from neswap_core.measure import count_delta
from neswap_core.measure.panel import Family, make_family

SAMPLE = Path(__file__).resolve().parents[1] / "neswap_core" / "data" / "sample" / "docs"


@pytest.fixture(scope="module")
def passages() -> list[str]:
    """~60 real passages of ~600 characters from the sample's first transcripts."""
    out = []
    for path in sorted(SAMPLE.rglob("*.txt"))[:4]:
        text = path.read_text(encoding="utf-8")
        out += [text[i:i + 600] for i in range(0, min(len(text), 9000), 600)]
    assert len(out) > 40
    return out


def random_edits(texts: list[str], rng: np.random.Generator, n: int) -> list[tuple[int, list]]:
    """Edits of every awkward kind: mid-word starts, passage ends, meeting and overlapping spans
    (the later is dropped, as ``replaced_text`` does), replacements with spaces, empty ones."""
    fills = ["Zorblax", "", "new product line", " ", "U.S.-based", "ΣΟΦΟΣ", "co-op's", "x", "\n\n"]
    edits = []
    for _ in range(n):
        i = int(rng.integers(len(texts)))
        size = len(texts[i])
        spans = []
        for _ in range(int(rng.integers(1, 5))):
            s = int(rng.choice([0, size, rng.integers(size + 1)]))
            e = min(size, s + int(rng.integers(0, 25)))
            spans.append((s, e, str(rng.choice(fills))))
        edits.append((i, spans))
    return edits


def same(a, b) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert a.data.tobytes() == b.data.tobytes()


VECTORIZERS = {
    "word tf-idf 1-2": lambda: TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
    "char_wb 2-5": lambda: TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), min_df=2),
    "word counts 1-2": lambda: CountVectorizer(ngram_range=(1, 2)),
    "word 1-3": lambda: CountVectorizer(ngram_range=(1, 3)),
    "stop words (whole texts)": lambda: CountVectorizer(ngram_range=(1, 2), stop_words="english"),
    "char (whole texts)": lambda: CountVectorizer(analyzer="char", ngram_range=(2, 4)),
}


@pytest.mark.parametrize("name", list(VECTORIZERS))
def test_edited_counts_are_the_counts_of_the_replaced_texts(passages, name):
    vectorizer = VECTORIZERS[name]().fit(passages[::2])
    edits = random_edits(passages, np.random.default_rng(len(name)), 300)
    expected = count_delta.raw_counts(vectorizer, [count_delta.replaced_text(passages[i], s) for i, s in edits])
    same(count_delta.edited_counts(vectorizer, passages, None, edits), expected)
    base = count_delta.raw_counts(vectorizer, passages)
    same(count_delta.edited_counts(vectorizer, passages, base, edits[:7]), expected[:7])
    assert count_delta.edited_counts(vectorizer, passages, base, []).shape == (0, expected.shape[1])


def test_only_the_supported_vectorizers_use_windows():
    assert count_delta.supports(CountVectorizer(ngram_range=(1, 2)))
    assert count_delta.supports(TfidfVectorizer(analyzer="char_wb"))
    assert not count_delta.supports(CountVectorizer(stop_words="english"))
    assert not count_delta.supports(CountVectorizer(analyzer="char"))
    assert not count_delta.supports(CountVectorizer(strip_accents="unicode"))


def test_a_bigram_across_a_two_letter_word_and_a_dash_is_counted():
    """Context is counted in tokens, not words: "a" and "—" hold none, so the window reaches on."""
    vectorizer = CountVectorizer(ngram_range=(1, 2)).fit(["our cloud a — grew", "cloud grew fast"])
    text = "our cloud a — grew fast"
    edit = (0, [(4, 9, "Nimbus")])
    same(count_delta.edited_counts(vectorizer, [text], None, [edit]),
         count_delta.raw_counts(vectorizer, ["our Nimbus a — grew fast"]))


@pytest.mark.parametrize("family", ["word", "char", "nb", "svm", "word_c1"])
def test_edited_scores_are_the_scores_of_the_replaced_texts(passages, family):
    labels = [f"c{k % 3}" for k in range(len(passages))]
    fam = make_family(family).fit(passages, labels)
    edits = random_edits(passages, np.random.default_rng(7), 200)
    replaced = [count_delta.replaced_text(passages[i], s) for i, s in edits]
    assert fam.edited_scores(passages, edits).tobytes() == fam.chunk_scores(replaced).tobytes()


def test_retrieval_edited_counts_are_the_counts_of_the_replaced_texts(passages):
    labels = [f"c{k % 3}" for k in range(len(passages))]
    fam = make_family("retrieval").fit(passages, labels)
    edits = random_edits(passages, np.random.default_rng(8), 200)
    replaced = [count_delta.replaced_text(passages[i], s) for i, s in edits]
    same(fam.edited_counts(passages, edits), fam.counts(replaced))


def test_document_plans_equal_the_plans_of_re_scoring_whole_passages(monkeypatch):
    """Second method: the same plans, bit for bit, when every member re-scores whole passages."""
    from neswap_core.generate.document import DefenceParams
    from neswap_core.generate.document_budget import DocumentDefender, prepare_defence
    from neswap_core.generate.document_terms import TermModel
    from neswap_core.measure.panel import LinearTextFamily, RetrievalFamily
    from tests.test_document_defence import corpus

    chunks = corpus({"Acme": 2, "Bolt": 2, "Cres": 2}, chunks_per_doc=4, seed=3)
    reading = corpus({"Acme": 3, "Bolt": 3, "Cres": 3}, chunks_per_doc=4, seed=4, prefix="r")
    units = ([c.text for c in reading], [c.protected for c in reading], [c.doc_id for c in reading])
    model = TermModel().fit(chunks, units)
    defender = DocumentDefender().fit(*units)
    params = DefenceParams(level=0.1, min_z=0.0)
    fast = prepare_defence(chunks, model, params, np.random.default_rng(0), defender).plans
    monkeypatch.setattr(LinearTextFamily, "edited_scores", Family.edited_scores)
    monkeypatch.setattr(RetrievalFamily, "edited_counts", lambda self, texts, edits: self.counts(
        [count_delta.replaced_text(texts[i], s) for i, s in edits]))
    whole = prepare_defence(chunks, model, params, np.random.default_rng(0), defender).plans
    assert fast.keys() == whole.keys() and any(p.order for p in fast.values())
    for doc_id in fast:
        assert fast[doc_id].order == whole[doc_id].order
        assert fast[doc_id].fractions.tobytes() == whole[doc_id].fractions.tobytes()
        assert fast[doc_id].costs.tobytes() == whole[doc_id].costs.tobytes()


@pytest.mark.slow
def test_document_plans_in_worker_processes_equal_one_process(monkeypatch):
    """Each document scored alone in a spawned worker: the same plans, bit for bit."""
    from neswap_core.generate import document_budget
    from neswap_core.generate.document import DefenceParams
    from neswap_core.generate.document_budget import (
        DocumentDefender,
        document_plans,
        prepare_defence,
    )
    from neswap_core.generate.document_terms import TermModel
    from tests.test_document_defence import corpus

    chunks = corpus({"Acme": 3, "Bolt": 3, "Cres": 3}, chunks_per_doc=4, seed=5)
    reading = corpus({"Acme": 3, "Bolt": 3, "Cres": 3}, chunks_per_doc=4, seed=6, prefix="r")
    units = ([c.text for c in reading], [c.protected for c in reading], [c.doc_id for c in reading])
    defender = DocumentDefender().fit(*units)
    prep = prepare_defence(chunks, TermModel().fit(chunks, units), DefenceParams(level=0.1, min_z=0.0),
                           np.random.default_rng(0), None)
    rival = {i: prep.docs[prep.partner[i]].company for i in prep.docs}
    one = document_plans(chunks, prep.docs, defender, rival, prep.fills, min_z=0.0, processes=1)
    monkeypatch.setattr(document_budget, "PROCESS_MIN_DOCUMENTS", 2)

    def here(*args):
        raise AssertionError("scored in this process, not in the workers")

    monkeypatch.setattr(document_budget, "_fractions", here)  # the spawned workers import their own
    import weakref

    made, alive, most = [0], [0], [0]
    build = document_budget._doc_job

    def counted(*args):  # a job lives in this process until its result is back
        job = build(*args)
        made[0] += 1
        alive[0] += 1
        most[0] = max(most[0], alive[0])
        weakref.finalize(job, lambda: alive.__setitem__(0, alive[0] - 1))
        return job

    monkeypatch.setattr(document_budget, "_doc_job", counted)
    two = document_plans(chunks, prep.docs, defender, rival, prep.fills, min_z=0.0, processes=2)
    # built as the workers need them (issue 21: all of them at once were ~1 GB at 100k)
    assert made[0] == len(prep.docs) and most[0] <= 4 + 1 < len(prep.docs), (made, most)
    assert any(p.order for p in one.values())
    for doc_id in one:
        assert one[doc_id].order == two[doc_id].order
        assert one[doc_id].fractions.tobytes() == two[doc_id].fractions.tobytes()


@pytest.mark.slow
def test_a_script_without_a_main_guard_gets_its_plans_instead_of_hanging(tmp_path):
    """Spawned workers re-run an unguarded script, which ends in ``sys.exit``: they die before
    reading their start-up data. The defender (hundreds of kB) used to be part of that data,
    which the parent writes whole before going on (holding the pipe's read end itself, so it is
    never told the reader died): the run hung forever. Now the plans come from this process
    after the pool breaks."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    script = tmp_path / "unguarded.py"
    script.write_text(f"""
import pickle, sys
from pathlib import Path
sys.path.insert(0, {str(root)!r})
import numpy as np
from neswap_core.corpus import Chunk
from neswap_core.generate import document_budget
from neswap_core.generate.document import DefenceParams
from neswap_core.generate.document_terms import TermModel
chunks, reading = [], ([], [], [])
for path in sorted(Path({str(SAMPLE)!r}).glob("*.txt"))[:4]:  # real calls: a real vocabulary
    words = path.read_text(encoding="utf-8").split()
    windows = [" ".join(words[i:i + 90]) for i in range(0, len(words) - 90, 90)]
    for k, text in enumerate(windows[:6]):
        chunks.append(Chunk(f"{{path.stem}}#{{k:04d}}", path.stem, k, text, path.stem))
    for k, text in enumerate(windows[6:]):
        reading[0].append(text), reading[1].append(path.stem), reading[2].append(f"{{path.stem}}_r{{k % 2}}")
defender = document_budget.DocumentDefender().fit(*reading)
prep = document_budget.prepare_defence(chunks, TermModel().fit(chunks, reading),
    DefenceParams(level=0.1, min_z=0.0), np.random.default_rng(0), None)
rival = {{i: prep.docs[prep.partner[i]].company for i in prep.docs}}
document_budget.PROCESS_MIN_DOCUMENTS = 2
plans = document_budget.document_plans(chunks, prep.docs, defender, rival, prep.fills, min_z=0.0,
                                       processes=2)
print("members bytes", len(pickle.dumps(defender.members_)), "plans", len(plans), flush=True)
sys.exit(0)  # a spawned worker re-running this exits here, before reading its start-up data
""")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    line = out.stdout.strip().splitlines()[-1].split()
    assert int(line[2]) > 500_000 and line[-1] == "4"  # far more than a pipe holds; every call  # bigger than a pipe's buffer; every document


def test_members_that_cut_words_alike_share_the_windows_and_still_count_their_own(passages, monkeypatch):
    """The defence scores one document's edits under each member in turn: members that cut
    words alike (two halves' word models; character models and unigram models, which widen by
    no token) cut the windows once; a bigram model and a trigram model cut their own. Every
    member's changes stay exactly the replaced texts' counts minus the passages'."""
    rng = np.random.default_rng(7)
    edits = random_edits(passages, rng, 40)
    members = [TfidfVectorizer(ngram_range=(1, 2)).fit(passages[::2]),
               TfidfVectorizer(ngram_range=(1, 2)).fit(passages[1::2]),
               TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5)).fit(passages),
               CountVectorizer(ngram_range=(1, 1)).fit(passages),
               TfidfVectorizer(ngram_range=(1, 3)).fit(passages)]
    cuts: list[int] = []
    real = count_delta._windows
    monkeypatch.setattr(count_delta, "_windows", lambda *a: cuts.append(1) or real(*a))
    for v in members:
        got = count_delta.count_changes(v, passages, edits).toarray()
        replaced = [count_delta.replaced_text(passages[i], spans) for i, spans in edits]
        want = (CountVectorizer.transform(v, replaced) - CountVectorizer.transform(v, [passages[i] for i, _ in edits]))
        np.testing.assert_array_equal(got, want.toarray())
    # windows cut for: the first bigram model, the character model (its own cut), the unigram
    # model (the character model's cut again), the trigram model
    assert len(cuts) == 3 * len(edits)
    count_delta.count_changes(members[0], list(passages), edits)  # other texts: cut again
    assert len(cuts) == 4 * len(edits)


def test_jobs_are_handed_out_one_line_up_after_another_biggest_first_within():
    """Issue 21: each line-up's members have their own row memos, bounded per process; handed
    out by size alone, 32 line-ups took turns in each worker and their memos kept being dropped.
    Without line-ups: biggest first, as before."""
    from neswap_core.generate.document_budget import job_order

    sizes = [5, 9, 1, 7, 3, 8, 2]
    groups = [0, 1, 0, 2, 1, 0, 2]  # work: line-up 0 holds 14, 1 holds 12, 2 holds 9
    assert job_order(sizes) == [1, 5, 3, 0, 4, 6, 2]
    assert job_order(sizes, groups) == [5, 0, 2, 1, 4, 3, 6]
    assert job_order([4, 4], [1, 0]) == [1, 0]  # equal work: line-up 0 first
    assert job_order([], []) == []


def test_plans_under_line_ups_are_scored_line_up_by_line_up_and_the_same_in_workers(monkeypatch):
    """With several line-ups the workers get one line-up's documents after another (the order
    they are built in), and the plans are one process's, bit for bit."""
    from neswap_core.generate import document_budget
    from neswap_core.generate.document import DefenceParams
    from neswap_core.generate.document_budget import (
        DocumentDefender,
        document_plans,
        prepare_defence,
    )
    from neswap_core.generate.document_terms import TermModel
    from tests.test_document_defence import corpus

    sizes = {"Acme": 3, "Bolt": 3, "Cres": 3, "Dyna": 3}
    chunks = corpus(sizes, chunks_per_doc=3, seed=5)
    reading = corpus(sizes, chunks_per_doc=3, seed=6, prefix="r")
    units = ([c.text for c in reading], [c.protected for c in reading], [c.doc_id for c in reading])
    defender = DocumentDefender(lineup=2).fit(*units)
    prep = prepare_defence(chunks, TermModel().fit(chunks, units), DefenceParams(level=0.1, min_z=0.0),
                           np.random.default_rng(0), None)
    rival = {i: prep.docs[prep.partner[i]].company for i in prep.docs}
    groups = document_budget._job_groups(defender, [d.company for d in prep.docs.values()])
    assert groups is not None and len(set(groups)) == 2
    one = document_plans(chunks, prep.docs, defender, rival, prep.fills, min_z=0.0, processes=1)
    monkeypatch.setattr(document_budget, "PROCESS_MIN_DOCUMENTS", 2)
    built: list[str] = []
    build = document_budget._doc_job

    def recorded(chunks, d, *args):
        built.append(d.company)
        return build(chunks, d, *args)

    monkeypatch.setattr(document_budget, "_doc_job", recorded)
    two = document_plans(chunks, prep.docs, defender, rival, prep.fills, min_z=0.0, processes=2)
    lineup_of = dict(zip([d.company for d in prep.docs.values()], groups, strict=True))
    seen = [lineup_of[c] for c in built]
    assert len(seen) == len(prep.docs) and seen == sorted(seen, key=seen.index)  # each line-up's run unbroken
    assert any(p.order for p in one.values())
    for doc_id in one:
        assert one[doc_id].order == two[doc_id].order
        assert one[doc_id].fractions.tobytes() == two[doc_id].fractions.tobytes()
