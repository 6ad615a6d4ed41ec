"""How much text a cold default release embeds, stage by stage, against the anchor's one pass (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/embedding_volume.py --vectors DIR [--corpus PATH]
        [--log FILE]

``release_end_to_end.py`` times the cold release against one plain MiniLM pass over the corpus's
sentences (target: 1.5 times). Embedding is most of that release's CPU time (py-spy on dev,
2026-12-03: 508 of 838 sampled CPU-seconds in ONNX Runtime's ``Session.run``), and its floor is
set by how many tokens the method sends to the model, not by how fast a token is embedded. This
script counts them: it runs the library's release path (``prepare_release`` → ``fit_reading`` →
``run_release`` → ``write_release``, the default settings, one process so every call is seen)
with a fresh cache folder for everything except the vectors, which come from ``--vectors`` (the
kept cache folder of a ``release_end_to_end.py --keep DIR`` run: ``DIR/cache``), so the release
is the one that run made, without embedding again. Every text the release asks the model for is
counted once (texts and MiniLM tokens after truncation, and the tokens the backend runs: each
text's width rounded up to its batches' step, 16 for bf16, 1 for ONNX), under the stage that asked for it
(the candidate stage split by the candidates that asked: the paper's draws, the plan grid, the
document defence's levels, the word-level DP baseline).

Prints each stage's share and the total against the anchor's tokens (the corpus's sentences, as
``release_end_to_end.py`` embeds them): at the anchor's speed per token, the release cannot be
faster than that ratio, whatever runs in parallel. A text not found among the kept vectors is
embedded for real and reported (the kept run and this one disagree: a bug to chase).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV = next((p / "shared" / "corpus" / "dev" for p in ROOT.parents[:2]
            if (p / "shared" / "corpus" / "dev").is_dir()), ROOT.parent / "shared" / "corpus" / "dev")
#: Function names that say which candidates asked for a text (innermost wins).
CANDIDATE_CALLERS = {"draws_columns": "candidates: the paper's draws",
                     "sweep_for_config": "candidates: the paper's sweep",
                     "plan_candidates": "candidates: the plan grid",
                     "document_candidates": "candidates: the document defence's levels",
                     "dp_words_sources": "candidates: the word-level DP baseline",
                     "measured_row": "candidates: measured one by one",
                     "fitted_panel": "the attacker panel's reading"}


class CountingModel:
    """A text encoder that answers from kept vectors and counts what it is asked, by stage."""

    def __init__(self, kept, tokenizer, step: int, real=None) -> None:
        self.kept, self.tokenizer, self.step, self.real = kept, tokenizer, step, real
        self.stage = "imports"
        self.texts: Counter = Counter()
        self.tokens: Counter = Counter()
        self.padded: Counter = Counter()
        self.missing = 0

    def _where(self) -> str:
        names = [frame.name for frame in traceback.extract_stack()]
        for name in reversed(names):
            if name in CANDIDATE_CALLERS:
                return CANDIDATE_CALLERS[name]
        return self.stage

    def encode(self, texts, batch_size: int = 32, **_):
        import numpy as np

        from neswap_core.models.embedding import text_key

        texts = list(texts)
        where = self._where()
        lengths = [len(e.ids) for e in self.tokenizer.encode_batch(texts)]
        self.texts[where] += len(texts)
        self.tokens[where] += sum(lengths)
        self.padded[where] += sum(-(-n // self.step) * self.step for n in lengths)
        keys = [text_key(t) for t in texts]
        found = self.kept.lookup(keys)
        lost = [t for k, t in zip(keys, texts, strict=True) if k not in found]
        if lost:
            self.missing += len(lost)
            if self.real is None:
                raise SystemExit(f"{len(lost)} texts are not among the kept vectors and no model "
                                 "was loaded to embed them")
            found.update(zip((text_key(t) for t in lost), self.real.encode(lost), strict=True))
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def get_embedding_dimension(self) -> int:
        return int(self.kept.dimension or 384)


def anchor_tokens(corpus: str, tokenizer) -> tuple[int, int]:
    """(sentences, tokens) of the anchor's pass: ``release_end_to_end.sentences``."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from release_end_to_end import corpus_sentences

    sentences = corpus_sentences(corpus)
    return len(sentences), sum(len(e.ids) for e in tokenizer.encode_batch(sentences))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vectors", required=True,
                    help="the cache folder of a kept release_end_to_end.py run (its DIR/cache)")
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--log", help="also append the figures as a JSON line to this file")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tokenizers import Tokenizer

    import neswap_core as nc
    from neswap_core.config import RunConfig
    from neswap_core.models.embedding import (
        Embedder,
        EmbeddingCache,
        _model_folder,
        cache_name,
        embedding_model_path,
        resolve_backend,
    )
    from neswap_core.models.fixed_batches import ONNX_STEP, WIDTH_STEP
    from neswap_core.publish.evaluate import fit_reading
    from neswap_core.publish.writer import write_release
    from neswap_core.run_release import prepare_release

    with tempfile.TemporaryDirectory(prefix="neswap-volume-") as tmp:
        config = RunConfig.of(corpus=args.corpus, cache_dir=f"{tmp}/cache", out=f"{tmp}/out")
        model_name, backend = config.prepare.embedding_model, config.prepare.embedding_backend
        kept = EmbeddingCache(Path(args.vectors) / _model_folder(cache_name(model_name, backend)))
        kept.load()
        if kept.dimension is None:
            ap.error(f"{args.vectors} holds no vectors of {cache_name(model_name, backend)}")
        path = embedding_model_path(model_name)
        tokenizer = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
        tokenizer.enable_truncation(256)
        tokenizer.no_padding()
        step = ONNX_STEP if resolve_backend(backend).startswith("onnx") else WIDTH_STEP
        model = CountingModel(kept, tokenizer, step)
        embedder = Embedder(model_name, f"{tmp}/cache", model=model, backend=backend)
        start = time.perf_counter()
        model.stage = "prepare (chunker's sentence groups, then the chunks)"
        prepared = prepare_release(config, embedder=embedder, processes=1, tag_reading=True)
        model.stage = "the attacker's reading"
        reading = fit_reading(config.corpus, prepared.chunks, prepared.raw, config.protect,
                              f"{tmp}/cache", config.sweep.lineup)

        def phase(fraction: float, message: str) -> None:
            model.stage = f"run_release: {message}"

        result = nc.run_release(prepared, config, embedder.encode, reading=reading, processes=1,
                                progress=phase)
        model.stage = "write (leak scan, attack, audit, adaptive)"
        write_release(result, f"{tmp}/out")
        seconds = time.perf_counter() - start
    sentences, anchor = anchor_tokens(args.corpus, tokenizer)
    total, padded = sum(model.tokens.values()), sum(model.padded.values())
    print(f"corpus {args.corpus}; default settings; {len(prepared.chunks)} chunks, "
          f"{len(result.candidates.table)} candidates, released {result.choice.release_id}; "
          f"counted in {seconds:.0f} s")
    print(f"anchor: {sentences} sentences, {anchor:,} tokens")
    print(f"{'stage':<58} {'texts':>7} {'tokens':>10} {'x anchor':>9} {'share':>6}")
    for where, tokens in model.tokens.most_common():
        print(f"{where[:58]:<58} {model.texts[where]:>7} {tokens:>10,} {tokens / anchor:>9.2f} "
              f"{tokens / total:>6.1%}")
    print(f"{'all':<58} {sum(model.texts.values()):>7} {total:>10,} {total / anchor:>9.2f}")
    print(f"tokens the backend runs ({resolve_backend(config.prepare.embedding_backend)}: widths in "
          f"steps of {step}): {padded:,} ({padded / anchor:.2f} x the anchor's unpadded tokens)")
    print(f"floor of the cold release / anchor ratio at the anchor's speed per token: "
          f"{total / anchor:.1f} (target 1.5)")
    if model.missing:
        print(f"WARNING: {model.missing} texts were not among the kept vectors")
    if args.log:
        with open(args.log, "a") as handle:
            handle.write(json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                     "corpus": args.corpus, "anchor_sentences": sentences,
                                     "anchor_tokens": anchor, "texts": dict(model.texts),
                                     "tokens": dict(model.tokens), "padded": padded,
                                     "missing": model.missing}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
