"""A transformer checkpoint's forward pass in NumPy, float32 end to end, keeping every layer's attention and updates.

One block runner for every family, driven by its Spec (attn_cli.models.spec), written out as in picoGPT:
    pre-norm (GPT-2, Llama):  x = x + Attn(Norm(x));   x = x + MLP(Norm(x));   output = Norm_f(x)
    post-norm (BERT):         x = Norm(x + Attn(x));   x = Norm(x + MLP(x))
Norm is LayerNorm or RMSNorm, positions are learned or rotary, the MLP dense or gated, and n_heads /
n_kv_heads query heads share each key/value head, as the Spec says. The attention itself is
attn_cli.core.attention.attend, the same step the lesson's heads take.
"""

import math
from pathlib import Path

import numpy as np

from attn_cli.core.blocked import attend_rows
from attn_cli.core.blocks import ACTIVATIONS, F32, MLPS, NORMS, rotary_frequencies, rotary_tables, rotate
from attn_cli.core.neighbors import MatrixKeys, nearest_rows
from attn_cli.errors import DataError, InputError
from attn_cli.models.base import Tokens, Trace
from attn_cli.models.cache import KVCache
from attn_cli.models.points import AXES, PATTERNS, Keep, Start, Zero, apply_edits, edits_at
from attn_cli.models.spec import Spec
from attn_cli.models.weights import Weights

LOGIT_ROWS = 8192  # vocabulary rows multiplied at a time for the logits: [8192, d] float32
MAX_WORDS_TRIED = 10_000  # words tried one by one to name the one a tokenizer fails on

# Where a forward pass can overflow float32, for its message: what the numbers are, and the tensors they come from.
STAGES = {
    "embeddings": ("the embeddings", ("embed.tokens", "embed.positions")), "attn.norm": ("the first layer norm", ("attn.norm.w",)),
    "qkv": ("the queries, keys and values", ("attn.qkv.w",)), "scores": ("the attention scores", ("attn.qkv.w",)),
    "o": ("the attention output", ("attn.o.w",)), "mlp.norm": ("the second layer norm", ("mlp.norm.w",)),
    "mlp.in": ("the MLP's hidden layer", ("mlp.gate.w", "mlp.in.w")), "mlp.out": ("the MLP output", ("mlp.out.w",)),
    "final": ("the final layer norm", ("final_norm.w",)),
}


