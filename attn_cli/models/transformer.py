"""BERT and GPT-2 forward passes in NumPy, float32 end to end, keeping every layer's attention and updates.

Same arithmetic as Hugging Face `transformers` (BertModel, GPT2Model), written out as in picoGPT:
    BERT (post-LN):  x = LN(x + Attn(x));      x = LN(x + MLP(x))
    GPT-2 (pre-LN):  x = x + Attn(LN(x));      x = x + MLP(LN(x));   output = LN_f(x)
Weights are laid out once at load as [d_in, d_out] (Q, K and V fused into one [d, 3d] matrix),
so each step is one matmul.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError, InputError, reason, short
from attn_cli.models import LayerTrace, Tokens, Trace, checkpoint

F32 = np.float32
NEIGHBOR_CHUNK = 4096  # vocabulary rows scored at a time: [chunk, d] float32
MAX_SIZE = 2**31 - 1  # the largest layer count, size or vocabulary a config may give
MAX_WORDS_TRIED = 10_000  # words tried one by one to name the one a tokenizer fails on


# --- the math ------------------------------------------------------------------------------


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:  # [n, d] -> [n, d]
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    var[np.isinf(var)] = np.nan  # squares beyond float32: NaN (the forward pass then refuses it), not a row normalised to 0
    return centred / np.sqrt(var + F32(eps)) * g + b


def erf(x: np.ndarray) -> np.ndarray:
    """erf to within 1.5e-7 (Abramowitz & Stegun 7.1.26): NumPy has none, and float32 needs no better."""
    a = np.abs(x)
    t = F32(1.0) / (F32(1.0) + F32(0.3275911) * a)
    poly = t * (F32(0.254829592) + t * (F32(-0.284496736) + t * (F32(1.421413741) + t * (F32(-1.453152027) + t * F32(1.061405429)))))
    return np.copysign(F32(1.0) - poly * np.exp(-a * a), x)


def gelu(x: np.ndarray) -> np.ndarray:  # BERT's "gelu": x * Phi(x), exact
    return F32(0.5) * x * (F32(1.0) + erf(x * F32(1 / np.sqrt(2.0))))


def gelu_tanh(x: np.ndarray) -> np.ndarray:  # GPT-2's "gelu_new": the tanh approximation
    return F32(0.5) * x * (F32(1.0) + np.tanh(F32(np.sqrt(2.0 / np.pi)) * (x + F32(0.044715) * x * x * x)))


ACTIVATIONS = {"gelu": gelu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu_fast": gelu_tanh, "relu": lambda x: np.maximum(x, F32(0))}


# Where a forward pass overflowed, for its message: each stage of a layer, and the weights it comes from.
STAGES = {"embeddings": "the embeddings", "ln1": "the first layer norm", "qkv": "the queries, keys and values", "weights": "the attention scores",
          "o": "the attention output", "ln2": "the second layer norm", "fc": "the MLP's hidden layer", "proj": "the MLP output",
          "ln_f": "the final layer norm"}
SOURCES = {
    "bert": {"embeddings": "embeddings", "qkv": "attention.self.query/key/value", "weights": "attention.self.query/key",
             "o": "attention.output.dense", "ln1": "attention.output.LayerNorm", "fc": "intermediate.dense", "proj": "output.dense",
             "ln2": "output.LayerNorm"},
    "gpt2": {"embeddings": "wte, wpe", "ln1": "ln_1", "qkv": "attn.c_attn", "weights": "attn.c_attn", "o": "attn.c_proj", "ln2": "ln_2",
             "fc": "mlp.c_fc", "proj": "mlp.c_proj", "ln_f": "ln_f"},
}


def softmax_rows(scores: np.ndarray) -> np.ndarray:  # [..., n] -> [..., n]; a -inf entry gets exactly 0
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- the model -------------------------------------------------------------------------------


@dataclass
class Transformer:
    """A BERT or GPT-2 checkpoint, ready to run: config numbers, laid-out weights, its tokenizer."""

    name: str
    kind: str  # "bert" | "gpt2"
    folder: Path
    n_layers: int
    n_heads: int
    d_model: int
    d_ff: int
    vocab_size: int
    max_positions: int
    eps: float
    activation: str
    embed: dict  # word [V, d] (a checkpoint.LazyTensor: .rows(ids), .full()), position [P, d], plus type [T, d] and ln_g/ln_b (BERT) or ln_f_g/ln_f_b (GPT-2)
    layers: list[dict]  # per layer: qkv [d, 3d], qkv_b, o [d, d], o_b, fc [d, ff], fc_b, proj [ff, d], proj_b, ln1_g/b, ln2_g/b
    tokenizer: object = field(repr=False)
    config: dict = field(default_factory=dict, repr=False)

    @property
    def causal(self) -> bool:
        return self.kind == "gpt2"

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    def tokenize(self, text: str) -> Tokens:
        try:
            enc = self.tokenizer.encode(text)
        except Exception as e:  # the tokenizers package raises plain Exception: a WordPiece vocabulary without [UNK] meets a word it cannot split
            raise InputError(f"{self.name}'s tokenizer cannot encode {self.unencodable(text)} ({reason(e)})") from None
        if not enc.ids:
            raise InputError("no tokens in the input")
        if len(enc.ids) > self.max_positions:
            raise InputError(f"{len(enc.ids)} tokens, more than the {self.max_positions} positions {self.name} has; split the text")
        return Tokens(list(enc.ids), list(enc.tokens), [bool(s) for s in enc.special_tokens_mask], list(enc.word_ids), list(enc.offsets), text)

    def unencodable(self, text: str) -> str:
        """The first word of `text` the tokenizer fails on, for its message (else "this text")."""
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

    def embeddings(self, ids: list[int]) -> np.ndarray:  # -> [n, d] E, the input of the first layer
        n = len(ids)
        if max(ids) >= self.vocab_size:
            raise DataError(f"{self.name}: the tokenizer gave id {max(ids)}, beyond the {self.vocab_size} embeddings")
        e = self.embed["word"].rows(ids) + self.embed["position"][:n]  # [n, d]
        if self.kind == "bert":
            e = layer_norm(e + self.embed["type"][0], self.embed["ln_g"], self.embed["ln_b"], self.eps)
        return self.held(e, None, "embeddings", norms=True)

    def attention(self, x: np.ndarray, layer: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every head at once: ([H, n, n] scaled masked scores, [H, n, n] weights, [n, d] output after W_O)."""
        n, h, d_k = len(x), self.n_heads, self.d_k
        qkv = self.held(x @ layer["qkv"] + layer["qkv_b"], layer, "qkv")  # [n, d] x [d, 3d] -> [n, 3d]
        q, k, v = qkv.reshape(n, 3, h, d_k).transpose(1, 2, 0, 3)  # 3 x [H, n, d_k]
        scores = (q * F32(1 / np.sqrt(d_k))) @ k.transpose(0, 2, 1)  # [H, n, d_k] x [H, d_k, n] -> [H, n, n]
        if self.causal:
            scores[:, ~np.tri(n, dtype=bool)] = -np.inf  # a query sees itself and earlier keys only
        weights = self.held(softmax_rows(scores), layer, "weights")  # [H, n, n]; masked keys get exactly 0
        heads = weights @ v  # [H, n, n] x [H, n, d_k] -> [H, n, d_k]
        out = heads.transpose(1, 0, 2).reshape(n, h * d_k) @ layer["o"] + layer["o_b"]  # [n, d] x [d, d] -> [n, d]
        return scores, weights, self.held(out, layer, "o")

    def mlp(self, x: np.ndarray, layer: dict) -> np.ndarray:  # [n, d] -> [n, ff] -> [n, d]
        hidden = self.held(ACTIVATIONS[self.activation](x @ layer["fc"] + layer["fc_b"]), layer, "fc")  # [n, ff]
        return self.held(hidden @ layer["proj"] + layer["proj_b"], layer, "proj")

    def forward(self, tokens: Tokens) -> Trace:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # checked stage by stage (held): one message, not NumPy's warnings
            x = self.embeddings(tokens.ids)  # [n, d]
            hidden, traces = [x], []
            for layer in self.layers:
                if self.kind == "bert":  # post-LN: each block's update includes the LayerNorm after it
                    scores, weights, a = self.attention(x, layer)
                    mid = self.held(layer_norm(x + a, layer["ln1_g"], layer["ln1_b"], self.eps), layer, "ln1", norms=True)
                    out = self.held(layer_norm(mid + self.mlp(mid, layer), layer["ln2_g"], layer["ln2_b"], self.eps), layer, "ln2", norms=True)
                else:  # pre-LN: the updates add to the stream as they are
                    normed = self.held(layer_norm(x, layer["ln1_g"], layer["ln1_b"], self.eps), layer, "ln1")
                    scores, weights, a = self.attention(normed, layer)
                    mid = self.held(x + a, layer, "o", norms=True)
                    normed = self.held(layer_norm(mid, layer["ln2_g"], layer["ln2_b"], self.eps), layer, "ln2")
                    out = self.held(mid + self.mlp(normed, layer), layer, "proj", norms=True)
                traces.append(LayerTrace(scores, weights, mid - x, out - mid))
                hidden.append(out)
                x = out
            output = self.held(layer_norm(x, self.embed["ln_f_g"], self.embed["ln_f_b"], self.eps), None, "ln_f") if self.kind == "gpt2" else x
        return Trace(tokens, np.stack(hidden), traces, output)

    def held(self, value: np.ndarray, layer: dict | None, stage: str, norms: bool = False) -> np.ndarray:
        """`value` when float32 held every number of it (and, with `norms`, each row's squared norm, which
        the views compute); else one line naming where the forward pass overflowed."""
        if np.isfinite(np.einsum("...d,...d->...", value, value) if norms else value).all():
            return value
        where, prefix = (f"in layer {layer['name']} at", f"{layer['name']}.") if layer else ("at", "")
        raise DataError(f"{self.folder / checkpoint.WEIGHT_FILE}: the forward pass overflows float32 {where} {STAGES[stage]} "
                        f"({prefix}{SOURCES[self.kind][stage]}): the weights are too large to compute with")

    def run(self, text: str) -> Trace:
        return self.forward(self.tokenize(text))

    def nearest(self, rows: np.ndarray, k: int) -> list[list[str]]:  # [m, d] -> m lists of k tokens
        """The k vocabulary tokens whose input embeddings are nearest by cosine to each row."""
        decode = self.tokenizer.id_to_token
        return [[decode(int(i)) or f"#{i}" for i in row] for row in nearest_rows(rows, self.embed["word"].full(), k)]

    def summary(self) -> dict:
        return {"name": self.name, "type": self.kind, "layers": self.n_layers, "heads": self.n_heads, "d_model": self.d_model, "d_k": self.d_k}


