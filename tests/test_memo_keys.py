"""The candidates' disk keys (choose/memo_keys.py): hashed once per chunk list, never stale."""

from __future__ import annotations

from dataclasses import replace

from neswap_core.choose import memo_keys
from neswap_core.config import RunConfig
from neswap_core.corpus import Chunk, EntitySpan


def _chunks(n: int) -> list[Chunk]:
    return [Chunk(f"d{i % 3}#{i:04d}", f"d{i % 3}", i, f"Acme sold {i} widgets.", f"C{i % 3}",
                  (EntitySpan(0, 4, "ORG", "Organization", "Acme"),)) for i in range(n)]


def test_a_chunk_list_is_hashed_once_and_a_changed_list_again(monkeypatch):
    chunks = _chunks(50)
    calls = []
    real = memo_keys.texts_digest
    monkeypatch.setattr(memo_keys, "texts_digest", lambda parts: calls.append(1) or real(parts))
    config = RunConfig.of()
    first = memo_keys.build_key(chunks, config)
    assert len(calls) == 5
    assert memo_keys.build_key(chunks, config) == first and len(calls) == 5  # not hashed again
    assert memo_keys.build_key(list(chunks), config) == first  # another list, the same content
    chunks[7] = replace(chunks[7], entities=())  # changed in place: hashed again, another key
    assert memo_keys.build_key(chunks, config) != first
    chunks[7] = replace(chunks[7], entities=_chunks(50)[7].entities)
    assert memo_keys.build_key(chunks, config) == first


def test_a_copy_of_the_list_is_not_hashed_again_and_remembered_digests_are_used(monkeypatch):
    """Issue 21: the app's sweep holds its own copy of the pre-swap chunks (the same chunk
    objects) and a restarted server reads their digests back with them (0.5 s at 100k)."""
    chunks = _chunks(40)
    calls = []
    real = memo_keys.texts_digest
    monkeypatch.setattr(memo_keys, "texts_digest", lambda parts: calls.append(1) or real(parts))
    first = memo_keys.chunk_field_digests(chunks)
    assert memo_keys.chunk_field_digests(list(chunks)) == first and len(calls) == 5
    fresh = _chunks(40)  # equal chunks, other objects: told their digests, not hashed
    memo_keys.remember_field_digests(fresh, first)
    assert memo_keys.chunk_field_digests(fresh) == first and len(calls) == 5
    assert memo_keys.chunk_field_digests(fresh[:-1]) != first and len(calls) == 10
