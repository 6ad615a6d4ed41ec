"""Ranked word redaction (SPEC §9, paper 001): exact shares, placeholders, spans, ranking."""

from __future__ import annotations

import re

import numpy as np
import pytest

from neswap_core.config import MASK_PLACEHOLDER, PLACEHOLDER_PATTERN
from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.errors import ConfigError, CorpusError, FitError
from neswap_core.generate.redaction import (
    SmarterRedactor,
    WordScore,
    apply_redactions,
    masked_count,
    masked_share,
    redact_chunks,
    word_spans,
)
from neswap_core.generate.rewrite import is_placeholder


class TableScorer:
    """Priority from a fixed word table (unknown words 0): a scorer whose ranking we know."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    def word_scores(self, text: str, label: str) -> list[WordScore]:
        return [WordScore(s, e, w, self.table.get(w, 0.0)) for s, e, w in word_spans(text)]


def _chunk(text: str, entities: tuple[EntitySpan, ...] = (), cid: str = "d#0000") -> Chunk:
    return Chunk(
        chunk_id=cid, doc_id=cid.split("#")[0], index=0, text=text, protected="A", entities=entities
    )


def _span(text: str, word: str, category: str = "Organization") -> EntitySpan:
    start = text.index(word)
    return EntitySpan(start, start + len(word), "ORG", category, word)


@pytest.mark.parametrize(
    ("n", "level", "expected"),
    [
        (10, 0.1, 1),
        (10, 0.15, 2),
        (10, 0.25, 3),
        (10, 0.24, 2),
        (3, 0.1, 1),
        (7, 0.5, 4),
        (0, 0.5, 0),
        (5, 0.0, 0),
        (5, 1.0, 5),
        (1, 0.01, 1),
    ],
)
def test_masked_count_is_round_half_up_at_least_one(n: int, level: float, expected: int) -> None:
    assert masked_count(n, level) == expected


@pytest.mark.parametrize("level", [-0.1, 1.5, float("nan"), "ten"])
def test_level_outside_unit_interval_is_a_clear_error(level) -> None:
    with pytest.raises(ConfigError, match="redaction level"):
        redact_chunks([_chunk("a b c")], TableScorer({}), level)


def test_words_skip_placeholders_and_punctuation() -> None:
    text = "[Company Name] grew 3.5% year-over-year, [Executive 2] said; don't [MASK] it, [MASK] " + MASK_PLACEHOLDER + "."
    assert [w for _, _, w in word_spans(text)] == [
        "grew",
        "3.5",
        "year-over-year",
        "said",
        "don't",
        "it",
    ]
    assert is_placeholder(MASK_PLACEHOLDER)
    assert re.fullmatch(PLACEHOLDER_PATTERN, MASK_PLACEHOLDER)
    assert re.fullmatch(PLACEHOLDER_PATTERN, "[MASK]")  # texts redacted by earlier versions


@pytest.mark.parametrize("level", [0.1, 0.2, 0.3, 0.5, 1.0])
def test_each_chunk_loses_exactly_the_stated_share(level: float) -> None:
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(30)]
    scorer = TableScorer({w: float(rng.normal()) for w in vocab})
    chunks = [
        _chunk(" ".join(rng.choice(vocab, size=int(rng.integers(1, 40)))) + ".", cid=f"d#{i:04d}")
        for i in range(25)
    ]
    new, records = redact_chunks(chunks, scorer, level)
    for before, after in zip(chunks, new, strict=True):
        n = len(word_spans(before.text))
        m = masked_count(n, level)
        assert after.text.count(MASK_PLACEHOLDER) == m
        assert len(word_spans(after.text)) == n - m
        assert sum(r.chunk_id == before.chunk_id for r in records) == m
    # the highest-priority words went: every kept word scores <= every masked one (per chunk)
    for before, after in zip(chunks, new, strict=True):
        masked = [scorer.table[r.word] for r in records if r.chunk_id == before.chunk_id]
        kept = [scorer.table[w] for _, _, w in word_spans(after.text)]
        if masked and kept:
            assert min(masked) >= max(kept)


def test_placeholders_are_never_masked_even_at_full_level() -> None:
    text = "[Company Name] and [Executive 1] met [Person] in [Location] about [URL]."
    chunk = _chunk(text)
    placeholders = re.findall(PLACEHOLDER_PATTERN, text)
    new, records = redact_chunks([chunk], TableScorer({"and": 5, "met": 4}), 1.0)
    assert [r.word for r in records] == ["and", "met", "in", "about"]
    assert new[0].text == (
        "[Company Name] [MASK] [Executive 1] [MASK] [Person] [MASK] [Location] [MASK] [URL].".replace(
            "[MASK]", MASK_PLACEHOLDER
        )
    )
    assert [p for p in re.findall(PLACEHOLDER_PATTERN, new[0].text) if p != MASK_PLACEHOLDER] == (
        placeholders
    )
    # redacting the redacted text again changes nothing: a mask is never a word
    again, more = redact_chunks(new, TableScorer({}), 1.0)
    assert more == [] and again[0] is new[0]


def test_entity_spans_stay_consistent_with_the_text() -> None:
    text = "Acme Cloud sold widgets in Ohio to Globex while Initech watched from Texas today."
    spans = tuple(_span(text, w) for w in ("Acme Cloud", "Ohio", "Globex", "Texas"))
    scorer = TableScorer({"Cloud": 9, "widgets": 8, "Globex": 7, "while": 6})
    new, records = redact_chunks([_chunk(text, spans)], scorer, 0.3)
    assert [r.word for r in records] == ["Cloud", "widgets", "Globex", "while"]
    after = new[0]
    assert after.text == (
        "Acme [MASK] sold [MASK] in Ohio to [MASK] [MASK] Initech watched from Texas today.".replace(
            "[MASK]", MASK_PLACEHOLDER
        )
    )
    assert [s.text for s in after.entities] == ["Ohio", "Texas"]  # overlapping spans dropped
    for span in after.entities:
        assert after.text[span.start : span.end] == span.text


def test_repeated_words_are_masked_together_unless_the_cut_splits_them() -> None:
    chunk = _chunk("cloud revenue cloud margin cloud growth")
    new, records = redact_chunks([chunk], TableScorer({"cloud": 3, "margin": 1}), 0.5)
    assert [r.word for r in records] == ["cloud", "cloud", "cloud"]
    new, records = redact_chunks([chunk], TableScorer({"cloud": 3, "margin": 1}), 0.3)
    assert new[0].text == "M revenue M margin cloud growth".replace("M", MASK_PLACEHOLDER)  # 2 of 6, earliest first


def test_review_applies_a_subset_and_rejects_stale_records() -> None:
    text = "alpha beta gamma delta"
    chunk = _chunk(text, (_span(text, "delta", "Product"),))
    _, records = redact_chunks([chunk], TableScorer({"beta": 2, "delta": 1}), 0.5)
    kept = apply_redactions(chunk, [records[0]])  # the analyst rejected the second mask
    assert kept.text == f"alpha {MASK_PLACEHOLDER} gamma delta"
    assert kept.entities[0].text == kept.text[kept.entities[0].start : kept.entities[0].end]
    assert apply_redactions(chunk, []) is chunk
    with pytest.raises(CorpusError, match="does not match"):
        apply_redactions(kept, records)


def _two_company_corpus() -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(1)
    common = "the quarter revenue growth we our customers strong year results team".split()
    own = {"A": ["semiconductor", "wafer", "foundry"], "B": ["streaming", "subscribers", "churn"]}
    texts, labels = [], []
    for label, words in own.items():
        for _ in range(40):
            body = list(rng.choice(common, size=10)) + list(rng.choice(words, size=2))
            rng.shuffle(body)
            texts.append(" ".join(body))
            labels.append(label)
    return texts, labels


def test_smarter_redaction_masks_company_distinctive_words_first() -> None:
    texts, labels = _two_company_corpus()
    redactor = SmarterRedactor(random_state=0).fit(texts, labels)
    assert list(redactor.classes_) == ["A", "B"] and redactor.weights_.shape[0] == 2
    chunks = [
        Chunk(f"{lab}#{i:04d}", lab, i, t, lab)
        for i, (t, lab) in enumerate(zip(texts, labels, strict=True))
    ]
    own = {"A": {"semiconductor", "wafer", "foundry"}, "B": {"streaming", "subscribers", "churn"}}
    new, records = redact_chunks(chunks, redactor, 2 / 12)  # 2 of 12 words per chunk
    for chunk in chunks:
        masked = {r.word for r in records if r.chunk_id == chunk.chunk_id}
        assert masked and masked <= own[chunk.protected]
    assert masked_share(new) == pytest.approx(2 / 12)
    # the other company's words point away from this chunk's class: lowest priority
    scores = redactor.word_scores("wafer streaming quarter", "A")
    assert scores[0].score > scores[2].score > scores[1].score


def test_smarter_redactor_errors_are_clear() -> None:
    with pytest.raises(FitError, match="two protected classes"):
        SmarterRedactor().fit(["a b", "c d"], ["A", "A"])
    with pytest.raises(FitError, match="before scoring"):
        SmarterRedactor().word_scores("a b", "A")
    texts, labels = _two_company_corpus()
    redactor = SmarterRedactor().fit(texts, labels)
    with pytest.raises(FitError, match="was not among"):
        redactor.word_scores("wafer", "C")


def test_mask_placeholder_is_no_special_token_of_minilm_and_no_attacker_word() -> None:
    """``[MASK]`` was MiniLM's own mask token: a redacted chunk's embedding left its cluster
    (10 % masked: mean cosine 0.43, DU -0.03 on the dev corpus). The placeholder must be plain
    text to the embedder's word-piece tokenizer and carry no word for the TF-IDF attacker."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from tokenizers import Tokenizer

    from neswap_core.models.embedding import embedding_model_path

    tokenizer = Tokenizer.from_file(str(embedding_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    special = {t.content for t in tokenizer.get_added_tokens_decoder().values()}
    assert "[MASK]" in special  # the hazard the placeholder avoids
    pieces = tokenizer.encode(MASK_PLACEHOLDER, add_special_tokens=False).tokens
    assert pieces and not set(pieces) & special  # "[…]": "[", "…", "]"
    analyse = TfidfVectorizer().build_analyzer()  # the attacker's tokeniser (measure/attack.py)
    assert analyse(f"revenue {MASK_PLACEHOLDER} grew") == ["revenue", "grew"]


def test_a_mask_takes_the_legal_suffix_that_follows_it() -> None:
    """"[…] Group" says what kind of firm was masked and the leak scan blocks it as residue (the
    100k release failed on "ANZ Banking Group" with "ANZ Banking" masked): the mask takes it."""
    from neswap_core.publish.leak_context import shape_hits

    text = "ANZ Banking Group Limited and Acme, Inc grew; the Group view held firm today."
    scorer = TableScorer({"Banking": 5.0, "Acme": 4.0, "Limited": 3.0})
    new, records = redact_chunks([_chunk(text)], scorer, 0.2)  # 3 of 14 words
    assert [r.word for r in records] == ["Banking Group Limited", "Acme, Inc"]
    assert new[0].text == "ANZ […] and […] grew; the Group view held firm today."
    assert apply_redactions(_chunk(text), records).text == new[0].text
    assert not shape_hits(new[0].text)
