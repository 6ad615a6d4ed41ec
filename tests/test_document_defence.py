"""The document-level defence (SPEC §12, issue 22) on constructed corpora with known answers.

Each company of the constructed corpus has its own vocabulary (nouns, adverbs, -ing words,
plurals, a two-word programme name) mixed with a shared vocabulary, Loughran–McDonald tone words
and placeholders, so which types are distinctive of which company is known by construction.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from neswap_core.corpus import Chunk
from neswap_core.generate.document import (
    DefenceParams,
    apply_defence,
    pair_documents,
    round_figure_edits,
)
from neswap_core.generate.document_budget import (
    DocumentDefender,
    defend,
    document_plans,
    prepare_defence,
)
from neswap_core.generate.document_terms import (
    TermModel,
    document_terms,
    occurrences,
    ranked_candidates,
    word_shape,
)
from neswap_core.measure.tone import is_tone_word

SHARED = ["revenue", "customers", "pipeline", "orders", "inventory", "pricing", "capacity",
          "shipments", "backlog", "markets", "channel", "operations", "programs"]
TONE = ["strong", "decline", "loss", "improved", "weak", "challenging", "benefit"]  # LM words
OWN = {  # per company: distinctive nouns, an adverb, an -ing word, plurals, a programme name
    "Acme": ["Zorblax", "quintarally", "vexcoring", "brimstones", "Tellurium Cloud", "gravitons"],
    "Bolt": ["Kandor", "speedily", "hyperlooping", "sprockets", "Nimbus Grid", "flywheels"],
    "Cres": ["Ostrava", "lunarly", "crescenting", "tidepools", "Harbor Deck", "moorings"],
    "Dyna": ["Pyrex", "dynamically", "torqueing", "turbines", "Vector Park", "gaskets"],
}


def sentence(rng, company: str) -> str:
    words = [str(w) for w in rng.choice(SHARED, 5)] + [str(rng.choice(TONE))] + [
        str(w) for w in rng.choice(OWN[company], 2, replace=False)]
    rng.shuffle(words)
    return "Our " + " ".join(words) + " rose 12.3% for [Company Name]."


def corpus(n_docs: dict[str, int], chunks_per_doc: int = 6, seed: int = 0, prefix: str = "q") -> list[Chunk]:
    rng = np.random.default_rng(seed)
    out = []
    for company, n in n_docs.items():
        for k in range(n):
            doc = f"{company}_{prefix}{k}"
            for i in range(chunks_per_doc):
                text = " ".join(sentence(rng, company) for _ in range(3))
                out.append(Chunk(f"{doc}#{i:04d}", doc, i, text, company))
    return out


def doc_text(chunks, doc_id) -> str:
    return " ".join(c.text for c in chunks if c.doc_id == doc_id)


@pytest.fixture(scope="module")
def chunks():
    return corpus({"Acme": 2, "Bolt": 2, "Cres": 2, "Dyna": 1})


@pytest.fixture(scope="module")
def model(chunks):
    return TermModel().fit(chunks)


def test_term_model_finds_each_company_s_own_words(model):
    for company, own in OWN.items():
        z = dict(zip(model.vocabulary_, model.score(company, list(model.vocabulary_)), strict=True))
        own_z = [z[w.lower()] for w in own]
        assert min(own_z) > 1.5  # every own word (and programme name) is distinctive
        assert min(own_z) > max(z[w] for w in SHARED)  # and more than any shared word
        assert max(z[w.lower()] for other in OWN if other != company for w in OWN[other]) < 0


def test_tone_words_and_placeholders_are_never_candidates():
    text = "Strong growth at [Company Name] and [Executive 1] offset the Zorblax decline."
    occ = occurrences(text)
    keys = {o.key for o in occ}
    assert "zorblax" in keys
    # what a treatment would change is never a tone word or inside a placeholder
    changed = {text[o.start:o.end].lower() for o in occ}
    assert not any(is_tone_word(w) for k in changed for w in k.split())
    assert not {"company", "name", "executive"} & changed
    assert not any(is_tone_word(w) for o in occ if not o.frame for w in o.key.split())


def test_a_word_framed_by_a_stop_or_tone_word_is_a_type_of_its_own():
    """Word bigram attackers read "coming into", "strong bookings": the phrase is a type, and
    treating it changes the other word only (the function word and the tone word stay)."""
    text = "Revenue coming into the year was strong, and strong bookings grew."
    framed = {o.key: (text[o.start:o.end], o.frame, o.n) for o in occurrences(text) if o.frame}
    assert framed["coming into"] == ("coming", "_ into", 1)
    assert framed["strong bookings"] == ("bookings", "strong _", 1)
    assert "year was" not in framed  # "year" is never treated (an earnings call's own word)
    assert not [o for o in occurrences(text, frames=False) if o.frame]


def test_a_framed_word_takes_the_partner_s_word_in_the_same_frame():
    acme = [Chunk(f"a#{i}", "a", i, "Sales coming into the fall. Orders heading into winter.", "Acme")
            for i in range(3)]
    bolt = [Chunk(f"b#{i}", "b", i, "Deliveries surging into the spring. Crates moving into May.", "Bolt")
            for i in range(3)]
    chunks = acme + bolt
    model = TermModel().fit(chunks)
    docs = document_terms(chunks, model)
    assert docs["a"].frame["coming into"] == "_ into"
    result = apply_defence(chunks, model, DefenceParams(level=0.5, min_z=0.0), np.random.default_rng(0),
                           selected={"a": ["coming into"], "b": []}, partner={"a": "b", "b": "a"})
    change = next(c for c in result.changes if c.term == "coming into")
    assert change.before == "coming" and change.after in {"surging", "moving"}
    assert "coming into" not in " ".join(c.text for c in result.chunks[:3])
    assert all(c.text.count(" into ") == 2 for c in result.chunks[:3])  # the frame word stays


@pytest.mark.parametrize("fill", ["pair", "mask", "generic"])
def test_consistent_treatment_leaves_no_treated_term_anywhere_in_the_document(chunks, model, fill):
    params = DefenceParams(level=0.3, min_z=1.0, fill=fill)
    result = apply_defence(chunks, model, params, np.random.default_rng(0))
    docs = document_terms(chunks, model)
    assert sum(len(v) for v in result.selected.values()) > 20
    for doc_id, chosen in result.selected.items():
        left = Counter(o.key for c in result.chunks if c.doc_id == doc_id for o in occurrences(c.text))
        assert chosen, doc_id
        assert not [k for k in chosen if left[k]], doc_id
        # the company's own words, the most distinctive types, were all chosen at this budget
        own = {w.lower() for w in OWN[docs[doc_id].company] if " " not in w}
        assert own & set(docs[doc_id].occ) <= set(chosen)


def test_a_document_s_occurrences_share_one_string_per_type(chunks, model):
    # issue 21: one Occurrence per word, phrase and framed word of a document; slotted and
    # sharing their key and surface strings they were 62 -> 48 MB of the dev corpus's release
    docs = document_terms(chunks, model)
    d = next(iter(docs.values()))
    key, occ = max(d.occ.items(), key=lambda kv: len(kv[1]))
    assert len(occ) >= 3
    assert all(o.key is occ[0][1].key for _, o in occ)
    surfaces = {}
    for _, o in occ:
        assert surfaces.setdefault(o.surface, o.surface) is o.surface
    assert not hasattr(occ[0][1], "__dict__")
    # the same types, occurrences and offsets as occurrences() finds in each chunk
    found = Counter(o.key for p in d.positions for o in occurrences(chunks[p].text))
    assert {k: len(v) for k, v in d.occ.items()} == dict(found)


def test_tone_words_and_placeholders_are_kept_exactly(chunks, model):
    result = apply_defence(chunks, model, DefenceParams(level=0.5, min_z=0.0, round_figures=True),
                           np.random.default_rng(0))
    tone = re.compile(r"\b(" + "|".join(TONE) + r")\b")
    for before, after in zip(chunks, result.chunks, strict=True):
        assert tone.findall(before.text) == tone.findall(after.text)
        assert before.text.count("[Company Name]") == after.text.count("[Company Name]")
    assert not any(is_tone_word(w) for c in result.changes for w in re.findall(r"[A-Za-z]+", c.before))
    assert not any(is_tone_word(w) for c in result.changes for w in re.findall(r"[A-Za-z]+", c.after))


def test_a_paired_replacement_keeps_the_number_of_words_and_the_word_shape(chunks, model):
    result = apply_defence(chunks, model, DefenceParams(level=0.3, min_z=1.0, fill="pair"),
                           np.random.default_rng(0))
    paired = [c for c in result.changes if c.kind == "pair"]
    assert len(paired) > 50
    for c in paired:
        assert len(c.before.split()) == len(c.after.split())
        assert word_shape(c.before) == word_shape(c.after), c
    same_case = np.mean([c.before[0].isupper() == c.after[0].isupper() for c in paired])
    assert same_case > 0.8  # capitalisation is matched where the partner has such a type
    shapes = Counter(word_shape(c.before) for c in paired)
    assert {"ly", "ing", "s"} <= set(shapes)  # the shapes of the constructed vocabulary all occur


def test_pairs_come_from_the_partner_document_of_another_company(chunks, model):
    result = apply_defence(chunks, model, DefenceParams(level=0.3, min_z=1.0), np.random.default_rng(0))
    docs = document_terms(chunks, model)
    for c in result.changes:
        partner = result.partner[c.doc_id]
        assert docs[partner].company != docs[c.doc_id].company
        if c.kind == "pair":
            assert c.after.lower() in docs[partner].occ
            assert c.partner_doc == partner


@pytest.mark.parametrize("seed", range(12))
def test_pairing_never_pairs_two_documents_of_one_company(seed):
    rng = np.random.default_rng(seed)
    sizes = {c: int(rng.integers(1, 4)) for c in ("Acme", "Bolt", "Cres", "Dyna")}
    chunks = corpus(sizes, chunks_per_doc=2, seed=seed)
    partner = pair_documents(chunks, np.random.default_rng(seed), top_k=3)
    company = {c.doc_id: c.protected for c in chunks}
    assert partner, sizes
    assert all(company[a] != company[b] for a, b in partner.items())
    unpaired = set(company) - set(partner)
    assert len(unpaired) <= 1  # only when no 3-cycle with two other companies exists
    for a, b in partner.items():  # mutual pairs, or one 3-cycle a -> i -> b -> a
        assert partner.get(b) == a or partner.get(partner.get(b)) != b


def _pairs_from_the_whole_gram_matrix(chunks, rng, top_k=3):
    """The pairing as it was made from the whole documents × documents similarity matrix."""
    from collections import defaultdict

    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, comp = defaultdict(list), {}
    for c in chunks:
        texts[c.doc_id].append(c.text)
        comp[c.doc_id] = c.protected
    ids = sorted(texts)
    x = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1).fit_transform(
        [" ".join(texts[i]) for i in ids])
    sim = (x @ x.T).toarray()
    partner, free = {}, set(range(len(ids)))
    for i in rng.permutation(len(ids)):
        if i not in free:
            continue
        options = [j for j in np.argsort(-sim[i], kind="stable")
                   if j in free and j != i and comp[ids[j]] != comp[ids[i]]][:top_k]  # fmt: skip
        if not options:
            continue
        j = options[int(rng.integers(len(options)))]
        free -= {i, j}
        partner[ids[i]], partner[ids[j]] = ids[j], ids[i]
    for i in sorted(free):
        for j in np.argsort(-sim[i], kind="stable"):
            a = ids[j]
            if a in partner and comp[a] != comp[ids[i]] and comp[partner[a]] != comp[ids[i]] \
                    and partner[partner[a]] == a:
                b = partner[a]
                partner[a], partner[ids[i]], partner[b] = ids[i], b, a
                break
    return partner


@pytest.mark.parametrize("seed", range(6))
def test_pairing_by_rows_is_the_pairing_of_the_whole_similarity_matrix(seed):
    """Issue 21: the similarities are made one document's row at a time (never documents²
    floats); the partners, ties and odd ones out included, are those of the whole matrix."""
    rng = np.random.default_rng(seed)
    sizes = {c: int(rng.integers(1, 6)) for c in ("Acme", "Bolt", "Cres", "Dyna")}
    chunks = corpus(sizes, chunks_per_doc=2, seed=seed)
    chunks += [Chunk(f"Twin_{k}#0", f"Twin_{k}", 0, chunks[0].text, "Twin") for k in range(2)]  # ties
    got = pair_documents(chunks, np.random.default_rng(seed), top_k=3)
    assert got == _pairs_from_the_whole_gram_matrix(chunks, np.random.default_rng(seed), top_k=3)
    assert got


def test_pairing_holds_no_documents_by_documents_matrix():
    """2,000 documents: the whole similarity matrix was 32 MB (and 0.3 GB at 6,350 documents,
    32 GB at 63,000); by rows the pairing's peak stays a few MB (issue 21)."""
    import tracemalloc

    words = [f"w{k}" for k in range(400)]
    rng = np.random.default_rng(0)
    chunks = [Chunk(f"d{k}#0", f"d{k}", 0, " ".join(rng.choice(words, 12)), f"c{k % 50}") for k in range(2000)]
    tracemalloc.start()
    try:
        partner = pair_documents(chunks, np.random.default_rng(0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(partner) == 2000
    assert peak < 16e6, peak


def test_pairing_a_single_company_corpus_pairs_nothing():
    assert pair_documents(corpus({"Acme": 3}, 2), np.random.default_rng(0)) == {}


def test_the_defence_is_deterministic_for_a_random_state(chunks, model):
    params = DefenceParams(level=0.2, min_z=1.0)
    a = apply_defence(chunks, model, params, np.random.default_rng(7))
    b = apply_defence(chunks, model, params, np.random.default_rng(7))
    assert [c.text for c in a.chunks] == [c.text for c in b.chunks]
    assert a.changes == b.changes


def test_rejecting_a_type_keeps_every_occurrence_of_it(chunks, model):
    params = DefenceParams(level=0.3, min_z=1.0)
    full = apply_defence(chunks, model, params, np.random.default_rng(0))
    key = full.changes[0].key
    doc_id, term = key.split("|")
    n = sum(1 for c in full.changes if c.key == key)
    assert n >= 2
    again = apply_defence(chunks, model, params, np.random.default_rng(0), rejected=frozenset({key}))
    assert not [c for c in again.changes if c.key == key]
    left = Counter(o.key for c in again.chunks if c.doc_id == doc_id for o in occurrences(c.text))
    assert left[term] == sum(1 for c in chunks if c.doc_id == doc_id for o in occurrences(c.text)
                             if o.key == term)


def test_rounding_of_figures():
    edits = round_figure_edits("Revenue was $61.1 billion, up 22.25%, and 3.0 stayed.")
    assert [(e[4], e[2]) for e in edits] == [("$61.1 billion", "about $61 billion"), ("22.25%", "about 22%")]


def test_the_cross_fitted_defender_ranks_the_company_s_own_words_first(tmp_path):
    chunks = corpus({"Acme": 2, "Bolt": 2, "Cres": 2, "Dyna": 2}, chunks_per_doc=4, seed=1)
    reading = corpus({"Acme": 4, "Bolt": 4, "Cres": 4, "Dyna": 4}, chunks_per_doc=4, seed=2, prefix="r")
    texts, labels, docs = ([c.text for c in reading], [c.protected for c in reading],
                           [c.doc_id for c in reading])
    model = TermModel().fit(chunks, (texts, labels, docs))
    defender = DocumentDefender().fit(texts, labels, docs)
    assert [(n, h) for n, h, _ in defender.members_] == [
        ("word", 0), ("char", 0), ("retrieval", 0), ("word", 1), ("char", 1), ("retrieval", 1)]
    params = DefenceParams(level=0.1, min_z=0.0)
    prep = prepare_defence(chunks, model, params, np.random.default_rng(0), defender, cache_dir=tmp_path)
    for doc_id, plan in prep.plans.items():
        own = {w for t in OWN[doc_id.split("_")[0]] for w in t.lower().split()}
        top = plan.order[:3]
        assert all(set(t.split()) & own for t in top), (doc_id, top)  # each holds an own word
        assert (plan.fractions[:3] > 0).all()
    cached = list((tmp_path / "document_defence").glob("plans_*.pkl"))
    assert len(cached) == 1
    # the second preparation reads the margins from disk instead of recomputing them
    rival = {i: prep.docs[prep.partner[i]].company for i in prep.docs}
    again = document_plans(chunks, prep.docs, defender, rival, prep.fills, cache_dir=tmp_path, min_z=0.0)
    assert {i: p.order for i, p in again.items()} == {i: p.order for i, p in prep.plans.items()}
    result = defend(chunks, model, params, prep)
    words = sum(len(re.findall(r"\w+", c.text)) for c in chunks)
    changed = sum(len(c.before.split()) for c in result.changes)
    assert 0.05 * words < changed <= 0.1 * words + 1


def test_a_word_right_after_a_placeholder_is_masked_never_paired():
    """"[Company Name] Kandor" would read as the residue of another company's alias."""
    chunks = corpus({"Acme": 2, "Bolt": 2}, chunks_per_doc=4, seed=4)
    chunks = [c if i % 2 else type(c)(c.chunk_id, c.doc_id, c.index, c.text.replace(
        "for [Company Name].", "for [Company Name] Zorblax, [Company Name] Kandor."), c.protected)
        for i, c in enumerate(chunks)]
    model = TermModel().fit(chunks)
    result = apply_defence(chunks, model, DefenceParams(level=0.4, min_z=0.0), np.random.default_rng(0))
    after_placeholder = [c for c in result.changes if c.before in ("Zorblax", "Kandor")
                         and chunks[[x.chunk_id for x in chunks].index(c.chunk_id)].text[:c.start].endswith("] ")]
    assert after_placeholder
    assert all(c.kind == "mask" and c.after == "[…]" for c in after_placeholder)
    assert not any(re.search(r"\[Company Name\] (?!\[)\w", c.text) and "[Company Name] Zorblax" not in c.text
                   and "[Company Name] Kandor" not in c.text for c in result.chunks)


def test_a_mask_takes_the_legal_suffix_that_follows_it():
    """The 100k release's leak scan blocked "[…] Group" where "ANZ Banking" of "ANZ Banking Group"
    was masked: the residue says what kind of firm it was. The mask takes the suffix."""
    from neswap_core.publish.leak_context import shape_hits

    chunks = [type(c)(c.chunk_id, c.doc_id, c.index, c.text.replace("Tellurium Cloud", "Tellurium Cloud Holdings, Inc"),
                      c.protected) for c in corpus({"Acme": 2, "Bolt": 2}, chunks_per_doc=4, seed=1)]  # fmt: skip
    assert any("Cloud Holdings, Inc" in c.text for c in chunks)
    model = TermModel().fit(chunks)
    result = apply_defence(chunks, model, DefenceParams(level=0.5, min_z=0.0, fill="mask"), np.random.default_rng(0))
    masked = [c for c in result.changes if c.term == "cloud"]
    assert masked and all(c.before == "Cloud Holdings, Inc" and c.after == "[…]" for c in masked)
    assert not [h for c in result.chunks for h in shape_hits(c.text)]
    # a rejected type stays at every occurrence; the suffix then goes with the next mask
    kept = apply_defence(chunks, model, DefenceParams(level=0.5, min_z=0.0, fill="mask"), np.random.default_rng(0),
                         rejected=frozenset(c.key for c in masked))  # fmt: skip
    assert sum(c.text.count("Cloud […]") for c in kept.chunks) == len(masked)
    assert not [h for c in kept.chunks for h in shape_hits(c.text)]


def test_a_treated_word_is_treated_inside_hyphenated_compounds(chunks, model):
    """"Zorblax-enabled" still names Acme when "Zorblax" is treated everywhere else."""
    chunks = [type(c)(c.chunk_id, c.doc_id, c.index, c.text + " Zorblax-enabled devices grew.", c.protected)
              if c.protected == "Acme" else c for c in chunks]
    model = TermModel().fit(chunks)
    result = apply_defence(chunks, model, DefenceParams(level=0.3, min_z=1.0), np.random.default_rng(0))
    assert "zorblax" in result.selected["Acme_q0"]
    assert not any("Zorblax" in c.text for c in result.chunks if c.doc_id == "Acme_q0")


def test_a_company_s_product_names_are_treated_first():
    """Issue 23 item 8: a distinctive product name (NER Product) is treated before any other type,
    even when the budget allows only a few types."""
    from neswap_core.corpus import EntitySpan

    base = corpus({"Acme": 2, "Bolt": 2, "Cres": 2}, chunks_per_doc=4, seed=5)
    chunks = []
    for c in base:
        spans = tuple(EntitySpan(m.start(), m.end(), "PRODUCT", "Product", m.group())
                      for m in re.finditer(r"Gravitons|gravitons", c.text))
        chunks.append(type(c)(c.chunk_id, c.doc_id, c.index, c.text, c.protected, spans))
    model = TermModel().fit(chunks)
    params = DefenceParams(level=0.03, min_z=0.0)
    prep = prepare_defence(chunks, model, params, np.random.default_rng(0))
    docs = prep.docs
    for doc_id in ("Acme_q0", "Acme_q1"):
        assert "gravitons" in docs[doc_id].occ and docs[doc_id].kind["gravitons"][2] == "Product"
    result = defend(chunks, model, params, prep)
    for doc_id in ("Acme_q0", "Acme_q1"):
        assert result.selected[doc_id][0] == "gravitons"
        assert not any("ravitons" in c.text for c in result.chunks if c.doc_id == doc_id)


def test_a_capitalised_name_only_one_company_uses_is_treated_first_whatever_its_tag():
    """spaCy tags "Wirecutter" (a New York Times product) as a Person, and the sample's default
    release left it in the NYT call: a capitalised type no other company uses is treated first,
    whatever the tagger says; a capitalised type two companies use is not forced first."""
    from neswap_core.corpus import EntitySpan
    from neswap_core.generate.document_budget import named_types

    base = corpus({"Acme": 2, "Bolt": 2, "Cres": 2}, chunks_per_doc=4, seed=5)
    chunks = []
    for c in base:
        text = c.text.replace("Our ", "Phoenix ", 1) if c.protected in ("Acme", "Bolt") else c.text
        spans = tuple(EntitySpan(m.start(), m.end(), "PERSON", "Person", m.group())
                      for m in re.finditer(r"Zorblax", text))
        chunks.append(type(c)(c.chunk_id, c.doc_id, c.index, text, c.protected, spans))
    model = TermModel().fit(chunks)
    assert list(model.exclusive(["zorblax", "phoenix", "revenue", "unknown"])) == [True, False,
                                                                                  False, False]
    params = DefenceParams(level=0.1, min_z=0.0)
    prep = prepare_defence(chunks, model, params, np.random.default_rng(0))
    for doc_id in ("Acme_q0", "Acme_q1"):
        d = prep.docs[doc_id]
        assert all(w[:1].isupper() for k in named_types(d) for w in d.surface[k].split(" "))
        assert d.kind["zorblax"][2] == "Person" and "zorblax" in named_types(d)
        assert "phoenix" not in named_types(d) and "revenue" not in named_types(d)
    result = defend(chunks, model, params, prep)
    for doc_id in ("Acme_q0", "Acme_q1"):
        assert "zorblax" in result.selected[doc_id]
        assert not any("Zorblax" in c.text for c in result.chunks if c.doc_id == doc_id)


def _dense_z(model, chunks, reading):
    """The z of every class × type the way the model computed it before it kept its counts
    sparse: a dense matrix per part, ``log_odds_z`` on the types the part counts."""
    from scipy import sparse

    from neswap_core.generate.document_terms import _counts, reading_halves
    from neswap_core.models.log_odds import log_odds_z

    classes, vocab = list(model.classes_), dict(model.vocabulary_)
    texts, labels, docs = reading
    parts = [_counts([c.text for c in chunks], [c.protected for c in chunks], classes, vocab)]
    half = reading_halves(docs, labels, model.random_state)
    for h in (0, 1):
        keep = [i for i, d in enumerate(docs) if half[d] == h]
        parts.append(_counts([texts[i] for i in keep], [labels[i] for i in keep], classes, vocab))
    assert len(vocab) == len(model.vocabulary_)  # the same columns
    z = []
    for rows, cols in parts:
        m = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(classes), len(vocab))).toarray()
        zz = np.zeros(m.shape)
        seen = m.sum(axis=0) > 0
        zz[:, seen] = log_odds_z(m[:, seen], model.prior_share * m.sum())
        z.append(zz)
    return np.maximum(z[0], np.minimum(z[1], z[2]))


