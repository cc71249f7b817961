"""`attn explain`: direct logit attribution, the logit of one token split exactly into what wrote it.

A decoder's logit for token t at position i is W_U[t] · norm(x_i), where x_i, the residual stream after the last
layer, is a sum of parts: the embeddings, every head's output (its z through its rows of W_O), every MLP's output,
and the attention's output biases. The final norm is not linear, but with its scale frozen at x_i (as
TransformerLens's `decompose_resid` and `logit_attrs` do) it is:

    RMSNorm:    norm(x) = x / r * g,                    r = sqrt(mean(x^2) + eps)
    LayerNorm:  norm(x) = (x - mean(x)) / s * g + b,    s = sqrt(var(x) + eps)   (each part centred; b is a part too)

so each part's share of the logit is W_U[t] · (part / r * g), and the shares sum to the model's own logit. With a
`versus` token, the same split of logit(t) - logit(versus).
"""

import numpy as np

from attn_cli.errors import InputError
from attn_cli.records import Record, ValueRecord

TOP_PARTS = 12  # the largest parts listed in the table


class Part(ValueRecord):
    __slots__ = ("kind", "layer", "head", "logit")

    def __init__(self, kind: str, layer: int | None, head: int | None, logit: float):
        self.kind = kind  # "embed" | "head" | "mlp" | "bias"
        self.layer = layer  # None for the embeddings and the final norm's bias
        self.head = head  # for a head
        self.logit = logit  # its share of the logit (or of the difference)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "layer": self.layer, "head": self.head, "logit": self.logit}

    @property
    def name(self) -> str:
        if self.kind == "head":
            return f"head {self.layer}.{self.head}"
        if self.kind == "mlp":
            return f"MLP {self.layer}"
        if self.kind == "bias":
            return "final norm bias" if self.layer is None else f"attention bias {self.layer}"
        return "embeddings"


class ExplainSettings(Record):
    __slots__ = ("target", "versus", "focus", "chat")

    def __init__(self, target: str | None = None, versus: str | None = None, focus: str | None = None, chat: bool = False):
        self.target = target  # a text that is one token, or id:N (None: the top prediction)
        self.versus = versus  # the same, or None: the plain logit
        self.focus = focus  # the position (default: the last token)
        self.chat = chat


def token_id(model, text: str, option: str) -> int:
    """The vocabulary id a text names: `id:N`, or a text the tokenizer writes as exactly one token (its leading space
    included: ' Mary'). Several tokens are an error that lists them."""
    if text.startswith("id:"):
        try:
            i = int(text[3:])
        except ValueError:
            raise InputError(f"{option} {text!r}: id:N takes a whole number") from None
        if not 0 <= i < model.spec.vocab_size:
            raise InputError(f"{option} {text!r}: {model.name}'s vocabulary has ids 0 to {model.spec.vocab_size - 1}")
        return i
    try:
        ids = model.tokenizer.encode(text, add_special_tokens=False).ids
    except Exception as e:  # a panic in the Rust tokenizer is not an Exception subclass everywhere; see models/pieces
        raise InputError(f"{option} {text!r}: the tokenizer cannot encode it ({e.__class__.__name__})") from None
    if len(ids) != 1:
        from attn_cli.io.files import printable

        pieces = " ".join(f"{printable(model.tokenizer.id_to_token(i) or f'#{i}')!r}" for i in ids) or "none"
        raise InputError(f"{option} {text!r} is {len(ids)} tokens for {model.name}, not one: {pieces}; give one of them, or id:N")
    return ids[0]


def frozen_norm(model, x: np.ndarray):  # x: [d] the stream after the last layer -> (scale [d], centre: bool, bias [d] | None)
    """The final norm as a linear map with its statistics taken at x: part -> (part - centre) * scale (+ bias once)."""
    spec, w = model.spec, model.weights
    g = w.get("final_norm.w") if spec.final_norm else None
    x64 = x.astype(np.float64)
    if not spec.final_norm:
        return np.ones_like(x64), False, None
    if spec.norm == "rms":
        r = np.sqrt(np.mean(x64 * x64) + spec.eps)
        return g.astype(np.float64) / r, False, None
    s = np.sqrt(np.var(x64) + spec.eps)
    b = w.get("final_norm.b")
    return g.astype(np.float64) / s, True, None if b is None else b.astype(np.float64)


