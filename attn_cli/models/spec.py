"""What a transformer checkpoint is made of, as data: the one description the block runner reads.

A family (attn_cli.models.families) turns a config.json into a Spec and names the tensors; the
runner (attn_cli.models.transformer) picks the shared components the Spec names. Nothing else
asks which family a model is.
"""

from attn_cli.records import Record


class Spec(Record):
    """A plain class, not a dataclass: --model defines it on every start, and a dataclass compiles its methods then."""

    __slots__ = (
        "family", "n_layers", "n_heads", "n_kv_heads", "d_model", "d_head", "d_ff", "vocab_size", "max_positions",
        "norm", "norm_bias", "eps", "pre_norm", "embed_norm", "final_norm", "position", "rope_theta", "rope_scaling",
        "rope_factors", "mlp", "activation", "causal", "token_types", "tied_embeddings", "description",
        "update_caption", "extra", "norm_offset", "embed_scale", "qk_norm", "sandwich_norm", "query_root", "attn_softcap",
        "final_softcap", "windows", "local_rope_theta",
    )

    def __init__(
        self, family: str, n_layers: int, n_heads: int, n_kv_heads: int, d_model: int, d_head: int, d_ff: int, vocab_size: int, max_positions: int, *,
        norm: str = "layer", norm_bias: bool = True, eps: float = 1e-5, pre_norm: bool = True,
        embed_norm: bool = False, final_norm: bool = True, position: str = "learned", rope_theta: float = 10000.0,
        rope_scaling: dict | None = None, rope_factors: tuple | None = None, mlp: str = "dense",
        activation: str = "gelu", causal: bool = True, token_types: bool = False, tied_embeddings: bool = True,
        description: str = "", update_caption: str = "", extra: dict | None = None, norm_offset: float = 0.0,
        embed_scale: float | None = None, qk_norm: bool = False, sandwich_norm: bool = False, query_root: float | None = None,
        attn_softcap: float | None = None, final_softcap: float | None = None, windows: tuple | None = None,
        local_rope_theta: float | None = None,
    ):
        self.family = family  # the family's name, as config.json's model_type says it ("bert", "gpt2", "llama", ...)
        self.n_layers = n_layers
        self.n_heads = n_heads  # query heads per layer
        self.n_kv_heads = n_kv_heads  # key/value heads per layer: n_heads / n_kv_heads query heads share one (grouped-query attention)
        self.d_model = d_model
        self.d_head = d_head  # size of one head's queries, keys and values
        self.d_ff = d_ff  # the MLP's width
        self.vocab_size = vocab_size
        self.max_positions = max_positions  # the longest input it takes (its learned positions, or its context length)
        self.norm = norm  # "layer" (LayerNorm) | "rms" (RMSNorm)
        self.norm_bias = norm_bias  # the norms have a bias (LayerNorm's beta)
        self.eps = eps
        self.pre_norm = pre_norm  # x + Attn(Norm(x)) (GPT-2, Llama); False: Norm(x + Attn(x)) (BERT, post-LN)
        self.embed_norm = embed_norm  # a norm right after the embeddings (BERT)
        self.final_norm = final_norm  # a norm after the last block (GPT-2's ln_f, Llama's norm)
        self.position = position  # "learned" (a table of position vectors) | "rotary" (queries and keys turned by position)
        self.rope_theta = rope_theta
        self.rope_scaling = rope_scaling  # config.json's rope_scaling (None: plain rotary)
        self.rope_factors = rope_factors  # divisors of the rotary frequencies (GGUF rope_freqs)
        self.mlp = mlp  # "dense": act(x W_in) W_out | "gated": (act(x W_gate) * x W_in) W_out
        self.activation = activation
        self.causal = causal  # a query sees only itself and earlier tokens (a decoder)
        self.token_types = token_types  # a table of segment vectors added to the embeddings (BERT)
        self.tied_embeddings = tied_embeddings  # the output projection is the input embeddings (transposed)
        self.description = description  # one line: what kind of model this is, for `model info`
        self.update_caption = update_caption  # how to read its per-layer updates, under the residual table
        self.extra = {} if extra is None else extra  # anything else a family records (for `model info`)
        self.norm_offset = norm_offset  # a norm's weight is read as offset + w (Gemma keeps w around 0 and scales by 1 + w)
        self.embed_scale = embed_scale  # the embeddings are multiplied by this (Gemma: sqrt(d_model)); None: as they are
        self.qk_norm = qk_norm  # each head's queries and keys go through an RMSNorm of their own before RoPE (Qwen3, Gemma 3)
        self.sandwich_norm = sandwich_norm  # each block's update is normed again before it is added (Gemma 2 and 3)
        self.query_root = query_root  # Q K^T is divided by this (Gemma: sqrt(query_pre_attn_scalar)); None: sqrt(d_head)
        self.attn_softcap = attn_softcap  # scores become cap tanh(scores / cap) before the mask (Gemma 2); None: no cap
        self.final_softcap = final_softcap  # the same on the logits (Gemma 2)
        self.windows = windows  # per layer: the sliding window (the keys a query sees, its own included) or None (every earlier key)
        self.local_rope_theta = local_rope_theta  # the RoPE base of the windowed layers (Gemma 3); None: rope_theta, as the others

    def window(self, l: int) -> int | None:
        """The sliding window of layer l, or None when its queries see every earlier key."""
        return None if self.windows is None else self.windows[l]

    def rope_base(self, l: int) -> float:
        """The RoPE base of layer l (a windowed layer of Gemma 3 has its own)."""
        return self.local_rope_theta if self.local_rope_theta is not None and self.window(l) is not None else self.rope_theta

    def replace(self, **changes) -> "Spec":
        return Spec(**{name: changes.get(name, getattr(self, name)) for name in self.__slots__})

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads


def stored_shapes(canonical: str, spec: Spec, names: tuple) -> list[tuple]:
    """The shape each of a canonical tensor's source tensors must have, in attn's layout ([in, out] for matrices)."""
    d, dh, ff = spec.d_model, spec.d_head, spec.d_ff
    q, kv = spec.n_heads * dh, spec.n_kv_heads * dh
    parts = {"attn.qkv": [q, kv, kv] if len(names) == 3 else [q + 2 * kv]}
    outs = {"attn.qkv": None, "attn.o": d, "mlp.in": ff, "mlp.gate": ff, "mlp.out": d, "mlm.dense": d}
    ins = {"attn.qkv": d, "attn.o": q, "mlp.in": d, "mlp.gate": d, "mlp.out": ff, "mlm.dense": d}
    base, _, kind = canonical.rpartition(".")
    if canonical in ("embed.tokens", "unembed"):
        return [(spec.vocab_size, d)]
    if canonical == "mlm.bias":
        return [(spec.vocab_size,)]
    if canonical == "embed.positions":
        return [(spec.max_positions, d)]
    if canonical == "embed.types":
        return [(None, d)]
    if base in ("attn.q_norm", "attn.k_norm"):  # one per head, shared by every head
        return [(dh,)]
    if base.endswith("norm"):
        return [(d,)]
    widths = parts.get(base) or [outs[base]]
    return [(ins[base], w) for w in widths] if kind == "w" else [(w,) for w in widths]
