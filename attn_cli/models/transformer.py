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

from attn_cli.core.attention import allowed_keys, attend
from attn_cli.core.blocks import ACTIVATIONS, F32, MLPS, NORMS, rotary_frequencies, rotary_tables, rotate
from attn_cli.core.neighbors import MatrixKeys, nearest_rows
from attn_cli.errors import DataError, InputError
from attn_cli.models.base import LayerTrace, Tokens, Trace  # noqa: F401 (Tokens: what tokenize returns)
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
        from attn_cli.errors import native_stderr_held

        try:
            with native_stderr_held():  # a Rust panic's report is dropped: it is said in one line below
                enc = self.tokenizer.encode(text, add_special_tokens=not chat)
        except BaseException as e:  # tokenizers raises plain Exception (a WordPiece vocabulary without [UNK] meets a word it cannot
            from attn_cli.errors import DataError, is_panic, reason  # split), and a Rust panic as a BaseException

            if is_panic(e):
                raise DataError(f"{self.name}'s tokenizer failed inside the tokenizers library ({reason(e)})") from None
            if not isinstance(e, Exception):
                raise
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

    def embeddings(self, ids: list[int]) -> np.ndarray:  # -> [n, d] E, the input of the first layer
        n, spec = len(ids), self.spec
        if max(ids) >= spec.vocab_size:
            raise DataError(f"{self.name}: the tokenizer gave id {max(ids)}, beyond the {spec.vocab_size} embeddings")
        e = self.weights.rows(ids)  # [n, d]
        if spec.position == "learned":
            e = e + self.weights.get("embed.positions")[:n]
        if spec.token_types:
            types = self.weights.get("embed.types")
            e = e + (types[0] if types is not None else F32(0))  # one sentence: segment 0
        if spec.embed_norm:
            e = self.norm(e, self.weights.get("embed.norm.w"), self.weights.get("embed.norm.b"))
        return e

    def norm(self, x: np.ndarray, g: np.ndarray, b: np.ndarray | None) -> np.ndarray:  # [n, d] -> [n, d]
        return NORMS[self.spec.norm](x, g, b, self.spec.eps)

    def rotary(self, n: int):  # -> cos, sin [n, d_head] for rotary positions, else None
        if self.spec.position != "rotary":
            return None
        if self._rotary is None or len(self._rotary[0]) < n:
            inv = rotary_frequencies(self.spec.d_head, self.spec.rope_theta, self.spec.rope_scaling, self.spec.rope_factors)
            self._rotary = rotary_tables(max(n, 64), inv)
        return self._rotary[0][:n], self._rotary[1][:n]

    def attention(self, x: np.ndarray, w: dict, allowed, rotary, keep_scores: bool, l: int = 0):
        """Every head at once -> (core.attention.Attended, [n, d] the update after W_O, [h_kv, n, d_head] V)."""
        spec = self.spec
        n, h, h_kv, d_head = len(x), spec.n_heads, spec.n_kv_heads, spec.d_head
        qkv = x @ w["attn.qkv.w"]  # [n, d] x [d, (h + 2 h_kv) d_head] -> [n, (h + 2 h_kv) d_head]
        if "attn.qkv.b" in w:
            qkv += w["attn.qkv.b"]
        self.held(qkv, l, "qkv")
        q = qkv[:, : h * d_head].reshape(n, h, d_head).transpose(1, 0, 2)  # [h, n, d_head]
        k = qkv[:, h * d_head : (h + h_kv) * d_head].reshape(n, h_kv, d_head).transpose(1, 0, 2)  # [h_kv, n, d_head]
        v = qkv[:, (h + h_kv) * d_head :].reshape(n, h_kv, d_head).transpose(1, 0, 2)  # [h_kv, n, d_head]
        if rotary is not None:
            q, k = rotate(q, *rotary), rotate(k, *rotary)
        out = attend(np.ascontiguousarray(q), np.ascontiguousarray(k), np.ascontiguousarray(v), allowed,
                     root=F32(math.sqrt(d_head)), keep_scores=keep_scores)
        if not out.masked.max() < np.inf:  # one pass, no copy: +inf or NaN is Q K^T beyond float32 (-inf is a hidden key)
            self.held(np.where(np.isneginf(out.masked), F32(0), out.masked), l, "scores")
        merged = out.values.transpose(1, 0, 2).reshape(n, h * d_head) @ w["attn.o.w"]  # [n, h d_head] x [h d_head, d] -> [n, d]
        if "attn.o.b" in w:
            merged += w["attn.o.b"]
        return out, self.held(merged, l, "o"), v

    def mlp(self, x: np.ndarray, w: dict, l: int = 0) -> np.ndarray:  # [n, d] -> [n, d]
        return self.held(MLPS[self.spec.mlp](x, w, ACTIVATIONS[self.spec.activation], lambda hidden: self.held(hidden, l, "mlp.in")), l, "mlp.out")

    def held(self, value: np.ndarray, l: int | None, stage: str, norms: bool = False) -> np.ndarray:
        """`value` when float32 held every number of it (and, with `norms`, each row's squared norm, which the views
        compute); else one line naming where the forward pass overflowed and the weights that made it."""
        if np.isfinite(np.einsum("...d,...d->...", value, value) if norms else value).all():
            return value
        what, keys = STAGES[stage]
        layer = "" if l is None else self.weights.layer_name.format(l=l)
        sources = ", ".join(name for key in keys if (name := self.weights.source_names(key if l is None else f"layers.{l}.{key}", 2 if stage == "scores" else None)))
        where = f"in layer {layer} at" if layer else "at"
        raise DataError(f"{self.weights.where}: the forward pass overflows float32 {where} {what} ({sources}): the weights are too large to compute with")

    def forward(self, tokens: Tokens, keep_scores: bool = False, keep_values: bool = False) -> Trace:
        """Every layer over the tokens. `keep_scores`: also keep each head's Q K^T before scaling (--stage scores);
        `keep_values`: each layer's V [h_kv, n, d_head] (what value-weighted attention measures)."""
        from attn_cli.io.blas import threads_for

        spec = self.spec
        threads_for(len(tokens.ids))
        self.weights.passes += 1
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # checked layer by layer: one message, not NumPy's warnings
            x = self.held(self.embeddings(tokens.ids), None, "embeddings", norms=True)  # [n, d]
            n = len(x)
            allowed, rotary = allowed_keys("causal", n) if spec.causal else None, self.rotary(n)
            hidden, traces = [x], []
            for l in range(spec.n_layers):
                w = self.weights.layer(l)
                if spec.pre_norm:  # the updates add to the stream as they are
                    normed = self.held(self.norm(x, w["attn.norm.w"], w.get("attn.norm.b")), l, "attn.norm")
                    att, a, v = self.attention(normed, w, allowed, rotary, keep_scores, l)
                    mid = self.held(x + a, l, "o", norms=True)
                    normed = self.held(self.norm(mid, w["mlp.norm.w"], w.get("mlp.norm.b")), l, "mlp.norm")
                    out = self.held(mid + self.mlp(normed, w, l), l, "mlp.out", norms=True)
                else:  # post-norm: each block's update includes the norm after it
                    att, a, v = self.attention(x, w, allowed, rotary, keep_scores, l)
                    mid = self.held(self.norm(x + a, w["attn.norm.w"], w.get("attn.norm.b")), l, "attn.norm", norms=True)
                    out = self.held(self.norm(mid + self.mlp(mid, w, l), w["mlp.norm.w"], w.get("mlp.norm.b")), l, "mlp.norm", norms=True)
                self.weights.release(l)  # nothing below reads w
                traces.append(LayerTrace(att.masked, att.weights, mid - x, out - mid, scores=att.scores, values=v if keep_values else None))
                hidden.append(out)
                x = out
            output = self.norm(x, self.weights.get("final_norm.w"), self.weights.get("final_norm.b")) if spec.final_norm else x
            self.held(output, None, "final")
        return Trace(tokens, np.stack(hidden), traces, output)

    def run(self, text: str, keep_scores: bool = False) -> Trace:
        return self.forward(self.tokenize(text), keep_scores)

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
        w_u = self.weights.unembedding()  # [V, d]
        out = np.empty((len(rows), len(w_u)), F32)
        for start in range(0, len(w_u), LOGIT_ROWS):
            out[:, start : start + LOGIT_ROWS] = rows @ w_u[start : start + LOGIT_ROWS].T  # [m, d] x [d, c] -> [m, c]
        return out

    def summary(self) -> dict:
        return {"name": self.name, "type": self.kind, "layers": self.n_layers, "heads": self.n_heads, "d_model": self.d_model, "d_k": self.d_k}