def test_the_sparse_term_model_gives_the_dense_z_bit_for_bit():
    """Every class × type z from the sparse counts equals the dense log-odds computation's
    (second method), and a company never using a type in one half still gets that half's z."""
    chunks = corpus({"Acme": 2, "Bolt": 2, "Cres": 2, "Dyna": 2}, chunks_per_doc=4, seed=1)
    reading_chunks = corpus({"Acme": 4, "Bolt": 4, "Cres": 4, "Dyna": 1}, chunks_per_doc=4, seed=2, prefix="r")
    reading = ([c.text for c in reading_chunks], [c.protected for c in reading_chunks],
               [c.doc_id for c in reading_chunks])  # fmt: skip
    model = TermModel().fit(chunks, reading)
    dense = _dense_z(model, chunks, reading)
    keys = sorted(model.vocabulary_, key=model.vocabulary_.get)
    for k, company in enumerate(model.classes_):
        got = model.score(company, keys + ["never seen"])
        assert got[-1] == 0.0
        assert np.array_equal(got[:-1], dense[k]), company
    assert (dense < 0).any() and (dense > 0).any()
    assert np.array_equal(model.score("Nobody", keys), np.zeros(len(keys)))


def test_the_term_model_s_size_follows_its_counts_not_classes_times_types():
    """300 companies with 60 words of their own each (35,400 types with their phrases): a dense
    classes × types matrix of z would be 85 MB; the fitted model keeps only what was counted,
    1.6 MB (issue 21: at 100,000 real passages a dense one would not fit in memory)."""
    import pickle

    chunks = [Chunk(f"c{k}_d#{i}", f"c{k}_d", i, " ".join(f"Zq{k}x{j} Wv{k}y{j}" for j in range(15 * i, 15 * i + 15)),
                    f"company {k}") for k in range(300) for i in range(2)]  # fmt: skip
    model = TermModel().fit(chunks)
    assert len(model.classes_) == 300 and len(model.vocabulary_) >= 300 * 60
    assert len(pickle.dumps(model)) < 8e6
    mine = model.score("company 7", ["zq7x3", "zq8x3"])
    assert mine[0] > 0 > mine[1]


