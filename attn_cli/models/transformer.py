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
from attn_cli.core.blocks import ACTIVATIONS, F32, MLPS, apply_linear, longrope_long, norm_scale, normalize, rotary_attention_factor, rotary_frequencies, rotary_tables, rotate
from attn_cli.core.neighbors import MatrixKeys, nearest_rows
from attn_cli.errors import DataError, InputError, is_panic, native_stderr_held, reason
from attn_cli.models.base import Tokens, Trace
from attn_cli.models.cache import KVCache
from attn_cli.models.points import PATTERNS, Keep, Start
from attn_cli.models.readout import Readout
from attn_cli.models.run import Run
from attn_cli.models.spec import Spec
from attn_cli.models.weights import Weights

MAX_WORDS_TRIED = 10_000  # words tried one by one to name the one a tokenizer fails on

# Where a forward pass can overflow float32, for its message: what the numbers are, and the tensors they come from.
STAGES = {
    "embeddings": ("the embeddings", ("embed.tokens", "embed.positions")), "attn.norm": ("the first layer norm", ("attn.norm.w",)),
    "qkv": ("the queries, keys and values", ("attn.qkv.w",)), "scores": ("the attention scores", ("attn.qkv.w",)),
    "o": ("the attention output", ("attn.o.w",)), "mlp.norm": ("the second layer norm", ("mlp.norm.w",)),
    "mlp.in": ("the MLP's hidden layer", ("mlp.gate.w", "mlp.in.w")), "mlp.out": ("the MLP output", ("mlp.out.w",)),
    "final": ("the final layer norm", ("final_norm.w",)),
}