def nearest_rows(rows: np.ndarray, matrix: np.ndarray, k: int) -> np.ndarray:  # [m, d], [V, d] -> [m, k] row indices
    """The k rows of `matrix` nearest by cosine to each of `rows`, scored a chunk at a time (no normalised copy of the matrix)."""
    rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), F32(1e-12))  # [m, d]
    best_score = np.full((len(rows), 0), -np.inf, F32)
    best_index = np.zeros((len(rows), 0), np.int64)
    for start in range(0, len(matrix), NEIGHBOR_CHUNK):
        chunk = matrix[start : start + NEIGHBOR_CHUNK]  # [c, d]
        with np.errstate(over="ignore", invalid="ignore"):  # a row whose norm float32 cannot hold: never a nearest token
            sims = rows @ chunk.T / np.maximum(np.linalg.norm(chunk, axis=1), F32(1e-12))  # [m, d] x [d, c] -> [m, c]
        sims[~np.isfinite(sims)] = -np.inf
        scores = np.concatenate([best_score, sims], axis=1)
        index = np.concatenate([best_index, np.broadcast_to(np.arange(start, start + len(chunk)), sims.shape)], axis=1)
        keep = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        best_score, best_index = np.take_along_axis(scores, keep, 1), np.take_along_axis(index, keep, 1)
    return best_index


