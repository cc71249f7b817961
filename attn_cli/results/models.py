"""The result objects of `model info` and `heads find`, and the rows of a token's path through a checkpoint's layers.

Kept apart from attn_cli.results so the GloVe path does not pay for defining them at start-up.
"""

from dataclasses import asdict, dataclass, field


@dataclass
class ModelInfo:
    name: str
    path: str
    type: str  # "bert" | "gpt2"
    mask: str  # "none" (encoder) | "causal" (decoder)
    layers: int
    heads: int  # per layer
    d_model: int
    d_k: int  # d_model / heads
    d_ff: int
    vocabulary: int
    max_positions: int
    activation: str
    per_head: dict  # W_Q, W_K, W_V shapes [d, d_k], W_O's share [d_k, d]; weights and biases counted
    parameters: dict  # embeddings, attention, mlp, layer_norms, total: counted from the loaded tensors
    kv_heads: int = 0  # key/value heads per layer (fewer than heads: grouped-query attention)
    norm: str = "layer"  # "layer" | "rms"
    position: str = "learned"  # "learned" | "rotary"
    mlp: str = "dense"  # "dense" | "gated"
    description: str = ""  # what kind of model it is, in a line (the view's; not in JSON)
    attention_layers: list = field(default_factory=list)  # per layer: {"layer", "window" (None: every earlier key), "rope_base" (None: no RoPE)}
    features: list = field(default_factory=list)  # what its blocks add to the plain ones ("q/k RMSNorm", "attention soft-cap 50", ...)

    def to_dict(self) -> dict:
        out = asdict(self)
        del out["description"]
        return out


@dataclass
class ResidualRow:
    """One step of a token's residual stream: E (layer 0), then each layer's output."""

    layer: int
    norm: float  # |x_l|
    attn_update: float | None  # |what the layer's attention changed| (None for E)
    mlp_update: float | None  # |what the layer's MLP changed|
    cosine_previous: float | None  # cos(x_l, x_{l-1})
    cosine_input: float  # cos(x_l, E)
    nearest: list  # vocabulary tokens nearest to x_l in the input-embedding space

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class HeadsFound:
    """`attn heads find`: every head of a model ranked on labelled links, beside baselines."""

    file: str
    model: str
    mask: str
    sort: str  # the measure heads are ranked by
    sentences: int
    queries: int  # linked queries scored
    beyond_previous: int  # of them, queries with a key other than the previous word (top_beyond_previous counts these)
    dropped: int  # links that cannot be served (a key after its query under a causal mask, or a word linked to itself)
    heads: list  # [{"layer", "head", "name", "top_on_key", "exact_top", "key_weight", "top_beyond_previous"}], best first
    baselines: list  # [{"name": "previous" | "even", ...}]

    def to_dict(self) -> dict:
        return asdict(self)