class Transformer(Readout):
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
        self._rotary = {}  # (RoPE base, long factors) -> cos, sin tables
        self.checking = False  # whether held() checks every stage of a layer, or only its streams (see held)

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
            with native_stderr_held():  # a Rust panic's report is dropped: it is said in one line below
                enc = self.tokenizer.encode(text, add_special_tokens=not chat)
        except BaseException as e:  # tokenizers raises plain Exception (a WordPiece vocabulary without [UNK] meets a word it cannot
            if is_panic(e):  # split), and a Rust panic as a BaseException
                raise DataError(f"{self.name}'s tokenizer failed inside the tokenizers library ({reason(e)})") from None
            if not isinstance(e, Exception):
                raise
            raise InputError(f"{self.name}'s tokenizer cannot encode {self.unencodable(text)} ({reason(e)})") from None
        if not enc.ids:
            raise InputError("no tokens in the input")
        if len(enc.ids) > self.spec.max_positions:
            raise InputError(f"{len(enc.ids):,} tokens, more than the {self.spec.max_positions:,} positions {self.name} has; split the text")
        from attn_cli.models.pieces import sentencepiece_words

        words = sentencepiece_words(self.tokenizer, enc.tokens, enc.word_ids)
        return Tokens(list(enc.ids), list(enc.tokens), [bool(s) for s in enc.special_tokens_mask], words, list(enc.offsets), text,
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

    def embeddings(self, ids: list[int], offset: int = 0, run: "Run | None" = None) -> np.ndarray:  # -> [n, d] E, the input of the first layer
        """The rows of the embedding table the text uses (+ positions offset .. offset + n - 1, where they are learned)."""
        n, spec = len(ids), self.spec
        if max(ids) >= spec.vocab_size:
            raise DataError(f"{self.name}: the tokenizer gave id {max(ids)}, beyond the {spec.vocab_size} embeddings")
        e = self.weights.embed(ids)  # [n, d], the family's scale folded in
        if spec.position == "learned":
            e = e + self.weights.get("embed.positions")[offset : offset + n]
        if spec.token_types:
            types = self.weights.get("embed.types")
            e = e + (types[0] if types is not None else F32(0))  # one sentence: segment 0
        return self.norm(e, self.weights, "embed.norm", None, run) if spec.embed_norm else e

    def norm(self, x: np.ndarray, w, key: str, l: int | None, run: "Run | None" = None) -> np.ndarray:  # [..., d] -> [..., d]
        """The norm `key` ("attn.norm", "final_norm", ...) of layer l (None: outside the layers; `w` its weights, a layer's
        dict or self.weights). Its scale, what it divides each row by, is the point key + ".scale" of the pass: kept,
        watched or edited there like any other."""
        scale = norm_scale(x, self.spec.norm, self.spec.eps)  # [..., 1]
        if run is not None:
            scale = run.point(f"{key}.scale", l, scale)
        return normalize(x, w.get(f"{key}.w"), w.get(f"{key}.b"), self.spec.norm, scale)

    def frozen_norm(self, parts: np.ndarray, key: str, l: int | None, scale) -> np.ndarray:  # [m, d], [1] -> [m, d]
        """The norm `key` of layer l as the linear map it is at one position: its scale taken from a pass (the point
        key + ".scale"), its bias left out (a part of its own). Each part of a stream through it sums to the normed stream."""
        w = self.weights.get(f"{key}.w") if l is None else self.weights.tensor(f"layers.{l}.{key}.w")
        return normalize(np.asarray(parts, np.float64), w.astype(np.float64), None, self.spec.norm, np.asarray(scale, np.float64))

    def window(self, l: int) -> int | None:
        """Layer l's sliding window (a query sees its own key and the window - 1 before it), or None: every earlier key."""
        return self.spec.window(l)

    def rotary(self, n: int, offset: int = 0, l: int = 0, long: bool | None = None):  # -> cos, sin [n, d_head] for positions offset .. offset + n - 1, else None
        """Layer l's RoPE tables: its base (a windowed layer of Gemma 3 has its own, unscaled), and for longrope the
        short or long factors as the whole sequence's length asks (`long`: as a cache decided, KVCache.long_factors)."""
        spec = self.spec
        if spec.position != "rotary":
            return None
        end = offset + n
        local = spec.rope_base(l) != spec.rope_theta
        scaling = None if local else spec.rope_scaling
        long = not local and (longrope_long(scaling, end) if long is None else long)
        key = (spec.rope_base(l), long)
        if key not in self._rotary or len(self._rotary[key][0]) < end:
            inv = rotary_frequencies(spec.d_head, spec.rope_base(l), scaling, None if local else spec.rope_factors, end, long)
            self._rotary[key] = rotary_tables(max(end, 64), inv, rotary_attention_factor(scaling, spec.max_positions))
        cos, sin = self._rotary[key]
        return cos[offset:end], sin[offset:end]

    def attention(self, x: np.ndarray, w: dict, l: int, run: "Run") -> np.ndarray:  # [B, n, d] -> [B, n, d]
        """Every head at once: Q, K, V, RoPE, attention a block of query rows at a time (core.blocked), attn.z, W_O.
        Layer l's own settings (a sliding window, a soft-cap, q/k norms, its own rope theta) belong here."""
        spec = self.spec
        batch, n, _ = x.shape
        h, h_kv, d_head = spec.n_heads, spec.n_kv_heads, spec.d_head
        qkv = apply_linear(x.reshape(batch * n, -1), w["attn.qkv.w"], w.get("attn.qkv.b"), run.threads).reshape(batch, n, -1)  # [B n, d] x [d, (h + 2 h_kv) d_head]
        self.held(qkv, l, "qkv")
        qk = qkv[..., : (h + h_kv) * d_head].reshape(batch, n, h + h_kv, d_head)  # [B, n, h + h_kv, d_head]: the queries' heads, then the keys'
        v = qkv[..., (h + h_kv) * d_head :].reshape(batch, n, h_kv, d_head).transpose(0, 2, 1, 3)  # [B, h_kv, n, d_head]
        if spec.qk_norm:  # each head's queries and keys normed on their own (Qwen3, Gemma 3)
            qk = np.concatenate([self.norm(qk[:, :, :h], w, "attn.q_norm", l, run), self.norm(qk[:, :, h:], w, "attn.k_norm", l, run)], axis=2)
        if run.rotary is not None:  # queries and keys turned in one go: [n, 1, d_head] tables over every head
            qk = rotate(qk, *(table[:, None] for table in run.rotary))
        q = run.point("attn.q", l, qk[:, :, :h]).transpose(0, 2, 1, 3)  # [B, n, h, d_head] -> [B, h, n, d_head]
        k = qk[:, :, h:].transpose(0, 2, 1, 3)  # [B, h_kv, n, d_head]
        if run.cache is not None and run.read_only:  # streams started after the cache's positions: each reads them first, appends nothing
            k, v = (np.concatenate([np.broadcast_to(past, (batch, *past.shape)), new], axis=2)
                    for past, new in zip(run.cache.past(l), (k, v)))  # [B, h_kv, t, d_head]
        elif run.cache is not None:  # the keys and values of the earlier positions first: [h_kv, t, d_head]
            k, v = (a[None] for a in run.cache.layer(l, k[0], v[0]))
        k, v = run.point("attn.k", l, k), run.point("v", l, v)  # [B, h_kv, t, d_head] each
        t = k.shape[2]
        patterns = [p for p in PATTERNS if run.keep.wants(p, l)]
        heads = None if run.keep.heads is None else [b * h + i for b in range(batch) for i in run.keep.heads]
        watch = {p: (lambda block, p=p: run.keep.watch[p](l, block)) for p in PATTERNS if p in run.keep.watch}
        out = attend_rows(np.ascontiguousarray(q).reshape(batch * h, n, d_head), np.ascontiguousarray(k).reshape(batch * h_kv, t, d_head),
                          np.ascontiguousarray(v).reshape(batch * h_kv, t, d_head), run.offset,
                          root=F32(spec.query_root or math.sqrt(d_head)), causal=spec.causal, window=self.window(l), cap=spec.attn_softcap, keep=patterns, heads=heads, rows=run.keep.rows, watch=watch,
                          edit=run.block_editor(l, batch, h))
        if out.overflow:
            self.overflowed(l, "scores")
        for p, value in out.kept.items():  # [B H', m, t]
            run.store[(p, l)] = run.unbatched(value.reshape(batch, -1, *value.shape[1:]))
        z = run.point("attn.z", l, out.z.reshape(batch, h, n, d_head).transpose(0, 2, 1, 3))  # [B, n, h, d_head]
        merged = apply_linear(np.ascontiguousarray(z).reshape(batch * n, h * d_head), w["attn.o.w"], w.get("attn.o.b"), run.threads).reshape(batch, n, -1)  # [B n, h d_head] x [h d_head, d]
        return self.held(merged, l, "o")

    def mlp(self, x: np.ndarray, w: dict, l: int, run: "Run") -> np.ndarray:  # [B, n, d] -> [B, n, d]
        """The MLP, its products as 2-D ones (NumPy's stacked matmul is several times slower); its hidden layer after the
        activation is the point mlp.hidden."""
        def hidden(value: np.ndarray) -> np.ndarray:  # [B n, ff]
            return run.point("mlp.hidden", l, self.held(value, l, "mlp.in").reshape(*x.shape[:-1], -1)).reshape(value.shape)

        out = MLPS[self.spec.mlp](x.reshape(-1, x.shape[-1]), w, ACTIVATIONS[self.spec.activation], hidden, run.threads)
        return self.held(out, l, "mlp.out").reshape(x.shape)

    def held(self, value: np.ndarray, l: int | None, stage: str, norms: bool = False) -> np.ndarray:
        """`value` when float32 held every number of it (and, with `norms`, each row's squared norm, which the views
        compute); else one line naming where the forward pass overflowed and the weights that made it.

        Inside a layer only the streams (`norms`) are checked, unless self.checking: a number beyond float32 anywhere in
        a layer reaches its stream (or Q K^T, checked as it is computed), and checked_layer then runs the layer again
        checking every stage, so that the message names the first one."""
        if l is not None and not norms and not self.checking:
            return value
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
        given stream ([n, d], or [B, n, d] for B streams at once; every kept point then has a B axis first). With both,
        the streams are the positions after the cache's: every stream reads its keys and values, and none is appended."""
        from attn_cli.io.blas import threads_for
        from attn_cli.io.heap import reuse_heap
        from attn_cli.models.progress import steps

        reuse_heap()  # each layer's temporaries from the heap again, not mapped afresh
        spec = self.spec
        keep = Keep.everything(keep_scores, keep_values) if keep is None else keep
        if keep_scores or keep_values:
            keep = Keep(keep.points | {p for p, asked in (("attn.qk", keep_scores), ("v", keep_values)) if asked}, keep.layers, keep.heads,
                        keep.rows, keep.watch)
        ids = list(tokens.ids) if isinstance(tokens, Tokens) else [int(i) for i in tokens]
        offset = 0 if cache is None else cache.length  # with `start`, the cache holds the positions before the streams' and is only read
        n = len(ids) if start is None else start.resid.shape[-2]
        if offset + n > spec.max_positions:
            raise InputError(f"{offset + n:,} tokens, more than the {spec.max_positions:,} positions {self.name} has; split the text")
        long = None if cache is None else cache.long_factors(self, offset + n, appending=start is None)  # may make its keys again
        rows = n * (1 if start is None or start.resid.ndim < 3 else len(start.resid))
        threads = threads_for(n)  # set for the pass, and told to it
        if self.weights.products_for(rows):  # its matrices are products from the file's blocks, on threads of their own
            from attn_cli.io.blas import product_threads

            threads = product_threads()
        self.weights.passes += 1
        run = Run(keep, list(edits), cache, offset, batched=start is not None and start.resid.ndim == 3, read_only=start is not None,
                  threads=threads)
        layers = spec.n_layers - (0 if start is None else start.layer)  # the pass's steps, on a bar (models.progress)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"), steps("layers", layers) as advance:  # checked layer by layer: one message, not NumPy's warnings
            if start is None:
                x = self.held(self.embeddings(ids, offset, run), None, "embeddings", norms=True)[None]  # [1, n, d]
                first = 0
            else:
                x = np.asarray(start.first(), dtype=F32).reshape(-1, n, spec.d_model)  # [B, n, d]
                first = start.layer
            self.checking = False  # streams only; a layer that overflows runs again checking each stage (a cached one writes the
            # same keys and values into the same slots again: the cache's length moves only when the pass ends)
            try:
                for l in range(first, spec.n_layers):
                    if start is not None and (joining := start.joining(l)) is not None:  # streams patched at layer l join the batch
                        x = np.concatenate([x, joining.astype(F32, copy=False)])
                    run.rotary = self.rotary(n, offset, l, long)
                    x = self.checked_layer(x, self.weights.layer(l, len(x) * n), l, run)
                    self.weights.release(l)  # nothing after the layer reads its weights
                    advance()
            finally:
                self.checking = False
            output = self.norm(x, self.weights, "final_norm", None, run) if spec.final_norm else x
            self.held(output, None, "final")
            run.point("resid_final", None, output)
        if cache is not None and start is None:
            cache.advance(ids)
        tokens = tokens if isinstance(tokens, Tokens) else None
        return Trace(tokens, store=run.store, n_layers=spec.n_layers, rows=keep.rows, offset=offset)

    def checked_layer(self, x: np.ndarray, w: dict, l: int, run: "Run") -> np.ndarray:  # [B, n, d] -> [B, n, d]
        """layer_pass; where it overflowed float32, the layer once more checking every stage (held), to name the first."""
        try:
            return self.layer_pass(x, w, l, run)
        except DataError:
            if self.checking:
                raise
            self.checking = True
            try:
                self.layer_pass(x, w, l, run)
            finally:
                self.checking = False
            raise

    def layer_pass(self, x: np.ndarray, w: dict, l: int, run: "Run") -> np.ndarray:  # [B, n, d] -> [B, n, d]
        """One block, writing its points as they are computed. A family's extra norms (sandwich norms around each
        block) and scales go here, between the points they sit between."""
        spec = self.spec
        x = run.point("resid_pre", l, x)
        if spec.pre_norm:  # the updates add to the stream as they are
            normed = self.held(self.norm(x, w, "attn.norm", l, run), l, "attn.norm")
            a = run.point("attn.out", l, self.sandwiched(self.attention(normed, w, l, run), w, "attn.post_norm", l, "o", run))
            mid = run.point("resid_mid", l, self.held(x + a, l, "o", norms=True))
            normed = self.held(self.norm(mid, w, "mlp.norm", l, run), l, "mlp.norm")
            m = run.point("mlp_out", l, self.sandwiched(self.mlp(normed, w, l, run), w, "mlp.post_norm", l, "mlp.out", run))
            out = self.held(mid + m, l, "mlp.out", norms=True)
        else:  # post-norm: each block's update includes the norm after it
            a = run.point("attn.out", l, self.attention(x, w, l, run))
            mid = run.point("resid_mid", l, self.held(self.norm(x + a, w, "attn.norm", l, run), l, "attn.norm", norms=True))
            m = run.point("mlp_out", l, self.mlp(mid, w, l, run))
            out = self.held(self.norm(mid + m, w, "mlp.norm", l, run), l, "mlp.norm", norms=True)
        return run.point("resid_post", l, out)

    def head_weights(self, x: np.ndarray, l: int, h: int) -> np.ndarray:  # resid_pre[l] [n, d] -> [n, n]
        """Head h of layer l's weights over the stream that entered the layer (a pass's resid_pre[l]): that layer's
        attention block alone, run again, for a view that reads one head at a time."""
        run = Run(Keep(("attn.pattern",), layers=[l], heads=[h]), [], None, 0, batched=False)
        run.rotary = self.rotary(len(x))
        w = self.weights.layer(l)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            self.attention((self.norm(x, w, "attn.norm", l) if self.spec.pre_norm else x)[None], w, l, run)
        self.weights.release(l)
        return run.store[("attn.pattern", l)][0]

    def sandwiched(self, update: np.ndarray, w: dict, norm: str, l: int, stage: str, run: "Run") -> np.ndarray:  # [..., n, d] -> [..., n, d]
        """A block's update, normed once more before it is added when the family has sandwich norms (Gemma 2 and 3)."""
        return self.held(self.norm(update, w, norm, l, run), l, stage) if self.spec.sandwich_norm else update

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
        from attn_cli.models.weights import EMBEDDING, PREFETCH_VOCABULARY, TableKeys

        (table, _), = self.weights.plan[EMBEDDING]
        small = 4 * table.size <= PREFETCH_VOCABULARY or self.weights.eager  # else Gemma's 262k rows would be 671 MB as float32
        keys = MatrixKeys(self.weights.vocabulary()) if small else TableKeys(self.weights, EMBEDDING)
        found = nearest_rows(keys, rows, k, skip)
        return [self.labels([int(i) for i in row], [decode(int(i)) or f"#{i}" for i in row]) for row in found]  # as a reader sees them

    def fold(self, text: str) -> str:
        """A word as its pieces are compared with it (--focus): lower case, without a piece's space marker (Ġ, ▁) or ##."""
        return text.strip().lstrip("Ġ▁#").lower()

    def summary(self) -> dict:
        return {"name": self.name, "type": self.kind, "layers": self.n_layers, "heads": self.n_heads, "d_model": self.d_model, "d_k": self.d_k}

