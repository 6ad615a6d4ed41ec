"""The NER cache: unchanged text is never tagged twice; corrupt shards are rebuilt, not fatal."""

import pytest

from neswap_core.config import DEFAULT_LABEL_MAP
from neswap_core.text.entities import add_gazetteer, extract_entities, load_ner
from neswap_core.text.entity_cache import EntityCache, EntityCacheWarning, pipeline_fingerprint

TEXTS = ["Apple opened a store in Paris in March 2021.", "[Company Name] sold Widgets to Walmart.", ""]


class CountingNLP:
    """Wraps a spaCy pipeline and counts the texts sent through ``pipe``."""

    def __init__(self, nlp):
        self.nlp, self.seen = nlp, 0

    def pipe(self, texts, **kw):
        texts = list(texts)
        self.seen += len(texts)
        return self.nlp.pipe(texts, **kw)


@pytest.fixture(scope="module")
def nlp():
    return load_ner()


def test_cached_spans_equal_fresh_ones_and_skip_spacy(tmp_path, nlp):
    fp = pipeline_fingerprint(nlp, DEFAULT_LABEL_MAP)
    counting = CountingNLP(nlp)
    first = EntityCache(tmp_path, fp).extract(TEXTS, counting, DEFAULT_LABEL_MAP)
    assert first == extract_entities(TEXTS, nlp, DEFAULT_LABEL_MAP)
    assert counting.seen == len(TEXTS)
    again = EntityCache(tmp_path, fp)  # a new process: reads the shards from disk
    assert again.extract(TEXTS + ["Tesla is in Austin."], counting, DEFAULT_LABEL_MAP)[:3] == first
    assert counting.seen == len(TEXTS) + 1 and again.n_cached_hits == 3 and again.n_tagged == 1


def test_corrupt_shard_is_rebuilt_with_a_warning(tmp_path, nlp):
    fp = pipeline_fingerprint(nlp, DEFAULT_LABEL_MAP)
    EntityCache(tmp_path, fp).extract(TEXTS, nlp, DEFAULT_LABEL_MAP)
    shard = next((tmp_path / "ner" / fp).glob("*.jsonl"))
    shard.write_text('{"k": "abc", "s": [[0, 1')
    cache = EntityCache(tmp_path, fp)
    with pytest.warns(EntityCacheWarning, match="unreadable"):
        spans = cache.extract(TEXTS, nlp, DEFAULT_LABEL_MAP)
    assert spans == extract_entities(TEXTS, nlp, DEFAULT_LABEL_MAP) and cache.n_tagged == len(TEXTS)


def test_fingerprint_follows_label_map_and_gazetteer():
    nlp = load_ner()
    base = pipeline_fingerprint(nlp, DEFAULT_LABEL_MAP)
    assert pipeline_fingerprint(nlp, {**DEFAULT_LABEL_MAP, "NORP": "Location"}) != base
    add_gazetteer(nlp, [("Product", "iX")])
    assert pipeline_fingerprint(nlp, DEFAULT_LABEL_MAP) != base


def test_a_streaming_run_reads_each_shard_once(tmp_path, nlp, monkeypatch):
    """One EntityCache per batch (as prepare makes them) used to re-read every shard: quadratic
    in the corpus. Now a process reads a shard only once, never its own, and does read a shard
    another process wrote meanwhile."""
    import json

    from neswap_core.text import entity_cache

    reads = []
    original = EntityCache._read_shard
    monkeypatch.setattr(EntityCache, "_read_shard",
                        lambda self, shard: (reads.append(shard.name), original(self, shard)))
    fp = pipeline_fingerprint(nlp, DEFAULT_LABEL_MAP)
    for i in range(5):  # five batches, five shards written by this process
        EntityCache(tmp_path, fp).extract([f"Batch {i}: Apple opened a store in Paris."], nlp,
                                          DEFAULT_LABEL_MAP)
    assert reads == [] and len(list((tmp_path / "ner" / fp).glob("*.jsonl"))) == 5
    other = tmp_path / "ner" / fp / "fromanotherprocess.jsonl"  # another process's shard
    other.write_text(json.dumps({"k": entity_cache._key("Tesla is in Austin."),
                                 "s": [[0, 5, "ORG", "Organization", "Tesla"]]}) + "\n")
    counting = CountingNLP(nlp)
    spans = EntityCache(tmp_path, fp).extract(["Tesla is in Austin."], counting, DEFAULT_LABEL_MAP)
    assert reads == [other.name] and counting.seen == 0
    assert spans[0][0].text == "Tesla"


def test_a_release_lets_go_of_the_spans_its_preparation_read(tmp_path, nlp, monkeypatch):
    """Issue 21: the spans a preparation read stayed in the process (``_READ``) through the
    whole release, which tags no text (37 MB at 10k passages, ~0.37 GB at 100k). The release
    lets them go before its first step; a later cache reads its folder again, same spans."""
    from neswap_core import run_release as runner
    from neswap_core.text import entity_cache

    fp = pipeline_fingerprint(nlp, DEFAULT_LABEL_MAP)
    text = "Apple opened a store in Paris."
    first = EntityCache(tmp_path, fp).extract([text], nlp, DEFAULT_LABEL_MAP)
    EntityCache(tmp_path, fp).extract([text], nlp, DEFAULT_LABEL_MAP)  # read from the folder
    assert entity_cache._READ

    class Reached(Exception):
        pass

    held = []

    def first_step(config):
        held.append(len(entity_cache._READ))
        raise Reached

    monkeypatch.setattr(runner, "search_for_goal", first_step)
    with pytest.raises(Reached):
        runner.run_release(None, None, None)
    assert held == [0]
    counting = CountingNLP(nlp)
    assert EntityCache(tmp_path, fp).extract([text], counting, DEFAULT_LABEL_MAP) == first
    assert counting.seen == 0