class Transformer:
    """A checkpoint, ready to run: its Spec, its weights under attn's names, its own tokenizer (attn_cli.models.base.Model)."""

    capabilities = frozenset({"layers", "pieces", "context-senses"})

    def __init__(self, name: str, path: Path, spec: Spec, weights: Weights, tokenizer, config: dict | None = None,
                 chat_template: str | None = None, special: dict | None = None):
        self.name, self.folder, self.spec, self.weights, self.tokenizer = name, path, spec, weights, tokenizer
        self.config = config or {}
        self.chat_template = chat_template
        self.special = special or {}  # "bos", "eos": the texts of its special tokens, for the chat template
        self.kind = spec.family
        self.causal = spec.causal
        self.n_layers, self.n_heads, self.d_model = spec.n_layers, spec.n_heads, spec.d_model
        self._rotary = None

    @property
    def d_k(self) -> int:
        return self.spec.d_head

    def tokenize(self, text: str, chat: bool = False) -> Tokens:
        """The text as the model's tokenizer cuts it (with the special tokens it adds); `chat`: first wrapped in the
        model's own chat template as a user's message (the template writes the special tokens)."""
        from attn_cli.io.memory import check_line_length

        check_line_length(text, self.spec.max_positions, self.name)  # before the tokenizer: a huge line would cost it gigabytes
        if chat:
            text = self.chat_prompt(text)
        try:
            enc = self.tokenizer.encode(text, add_special_tokens=not chat)
        except Exception as e:  # the tokenizers package raises plain Exception: a WordPiece vocabulary without [UNK] meets a word it cannot split
            from attn_cli.errors import reason

            raise InputError(f"{self.name}'s tokenizer cannot encode {self.unencodable(text)} ({reason(e)})") from None
        if not enc.ids:
            raise InputError("no tokens in the input")
        if len(enc.ids) > self.spec.max_positions:
            raise InputError(f"{len(enc.ids)} tokens, more than the {self.spec.max_positions} positions {self.name} has; split the text")
        return Tokens(list(enc.ids), list(enc.tokens), [bool(s) for s in enc.special_tokens_mask], list(enc.word_ids), list(enc.offsets), text,
                      labels=self.labels(enc.ids, enc.tokens))

    def unencodable(self, text: str) -> str:
        """The first word of `text` the tokenizer fails on, for its message (else "this text")."""
        from attn_cli.errors import short

        try:
            normalized = self.tokenizer.normalizer.normalize_str(text) if self.tokenizer.normalizer else text
            words = [w for w, _ in self.tokenizer.pre_tokenizer.pre_tokenize_str(normalized)] if self.tokenizer.pre_tokenizer else [text]
        except Exception:
            return "this text"
        for word in words[:MAX_WORDS_TRIED]:
            try:
                self.tokenizer.encode(word, add_special_tokens=False)
            except Exception:
                return short(word)
        return "this text"

    def labels(self, ids: list[int], pieces: list[str]) -> list[str]:
        """Each piece as text ("cat" for GPT-2's "Ġcat", "café" for its bytes); a piece that is part of a character's bytes as those bytes."""
        from attn_cli.models.pieces import readable

        return [readable(self.tokenizer, i, piece) for i, piece in zip(ids, pieces)]

    def chat_prompt(self, text: str) -> str:
        from attn_cli.models.chat import render

        if not self.chat_template:
            raise InputError(f"{self.name} has no chat template; drop --chat")
        return render(self.chat_template, [{"role": "user", "content": text}], bos_token=self.special.get("bos") or "",
                      eos_token=self.special.get("eos") or "")

    def embeddings(self, ids: list[int], offset: int = 0) -> np.ndarray:  # -> [n, d] E, the input of the first layer
        """The rows of the embedding table the text uses (+ positions offset .. offset + n - 1, where they are learned)."""
        n, spec = len(ids), self.spec
        if max(ids) >= spec.vocab_size:
            raise DataError(f"{self.name}: the tokenizer gave id {max(ids)}, beyond the {spec.vocab_size} embeddings")
        e = self.weights.rows(ids)  # [n, d]
        if spec.position == "learned":
            e = e + self.weights.get("embed.positions")[offset : offset + n]
        if spec.token_types:
            types = self.weights.get("embed.types")
            e = e + (types[0] if types is not None else F32(0))  # one sentence: segment 0
        if spec.embed_norm:
            e = self.norm(e, self.weights.get("embed.norm.w"), self.weights.get("embed.norm.b"))
        return e

    def norm(self, x: np.ndarray, g: np.ndarray, b: np.ndarray | None) -> np.ndarray:  # [n, d] -> [n, d]
        return NORMS[self.spec.norm](x, g, b, self.spec.eps)

    def rotary(self, n: int, offset: int = 0):  # -> cos, sin [n, d_head] for rotary positions offset .. offset + n - 1, else None
        if self.spec.position != "rotary":
            return None
        end = offset + n
        if self._rotary is None or len(self._rotary[0]) < end:
            inv = rotary_frequencies(self.spec.d_head, self.spec.rope_theta, self.spec.rope_scaling, self.spec.rope_factors)
            self._rotary = rotary_tables(max(end, 64), inv)
        return self._rotary[0][offset:end], self._rotary[1][offset:end]

    def attention(self, x: np.ndarray, w: dict, l: int, run: "Run") -> np.ndarray:  # [B, n, d] -> [B, n, d]
        """Every head at once: Q, K, V, RoPE, attention a block of query rows at a time (core.blocked), attn.z, W_O.
        Layer l's own settings (a sliding window, a soft-cap, q/k norms, its own rope theta) belong here."""
        spec = self.spec
        batch, n, _ = x.shape
        h, h_kv, d_head = spec.n_heads, spec.n_kv_heads, spec.d_head
        qkv = (x.reshape(batch * n, -1) @ w["attn.qkv.w"]).reshape(batch, n, -1)  # [B n, d] x [d, (h + 2 h_kv) d_head] (2-D: one BLAS call)
        if "attn.qkv.b" in w:
            qkv += w["attn.qkv.b"]
        self.held(qkv, l, "qkv")
        q = qkv[..., : h * d_head].reshape(batch, n, h, d_head).transpose(0, 2, 1, 3)  # [B, h, n, d_head]
        k = qkv[..., h * d_head : (h + h_kv) * d_head].reshape(batch, n, h_kv, d_head).transpose(0, 2, 1, 3)  # [B, h_kv, n, d_head]
        v = qkv[..., (h + h_kv) * d_head :].reshape(batch, n, h_kv, d_head).transpose(0, 2, 1, 3)  # [B, h_kv, n, d_head]
        if run.rotary is not None:
            q, k = rotate(q, *run.rotary), rotate(k, *run.rotary)
        if run.cache is not None:  # the keys and values of the earlier positions first: [h_kv, t, d_head]
            k, v = (a[None] for a in run.cache.layer(l, k[0], v[0]))
        v = run.point("v", l, v)  # [B, h_kv, t, d_head]
        t = k.shape[2]
        patterns = [p for p in PATTERNS if run.keep.wants(p, l)]
        heads = None if run.keep.heads is None else [b * h + i for b in range(batch) for i in run.keep.heads]
        watch = {p: (lambda block, p=p: run.keep.watch[p](l, block)) for p in PATTERNS if p in run.keep.watch}
        out = attend_rows(np.ascontiguousarray(q).reshape(batch * h, n, d_head), np.ascontiguousarray(k).reshape(batch * h_kv, t, d_head),
                          np.ascontiguousarray(v).reshape(batch * h_kv, t, d_head), run.offset, root=F32(math.sqrt(d_head)),
                          causal=spec.causal, keep=patterns, heads=heads, rows=run.keep.rows, watch=watch,
                          edit=run.block_editor(l, batch, h))
        if out.overflow:
            self.overflowed(l, "scores")
        for p, value in out.kept.items():  # [B H', m, t]
            run.store[(p, l)] = run.unbatched(value.reshape(batch, -1, *value.shape[1:]))
        z = run.point("attn.z", l, out.z.reshape(batch, h, n, d_head).transpose(0, 2, 1, 3))  # [B, n, h, d_head]
        merged = (np.ascontiguousarray(z).reshape(batch * n, h * d_head) @ w["attn.o.w"]).reshape(batch, n, -1)  # [B n, h d_head] x [h d_head, d]
        if "attn.o.b" in w:
            merged += w["attn.o.b"]
        return self.held(merged, l, "o")

    def mlp(self, x: np.ndarray, w: dict, l: int = 0) -> np.ndarray:  # [..., n, d] -> [..., n, d]
        if x.ndim > 2:  # the matrix products as 2-D ones: NumPy's stacked matmul is several times slower
            return self.mlp(x.reshape(-1, x.shape[-1]), w, l).reshape(x.shape)
        return self.held(MLPS[self.spec.mlp](x, w, ACTIVATIONS[self.spec.activation], lambda hidden: self.held(hidden, l, "mlp.in")), l, "mlp.out")

    def held(self, value: np.ndarray, l: int | None, stage: str, norms: bool = False) -> np.ndarray:
        """`value` when float32 held every number of it (and, with `norms`, each row's squared norm, which the views
        compute); else one line naming where the forward pass overflowed and the weights that made it."""
        # a finite total says every part is finite in one pass without a temporary (a total can overflow alone: then each part)
        if norms and (np.isfinite(np.dot(flat := value.reshape(-1), flat)) or np.isfinite(np.einsum("...d,...d->...", value, value)).all()):
            return value
        if not norms and (np.isfinite(value.sum()) or np.isfinite(value).all()):
            return value
        self.overflowed(l, stage)

    def overflowed(self, l: int | None, stage: str):
        """Raise the one line that names where the forward pass overflowed float32 and the weights that made it."""
        what, keys = STAGES[stage]
        layer = "" if l is None else self.weights.layer_name.format(l=l)
        sources = ", ".join(name for key in keys if (name := self.weights.source_names(key if l is None else f"layers.{l}.{key}", 2 if stage == "scores" else None)))
        where = f"in layer {layer} at" if layer else "at"
        raise DataError(f"{self.weights.where}: the forward pass overflows float32 {where} {what} ({sources}): the weights are too large to compute with")

    def forward(self, tokens, keep: Keep | None = None, edits=(), cache: KVCache | None = None, start: Start | None = None,
                keep_scores: bool = False, keep_values: bool = False) -> Trace:
        """Every layer over the tokens (Tokens, or a list of ids), storing what `keep` asks for (models.points).

        keep: None keeps every layer's patterns and streams (what a whole view reads); `keep_scores` adds Q K^T
        before scaling (attn.qk, --stage scores), `keep_values` each layer's V. edits: Zero / Mean / Patch, made
        where their point is computed. cache: a KVCache; the pass runs only these tokens, after the cache's
        positions, and appends their keys and values. start: Start(layer, resid) runs layers layer .. L - 1 on a
        given stream ([n, d], or [B, n, d] for B streams at once; every kept point then has a B axis first)."""
        from attn_cli.io.blas import threads_for

        spec = self.spec
        keep = Keep.everything(keep_scores, keep_values) if keep is None else keep
        if keep_scores or keep_values:
            keep = Keep(keep.points | {p for p, asked in (("attn.qk", keep_scores), ("v", keep_values)) if asked}, keep.layers, keep.heads,
                        keep.rows, keep.watch)
        ids = list(tokens.ids) if isinstance(tokens, Tokens) else [int(i) for i in tokens]
        if start is not None and cache is not None:
            raise ValueError("a pass starts from a cache or from a given stream, not both")
        offset = 0 if cache is None else cache.length
        n = len(ids) if start is None else start.resid.shape[-2]
        if offset + n > spec.max_positions:
            raise InputError(f"{offset + n:,} tokens, more than the {spec.max_positions:,} positions {self.name} has; split the text")
        threads_for(n)
        self.weights.passes += 1
        run = Run(keep, list(edits), cache, offset, batched=start is not None and start.resid.ndim == 3)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # checked layer by layer: one message, not NumPy's warnings
            if start is None:
                x = self.held(self.embeddings(ids, offset), None, "embeddings", norms=True)[None]  # [1, n, d]
                first = 0
            else:
                x = np.asarray(start.resid, dtype=F32).reshape(-1, n, spec.d_model)  # [B, n, d]
                first = start.layer
            run.rotary = self.rotary(n, offset)
            for l in range(first, spec.n_layers):
                x = self.layer_pass(x, self.weights.layer(l), l, run)
                self.weights.release(l)  # nothing after the layer reads its weights
            output = self.norm(x, self.weights.get("final_norm.w"), self.weights.get("final_norm.b")) if spec.final_norm else x
            self.held(output, None, "final")
            run.point("resid_final", None, output)
        if cache is not None:
            cache.advance()
        tokens = tokens if isinstance(tokens, Tokens) else None
        return Trace(tokens, store=run.store, n_layers=spec.n_layers, rows=keep.rows, offset=offset)

    def layer_pass(self, x: np.ndarray, w: dict, l: int, run: "Run") -> np.ndarray:  # [B, n, d] -> [B, n, d]
        """One block, writing its points as they are computed. A family's extra norms (sandwich norms around each
        block) and scales go here, between the points they sit between."""
        spec = self.spec
        x = run.point("resid_pre", l, x)
        if spec.pre_norm:  # the updates add to the stream as they are
            normed = self.held(self.norm(x, w["attn.norm.w"], w.get("attn.norm.b")), l, "attn.norm")
            a = run.point("attn.out", l, self.attention(normed, w, l, run))
            mid = run.point("resid_mid", l, self.held(x + a, l, "o", norms=True))
            normed = self.held(self.norm(mid, w["mlp.norm.w"], w.get("mlp.norm.b")), l, "mlp.norm")
            m = run.point("mlp_out", l, self.mlp(normed, w, l))
            out = self.held(mid + m, l, "mlp.out", norms=True)
        else:  # post-norm: each block's update includes the norm after it
            a = run.point("attn.out", l, self.attention(x, w, l, run))
            mid = run.point("resid_mid", l, self.held(self.norm(x + a, w["attn.norm.w"], w.get("attn.norm.b")), l, "attn.norm", norms=True))
            m = run.point("mlp_out", l, self.mlp(mid, w, l))
            out = self.held(self.norm(mid + m, w["mlp.norm.w"], w.get("mlp.norm.b")), l, "mlp.norm", norms=True)
        return run.point("resid_post", l, out)

    def run(self, text: str, keep_scores: bool = False) -> Trace:
        return self.forward(self.tokenize(text), keep_scores=keep_scores)

    def output_maps(self, l: int) -> np.ndarray:  # -> [h, d_head, d]
        """Each query head's rows of layer l's W_O: what its values go through into the residual stream."""
        spec = self.spec
        return self.weights.tensor(f"layers.{l}.attn.o.w").reshape(spec.n_heads, spec.d_head, spec.d_model)

    def tokens_of(self, ids: list[int], text: str = "") -> Tokens:
        """Tokens made of vocabulary ids (a random sequence, not text), inside the special tokens the tokenizer puts around any text."""
        probe = self.tokenizer.encode("a")  # one word: what is around it is what the tokenizer adds
        text_at = [i for i, s in enumerate(probe.special_tokens_mask) if not s] or [len(probe.ids)]
        lead, trail = list(probe.ids[: text_at[0]]), list(probe.ids[text_at[-1] + 1 :])
        every = [*lead, *ids, *trail]
        pieces = [self.tokenizer.id_to_token(i) or f"#{i}" for i in every]
        special = [True] * len(lead) + [False] * len(ids) + [True] * len(trail)
        words = [None] * len(lead) + list(range(len(ids))) + [None] * len(trail)
        return Tokens(every, pieces, special, words, [(0, 0)] * len(every), text, labels=self.labels(every, pieces))

    def nearest(self, rows: np.ndarray, k: int, skip: list[int] | None = None) -> list[list[str]]:  # [m, d] -> m lists of k tokens
        """The k vocabulary tokens whose input embeddings are nearest by cosine to each row."""
        decode = self.tokenizer.id_to_token
        return [[decode(int(i)) or f"#{i}" for i in row] for row in nearest_rows(MatrixKeys(self.weights.vocabulary()), rows, k, skip)]

    def fold(self, text: str) -> str:
        """A word as its pieces are compared with it (--focus): lower case, without a piece's space marker (Ġ, ▁) or ##."""
        return text.strip().lstrip("Ġ▁#").lower()

    @property
    def predicts(self) -> str | None:
        """What its output head predicts: "next" (a decoder: the next token), "mask" (a masked-LM head: a [MASK]), or None."""
        if self.spec.causal:
            return "next"
        return "mask" if self.weights.has("mlm.dense.w") else None

    def lm_logits(self, rows: np.ndarray) -> np.ndarray:  # [m, d] residual rows -> [m, V] float32
        """What the model's output head makes of residual rows: a decoder's final norm and unembedding, or a masked-LM head."""
        if self.predicts is None:
            raise InputError(f"{self.name} has no output head to predict with (an encoder without a masked-LM head)")
        with np.errstate(over="ignore", invalid="ignore"):
            if self.predicts == "mask":
                w = self.weights
                h = ACTIVATIONS[self.spec.activation](rows @ w.get("mlm.dense.w") + w.get("mlm.dense.b"))  # [m, d] x [d, d] -> [m, d]
                return self.logits(self.norm(h, w.get("mlm.norm.w"), w.get("mlm.norm.b"))) + w.get("mlm.bias")
            x = self.norm(rows, self.weights.get("final_norm.w"), self.weights.get("final_norm.b")) if self.spec.final_norm else rows
            return self.logits(x)

    def logits(self, rows: np.ndarray) -> np.ndarray:  # [m, d] -> [m, V] float32
        """rows @ W_U^T, the output projection, a block of the vocabulary at a time."""
        out = np.empty((len(rows), self.spec.vocab_size), F32)
        for start, block in self.weights.each_unembedding_block(LOGIT_ROWS):  # [c, d] float32
            out[:, start : start + len(block)] = rows @ block.T  # [m, d] x [d, c] -> [m, c]
        return out

    def summary(self) -> dict:
        return {"name": self.name, "type": self.kind, "layers": self.n_layers, "heads": self.n_heads, "d_model": self.d_model, "d_k": self.d_k}