@pytest.mark.parametrize("min_z", [0.0, 0.5, 3.0])
@pytest.mark.parametrize("with_defender", [False, True])
def test_terms_kept_above_the_floor_give_the_defence_of_every_type_s_details(
        tmp_path, monkeypatch, min_z, with_defender):
    """``document_terms(..., min_z)`` keeps the details of the types a defence can treat only
    (issue 21: two thirds of a large corpus's types are below the floor); every level's
    release, fills, pairing and plans equal those built with every type's details."""
    from neswap_core.generate import document_budget

    chunks = corpus({"Acme": 2, "Bolt": 2, "Cres": 2, "Dyna": 2}, chunks_per_doc=4, seed=1)
    reading = corpus({"Acme": 4, "Bolt": 4, "Cres": 4, "Dyna": 4}, chunks_per_doc=4, seed=2, prefix="r")
    units = ([c.text for c in reading], [c.protected for c in reading], [c.doc_id for c in reading])
    model = TermModel().fit(chunks, units)
    defender = DocumentDefender(members=("word", "retrieval")).fit(*units) if with_defender else None
    params = DefenceParams(level=0.0, min_z=min_z)
    kept = prepare_defence(chunks, model, params, np.random.default_rng(0), defender, n_candidates=6)
    monkeypatch.setattr(document_budget, "document_terms", lambda c, m, min_z=None: document_terms(c, m))
    every = prepare_defence(chunks, model, params, np.random.default_rng(0), defender, n_candidates=6)
    assert kept.partner == every.partner and kept.fills == every.fills and kept.more == every.more
    if with_defender:
        assert {i: p.order for i, p in kept.plans.items()} == {i: p.order for i, p in every.plans.items()}
    for i, d in kept.docs.items():
        assert set(d.types) == set(every.docs[i].occ) and d.own_words() == {
            w for k in every.docs[i].occ if k not in every.docs[i].frame for w in k.split(" ")}
    held = sum(len(d.occ) for d in kept.docs.values())
    assert held < sum(len(d.occ) for d in every.docs.values())
    for level in (0.05, 0.14, 0.3):
        a = defend(chunks, model, replace_level(params, level), kept)
        b = defend(chunks, model, replace_level(params, level), every)
        assert [c.text for c in a.chunks] == [c.text for c in b.chunks]
        assert a.selected == b.selected and [c.to_dict() for c in a.changes] == [c.to_dict() for c in b.changes]