# --- reading a checkpoint -----------------------------------------------------------------------


def _take(weights: dict, name: str, shape: tuple, alternatives: tuple = ()) -> np.ndarray:
    for key in (name, *alternatives):
        if key in weights:
            w = weights[key]
            if isinstance(w, checkpoint.Unreadable):
                raise DataError(w.refusal())
            if w.shape != shape:
                raise DataError(f"tensor {key}: shape {list(w.shape)}, expected {list(shape)}")
            return w if isinstance(w, checkpoint.LazyTensor) else checkpoint.check_finite(key, w)  # a lazy one is checked as it is read
    raise DataError(f"missing tensor {name} (shape {list(shape)})")


def _ln(weights: dict, prefix: str, d: int) -> tuple[np.ndarray, np.ndarray]:  # old BERT checkpoints say gamma/beta
    return (_take(weights, f"{prefix}.weight", (d,), (f"{prefix}.gamma",)), _take(weights, f"{prefix}.bias", (d,), (f"{prefix}.beta",)))


def _int(config: dict, where: Path, *keys: str) -> int:
    """The first of `keys` the config has (its other names: they must agree), a positive whole number."""
    given = [key for key in keys if config.get(key) is not None]
    if not given:
        raise DataError(f"{where}: no {' or '.join(keys)}")
    value = config[given[0]]
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_SIZE:
        raise DataError(f"{where}: {given[0]} must be a whole number from 1 to {MAX_SIZE:,}, not {checkpoint.shown(value)}")
    for other in given[1:]:
        if config[other] != value:
            raise DataError(f"{where}: {given[0]} is {value} but {other} is {checkpoint.shown(config[other])}; they name one number")
    return value