def decompose(model, trace, i: int) -> tuple[list[tuple[str, int | None, int | None]], np.ndarray]:
    """The residual stream after the last layer at position i as its parts: (labels, [m, d] float64), summing to it."""
    spec = model.spec
    group = spec.n_heads // spec.n_kv_heads
    labels, parts = [("embed", None, None)], [trace.hidden[0][i].astype(np.float64)]
    for l, layer in enumerate(trace.layers):
        if layer.values is None:
            raise InputError("explain needs each layer's values: the trace was made without them")
        w_o = model.output_maps(l).astype(np.float64)  # [H, d_head, d]
        weights = layer.weights[:, i].astype(np.float64)  # [H, n]: what position i's heads read
        values = np.asarray(layer.values, dtype=np.float64)  # [h_kv, n, d_head]
        z = np.einsum("hn,hnk->hk", weights, np.repeat(values, group, axis=0))  # [H, n] x [H, n, d_head] -> [H, d_head]
        heads = np.einsum("hk,hkd->hd", z, w_o)  # [H, d_head] x [H, d_head, d] -> [H, d]
        labels += [("head", l, h) for h in range(spec.n_heads)]
        parts += list(heads)
        key = f"layers.{l}.attn.o.b"
        if model.weights.has(key):
            bias = model.weights.tensor(key)
            labels.append(("bias", l, None))
            parts.append(bias.astype(np.float64))
        labels.append(("mlp", l, None))
        parts.append(layer.mlp_update[i].astype(np.float64))
    return labels, np.stack(parts)


def explain(model, text: str, settings: ExplainSettings):
    from attn_cli.analysis.predict import position
    from attn_cli.results.explain import ExplainResult

    if getattr(model, "predicts", None) != "next":
        if getattr(model, "predicts", None) == "mask":
            raise InputError(f"{model.name} predicts a [MASK] through a dense layer and a norm before its output: that head is not linear, "
                             "so its logit does not split into parts (attn predict shows its prediction)")
        raise InputError(f"{model.name} has no output head to attribute a logit to (explain takes a decoder)")
    if not model.spec.pre_norm:
        raise InputError(f"{model.name} normalises after each block (post-norm): its stream's parts do not add up to the logit")
    tokens = model.tokenize(text, chat=settings.chat)
    i = position(model, tokens, settings.focus)
    trace = model.forward(tokens, keep_values=True)
    logits = model.lm_logits(trace.hidden[-1][i : i + 1])[0].astype(np.float64)  # [V], the model's own
    target = token_id(model, settings.target, "--target") if settings.target is not None else int(np.argmax(logits))
    versus = token_id(model, settings.versus, "--versus") if settings.versus is not None else None
    labels, parts = decompose(model, trace, i)  # [m], [m, d]
    scale, centre, bias = frozen_norm(model, trace.hidden[-1][i])
    if centre:
        parts = parts - parts.mean(axis=1, keepdims=True)
    ids = [target] if versus is None else [target, versus]
    w_u = unembedding_rows(model, ids)  # [1 or 2, d]
    direction = w_u[0] if versus is None else w_u[0] - w_u[1]  # [d]
    shares = (parts * scale) @ direction  # [m, d] x [d] -> [m]
    components = [Part(kind, layer, head, float(x)) for (kind, layer, head), x in zip(labels, shares)]
    if bias is not None:
        components.append(Part("bias", None, None, float(bias @ direction)))
    out_bias = model.weights.get("unembed.b")
    if out_bias is not None:
        components.append(Part("bias", None, None, float(out_bias[target] - (0 if versus is None else out_bias[versus]))))
    logit = float(logits[target] - (0 if versus is None else logits[versus]))

    def entry(j: int) -> dict:
        piece = model.tokenizer.id_to_token(j) or f"#{j}"
        return {"id": j, "token": model.labels([j], [piece])[0], "piece": piece, "logit": float(logits[j])}

    return ExplainResult(model=model.summary(), tokens=list(tokens.labels), position=i, target=entry(target),
                         versus=None if versus is None else entry(versus), logit=logit,
                         components=components, n_layers=model.n_layers, n_heads=model.n_heads)


def unembedding_rows(model, ids: list[int]) -> np.ndarray:  # -> [len(ids), d] float64: W_U's rows of these tokens
    w = model.weights
    rows = w.rows(ids) if not w.has("unembed") else w.unembedding()[ids]
    return np.asarray(rows, dtype=np.float64)