def replace_level(params: DefenceParams, level: float) -> DefenceParams:
    from dataclasses import replace

    return replace(params, level=level)


def test_ranking_below_the_terms_floor_is_refused_not_silently_short():
    chunks = corpus({"Acme": 2, "Bolt": 2}, chunks_per_doc=3, seed=3)
    d = next(iter(document_terms(chunks, TermModel().fit(chunks), min_z=0.5).values()))
    assert ranked_candidates(d, 0.5) and ranked_candidates(d, 1.0)
    with pytest.raises(ValueError, match="min_z >= 0.5"):
        ranked_candidates(d, 0.0)


def _terms_by_dicts(chunks, model):
    """Each document's terms the way they were kept before they were kept in columns (issue 21):
    a dict per type of its occurrences, z, kind, surface, frame and exclusivity."""
    from neswap_core.generate.document_terms import _category_at

    out = {}
    for p, c in enumerate(chunks):
        d = out.setdefault(c.doc_id, {"occ": {}, "company": c.protected})
        for o in occurrences(c.text):
            d["occ"].setdefault(o.key, []).append((p, o))
    for d in out.values():
        keys = list(d["occ"])
        d["score"] = dict(zip(keys, map(float, model.score(d["company"], keys)), strict=True))
        d["only"] = {k for k, one in zip(keys, model.exclusive(keys), strict=True) if one}
        d["kind"], d["surface"], d["frame"] = {}, {}, {}
        for k, occ in d["occ"].items():
            surface = Counter(o.surface for _, o in occ).most_common(1)[0][0]
            cap = sum(o.surface[0].isupper() for _, o in occ) > len(occ) / 2
            cat = Counter(_category_at(chunks[p], o.start, o.end) for p, o in occ).most_common(1)[0][0]
            d["surface"][k], d["kind"][k] = surface, (occ[0][1].n, cap, cat, word_shape(surface))
            if occ[0][1].frame:
                d["frame"][k] = occ[0][1].frame
    return out