def _text(config: dict, where: Path, key: str, default: str) -> str:
    value = config.get(key, default)
    if not isinstance(value, str):
        raise DataError(f"{where}: {key} must be a string, not {checkpoint.shown(value)}")
    return value


def _epsilon(config: dict, where: Path, key: str, default: float) -> float:
    value = config.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < 1:  # NaN fails the range too
        raise DataError(f"{where}: {key} must be a small number >= 0 (the layer norm's epsilon), not {checkpoint.shown(value)}")
    return float(value)


def stored_layers(weights: dict, prefix: str) -> int:
    """How many layers the file holds: one more than the largest index after `prefix` ("h." -> h.11.attn...)."""
    indices = [name[len(prefix):].partition(".")[0] for name in weights if name.startswith(prefix)]
    return max((int(i) + 1 for i in indices if i.isdigit()), default=0)


def bert_weights(w: dict, n_layers: int, d: int, ff: int, vocab: int, positions: int) -> tuple[dict, list[dict]]:
    def linear(name: str, d_in: int, d_out: int):  # torch Linear keeps [out, in]: lay it out as [in, out]
        return np.ascontiguousarray(_take(w, f"{name}.weight", (d_out, d_in)).T), _take(w, f"{name}.bias", (d_out,))

    g, b = _ln(w, "embeddings.LayerNorm", d)
    types = w.get("embeddings.token_type_embeddings.weight")
    embed = {
        "word": _take(w, "embeddings.word_embeddings.weight", (vocab, d)),
        "position": _take(w, "embeddings.position_embeddings.weight", (positions, d)),
        "type": np.zeros((1, d), F32) if types is None else _take(w, "embeddings.token_type_embeddings.weight", (*types.shape[:1], d)),  # [types, d]; row 0 for one sentence
        "ln_g": g, "ln_b": b,
    }
    layers = []
    for i in range(n_layers):
        p = f"encoder.layer.{i}"
        (wq, bq), (wk, bk), (wv, bv) = (linear(f"{p}.attention.self.{m}", d, d) for m in ("query", "key", "value"))
        o, o_b = linear(f"{p}.attention.output.dense", d, d)
        fc, fc_b = linear(f"{p}.intermediate.dense", d, ff)
        proj, proj_b = linear(f"{p}.output.dense", ff, d)
        ln1, ln2 = _ln(w, f"{p}.attention.output.LayerNorm", d), _ln(w, f"{p}.output.LayerNorm", d)
        layers.append({
            "name": p, "qkv": np.concatenate([wq, wk, wv], axis=1), "qkv_b": np.concatenate([bq, bk, bv]), "o": o, "o_b": o_b,
            "fc": fc, "fc_b": fc_b, "proj": proj, "proj_b": proj_b,
            "ln1_g": ln1[0], "ln1_b": ln1[1], "ln2_g": ln2[0], "ln2_b": ln2[1],
        })
    return embed, layers