class Run:
    """One forward pass's bookkeeping: what it keeps and edits, where it starts, and what it has stored."""

    __slots__ = ("keep", "edits", "cache", "offset", "batched", "store", "rotary")

    def __init__(self, keep: Keep, edits: list, cache: KVCache | None, offset: int, batched: bool):
        self.keep, self.edits, self.cache, self.offset, self.batched = keep, edits, cache, offset, batched
        self.store: dict = {}
        self.rotary = None

    def unbatched(self, value: np.ndarray) -> np.ndarray:  # [B, ...] -> [...] when the pass has no batch axis
        return value if self.batched else value[0]

    def point(self, name: str, l: int | None, value: np.ndarray) -> np.ndarray:
        """`value` ([B, ...]) at point (name, l): edited, shown to its watcher, stored as kept; returns what the pass goes on with."""
        if self.edits:
            value = apply_edits(self.edits, name, l, value)
        keep = self.keep
        if name in keep.watch:
            keep.watch[name](l, self.unbatched(value))
        if keep.wants(name, l):
            kept = value
            axes = AXES[name]
            if keep.rows is not None and "n" in axes:
                kept = np.take(kept, keep.row_index(value.shape[axes.index("n") - len(axes)]), axis=axes.index("n") - len(axes))
            if keep.heads is not None and "H" in axes:
                kept = np.take(kept, keep.heads, axis=axes.index("H") - len(axes))
            self.store[(name, l)] = self.unbatched(kept)
        return value

    def block_editor(self, l: int, batch: int, h: int):
        """The edits of layer l's attn.scores and attn.pattern as attend_rows makes them, a block of rows at a time (None: none)."""
        mine = [e for p in ("attn.scores", "attn.pattern") for e in edits_at(self.edits, p, l)]
        if not mine:
            return None

        def edit(point: str, r0: int, r1: int, lo: int, block: np.ndarray) -> None:  # block [B h, b, k]
            view = block.reshape(batch, h, r1 - r0, block.shape[-1])  # [B, h, b, k]
            for e in mine:
                if e.point != point:
                    continue
                rows = np.arange(r0, r1) if e.positions is None else e.positions[(e.positions >= r0) & (e.positions < r1)]
                heads = slice(None) if e.head is None else [e.head]
                target = np.ix_(range(batch), range(h) if e.head is None else heads, rows - r0, range(block.shape[-1]))
                if isinstance(e, Zero):  # scores: 0 on the keys the query sees (the mask stays)
                    view[target] = 0 if point == "attn.pattern" else np.where(np.isneginf(view[target]), view[target], 0)
                else:  # Patch: the other run's [.., h, n, t] at these heads, rows and keys
                    source = e.value if e.value.ndim == 4 else e.value[None]
                    view[target] = source[np.ix_(range(source.shape[0]), range(h) if e.head is None else heads, rows,
                                                 range(lo, lo + block.shape[-1]))]

        return edit
