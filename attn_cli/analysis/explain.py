"""`attn explain`: direct logit attribution, the logit of one token split exactly into what wrote it.

A decoder's logit for token t at position i is W_U[t] · norm_f(x_i), where x_i, the residual stream after the last
layer, is a sum of parts: the embeddings, every head's output (its z through its rows of W_O), every MLP's output,
and the attention's output biases. A norm is not linear, but with its scale frozen at x_i (the point
final_norm.scale of the pass, as TransformerLens's `apply_ln_to_stack` reads ln_final.hook_scale) it is:

    RMSNorm:    norm(x) = x / r * g,                    r = sqrt(mean(x^2) + eps)
    LayerNorm:  norm(x) = (x - mean(x)) / s * g + b,    s = sqrt(var(x) + eps)   (each part centred; b is a part too)

so each part's share of the logit is model.readout(part, frozen=r) at t, and the shares sum to the model's own logit.
Gemma's sandwich norms (a norm on each block's update before it joins the stream) are frozen the same way, at their
own scales at position i (attn.post_norm.scale), so each head's part is its output through that frozen norm. The
family's other quirks (1 + w, the embedding scale) are folded into its weights when it loads. Gemma 2's final soft-cap,
cap tanh(logit / cap), is not linear and is not frozen: the parts sum to the logit before it, which is shown beside the
model's soft-capped one. With a `versus` token, the same split of logit(t) - logit(versus).
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
    __slots__ = ("target", "versus", "focus", "chat", "ablate", "ablate_with")

    def __init__(self, target: str | None = None, versus: str | None = None, focus: str | None = None, chat: bool = False,
                 ablate: list[str] | None = None, ablate_with: str = "zero"):
        self.ablate = ablate  # heads turned off first ("3.1"), see analysis/ablate.py
        self.ablate_with = ablate_with
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


KEPT = ("resid_pre", "attn.z", "attn.post_norm.scale", "mlp_out", "resid_post", "final_norm.scale")  # read at one position


def decompose(model, trace) -> tuple[list[tuple[str, int | None, int | None]], np.ndarray]:
    """The residual stream after the last layer, at the one position the trace kept, as its parts: (labels, [m, d]
    float64), summing to it. Each head's part is its z (as the pass computed it, edits included) through its rows of W_O,
    and through its layer's sandwich norm frozen at the position, where the family has one."""
    spec = model.spec
    labels, parts = [("embed", None, None)], [trace.get("resid_pre", 0)[0].astype(np.float64)]
    for l in range(spec.n_layers):
        w_o = model.output_maps(l).astype(np.float64)  # [H, d_head, d]
        z = trace.get("attn.z", l)[0].astype(np.float64)  # [H, d_head]
        block = list(np.einsum("hk,hkd->hd", z, w_o))  # [H, d_head] x [H, d_head, d] -> [H, d]
        names = [("head", l, h) for h in range(spec.n_heads)]
        key = f"layers.{l}.attn.o.b"
        if model.weights.has(key):
            block.append(model.weights.tensor(key).astype(np.float64))
            names.append(("bias", l, None))
        if spec.sandwich_norm:  # norm(Σ parts) = Σ norm(part) with the scale of the sum
            block = list(model.frozen_norm(np.stack(block), "attn.post_norm", l, trace.get("attn.post_norm.scale", l)[0]))
        labels += names + [("mlp", l, None)]
        parts += block + [trace.get("mlp_out", l)[0].astype(np.float64)]  # the MLP's update as it joins the stream
    return labels, np.stack(parts)


def explain(model, text: str, settings: ExplainSettings):
    from attn_cli.analysis.predict import position
    from attn_cli.results.explain import ExplainResult

    if model.predicts != "next":
        if model.predicts == "mask":
            raise InputError(f"{model.name} predicts a [MASK] through a dense layer and a norm before its output: that head is not linear, "
                             "so its logit does not split into parts (attn predict shows its prediction)")
        raise InputError(f"{model.name} has no output head to attribute a logit to (explain takes a decoder)")
    if not model.spec.pre_norm:
        raise InputError(f"{model.name} normalises after each block (post-norm): its stream's parts do not add up to the logit")
    from attn_cli.analysis.ablate import ablation_edits, parse_ablation
    from attn_cli.models.points import Keep

    ablation = parse_ablation(settings.ablate, settings.ablate_with, model)
    tokens = model.tokenize(text, chat=settings.chat)
    i = position(model, tokens, settings.focus)
    edits = ablation_edits(model, tokens.ids, ablation)
    trace = model.forward(tokens, keep=Keep(points=KEPT, rows=[i]), edits=edits)  # one position of each: no [H, n, n]
    last = trace.get("resid_post", model.n_layers - 1)  # [1, d]
    logits = model.readout(last)[0].astype(np.float64)  # [V], the model's own (ablated, with --ablate)
    target = token_id(model, settings.target, "--target") if settings.target is not None else int(np.argmax(logits))
    versus = token_id(model, settings.versus, "--versus") if settings.versus is not None else None
    ids = [target] if versus is None else [target, versus]
    sign = np.array([1.0, -1.0][: len(ids)])  # the logit, or target's less versus's
    labels, parts = decompose(model, trace)  # [m], [m, d]
    frozen = trace.get("final_norm.scale")[0] if model.spec.final_norm else np.ones(1)  # [1]: the final norm as a linear map
    shares = model.readout(parts, frozen=frozen, ids=ids) @ sign  # [m, d] -> [m, len(ids)] -> [m]
    components = [Part(kind, layer, head, float(x)) for (kind, layer, head), x in zip(labels, shares)]
    bias = float(model.readout_bias(ids) @ sign)
    if model.weights.has("final_norm.b"):
        components.append(Part("bias", None, None, bias))
    logit = float(model.readout(last, ids=ids, cap=False)[0].astype(np.float64) @ sign)  # before a soft-cap: what the parts sum to
    capped = None if model.spec.final_softcap is None else float(logits[ids] @ sign)

    def entry(j: int) -> dict:
        piece = model.tokenizer.id_to_token(j) or f"#{j}"
        return {"id": j, "token": model.labels([j], [piece])[0], "piece": piece, "logit": float(logits[j])}

    return ExplainResult(model=model.summary(), tokens=list(tokens.labels), position=i, target=entry(target),
                         versus=None if versus is None else entry(versus), logit=logit, capped=capped, cap=model.spec.final_softcap,
                         sandwich=model.spec.sandwich_norm,
                         components=components, n_layers=model.n_layers, n_heads=model.n_heads, ablation=ablation)