def gpt2_weights(w: dict, n_layers: int, d: int, ff: int, vocab: int, positions: int) -> tuple[dict, list[dict]]:
    def conv(name: str, d_in: int, d_out: int):  # GPT-2's Conv1D already keeps [in, out]
        return _take(w, f"{name}.weight", (d_in, d_out)), _take(w, f"{name}.bias", (d_out,))

    g, b = _ln(w, "ln_f", d)
    embed = {"word": _take(w, "wte.weight", (vocab, d)), "position": _take(w, "wpe.weight", (positions, d)), "ln_f_g": g, "ln_f_b": b}
    layers = []
    for i in range(n_layers):
        p = f"h.{i}"
        qkv, qkv_b = conv(f"{p}.attn.c_attn", d, 3 * d)
        o, o_b = conv(f"{p}.attn.c_proj", d, d)
        fc, fc_b = conv(f"{p}.mlp.c_fc", d, ff)
        proj, proj_b = conv(f"{p}.mlp.c_proj", ff, d)
        ln1, ln2 = _ln(w, f"{p}.ln_1", d), _ln(w, f"{p}.ln_2", d)
        layers.append({
            "name": p, "qkv": qkv, "qkv_b": qkv_b, "o": o, "o_b": o_b, "fc": fc, "fc_b": fc_b, "proj": proj, "proj_b": proj_b,
            "ln1_g": ln1[0], "ln1_b": ln1[1], "ln2_g": ln2[0], "ln2_b": ln2[1],
        })
    return embed, layers


def load(spec: str) -> Transformer:
    """The checkpoint at PATH, or NAME from the local Hugging Face cache, ready to run. Every config value
    read is checked for its type, and against the tensors: a config must describe the whole model."""
    folder = checkpoint.resolve(spec)
    config = checkpoint.read_config(folder)
    where = folder / "config.json"
    kind = config["model_type"]
    if kind == "bert":
        layers_key, layer_prefix = "num_hidden_layers", "encoder.layer."
        n_layers, n_heads, d = _int(config, where, layers_key), _int(config, where, "num_attention_heads"), _int(config, where, "hidden_size")
        ff, positions = _int(config, where, "intermediate_size"), _int(config, where, "max_position_embeddings")
        activation, eps = _text(config, where, "hidden_act", "gelu"), _epsilon(config, where, "layer_norm_eps", 1e-12)
        if (position := _text(config, where, "position_embedding_type", "absolute")) != "absolute":
            raise DataError(f"{where}: position_embedding_type {position!r}; attn runs absolute positions only")
    else:  # GPT-2 also answers to BERT's names for these (GPT2Config.attribute_map)
        layers_key, layer_prefix = "n_layer", "h."
        n_layers, n_heads = _int(config, where, "n_layer", "num_hidden_layers"), _int(config, where, "n_head", "num_attention_heads")
        d = _int(config, where, "n_embd", "hidden_size")
        ff = _int(config, where, "n_inner") if config.get("n_inner") is not None else 4 * d  # null: 4 d
        positions = _int(config, where, "n_positions" if config.get("n_positions") is not None else "n_ctx")  # n_ctx: older configs
        activation, eps = _text(config, where, "activation_function", "gelu_new"), _epsilon(config, where, "layer_norm_epsilon", 1e-5)
    vocab = _int(config, where, "vocab_size")
    if d % n_heads:
        raise DataError(f"{where}: d_model {d} is not a multiple of {n_heads} heads")
    if activation not in ACTIVATIONS:
        raise DataError(f"{where}: activation {activation!r} is not supported ({', '.join(ACTIVATIONS)})")
    name = config.get("_name_or_path")
    if name is not None and not isinstance(name, str):
        raise DataError(f"{where}: _name_or_path must be a string, not {checkpoint.shown(name)}")
    weights = checkpoint.read_weights(folder)
    weight_file = folder / checkpoint.WEIGHT_FILE
    stored = stored_layers(weights, layer_prefix)
    if stored > n_layers:  # fewer is a missing tensor, named below
        raise DataError(f"{where}: {layers_key} is {n_layers}, but {weight_file} holds {stored} layers ({layer_prefix}0 to {layer_prefix}{stored - 1})")
    lay_out = bert_weights if kind == "bert" else gpt2_weights
    try:
        embed, layers = lay_out(weights, n_layers, d, ff, vocab, positions)
    except DataError as e:
        raise DataError(f"{weight_file}: {e}") from None
    tokenizer = checkpoint.read_tokenizer(folder, config)
    return Transformer(
        name=name if name and not name.startswith("/") else folder.name, kind=kind, folder=folder,
        n_layers=n_layers, n_heads=n_heads, d_model=d, d_ff=ff, vocab_size=vocab, max_positions=positions,
        eps=eps, activation=activation, embed=embed, layers=layers, tokenizer=tokenizer, config=config,
    )