def test_terms_in_columns_read_back_as_the_dicts_of_every_type():
    """The columns give back each type's occurrences (offsets, surface), z, kind, surface, frame,
    exclusivity and cost exactly as a dict per type held them (second method), entity
    categories and framed words included."""
    from neswap_core.corpus import EntitySpan

    base = corpus({"Acme": 2, "Bolt": 2, "Cres": 2}, chunks_per_doc=4, seed=6)
    chunks = [type(c)(c.chunk_id, c.doc_id, c.index, c.text, c.protected,
                      tuple(EntitySpan(m.start(), m.end(), "PRODUCT", "Product", m.group())
                            for m in re.finditer(r"Tellurium Cloud|Nimbus Grid", c.text)))
              for c in base]  # fmt: skip
    model = TermModel().fit(chunks)
    docs, ref = document_terms(chunks, model), _terms_by_dicts(chunks, model)
    assert list(docs) == list(ref)
    framed = categories = 0
    for i, d in docs.items():
        r = ref[i]
        assert dict(d.occ) == r["occ"] and dict(d.score) == r["score"]
        assert dict(d.kind) == r["kind"] and dict(d.surface) == r["surface"]
        assert dict(d.frame) == r["frame"] and set(d.only) == r["only"]
        assert {k: d.cost(k) for k in d.keys} == {k: sum(o.n for _, o in v) for k, v in r["occ"].items()}
        assert list(d.types) == sorted(r["occ"]) and "never" not in d.occ and not d.has_type("never")
        framed += len(r["frame"])
        categories += sum(1 for k in r["kind"].values() if k[2])
    assert framed > 50 and categories > 5


def test_each_level_allocates_from_named_first_plans_made_once_per_preparation(monkeypatch):
    """The plans with each document's names first are made once for every level (not once per
    level), give the levels the same selection as made afresh, and are not pickled with the
    preparation (a memo entry holds its plans once)."""
    import pickle

    from neswap_core.generate import document_budget

    chunks = corpus({"Acme": 2, "Bolt": 2, "Cres": 2, "Dyna": 2}, chunks_per_doc=4, seed=1)
    reading = corpus({"Acme": 4, "Bolt": 4, "Cres": 4, "Dyna": 4}, chunks_per_doc=4, seed=2, prefix="r")
    units = ([c.text for c in reading], [c.protected for c in reading], [c.doc_id for c in reading])
    model = TermModel().fit(chunks, units)
    prep = prepare_defence(chunks, model, DefenceParams(level=0.1, min_z=0.0), np.random.default_rng(0),
                           DocumentDefender().fit(*units))  # fmt: skip
    calls = Counter()
    real = document_budget.named_types
    monkeypatch.setattr(document_budget, "named_types", lambda d: calls.update([d.doc_id]) or real(d))
    levels = [defend(chunks, None, DefenceParams(level=v, min_z=0.0), prep) for v in (0.05, 0.1, 0.2)]
    assert set(calls.values()) == {1} and len(calls) == len(prep.docs)
    fresh = pickle.loads(pickle.dumps(prep))
    assert fresh._named is None and prep._named is not None
    for v, made in zip((0.05, 0.1, 0.2), levels, strict=True):
        again = defend(chunks, None, DefenceParams(level=v, min_z=0.0), fresh)
        assert again.selected == made.selected and again.chunks == made.chunks
