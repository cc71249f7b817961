"""What a transformer checkpoint is made of, as data: the one description the block runner reads.

A family (attn_cli.models.families) turns a config.json into a Spec and names the tensors; the
runner (attn_cli.models.transformer) picks the shared components the Spec names. Nothing else
asks which family a model is.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Spec:
    family: str  # the family's name, as config.json's model_type says it ("bert", "gpt2", "llama", ...)
    n_layers: int
    n_heads: int  # query heads per layer
    n_kv_heads: int  # key/value heads per layer: n_heads / n_kv_heads query heads share one (grouped-query attention)
    d_model: int
    d_head: int  # size of one head's queries, keys and values
    d_ff: int  # the MLP's width
    vocab_size: int
    max_positions: int  # the longest input it takes (its learned positions, or its context length)
    norm: str = "layer"  # "layer" (LayerNorm) | "rms" (RMSNorm)
    norm_bias: bool = True  # the norms have a bias (LayerNorm's beta)
    eps: float = 1e-5
    pre_norm: bool = True  # x + Attn(Norm(x)) (GPT-2, Llama); False: Norm(x + Attn(x)) (BERT, post-LN)
    embed_norm: bool = False  # a norm right after the embeddings (BERT)
    final_norm: bool = True  # a norm after the last block (GPT-2's ln_f, Llama's norm)
    position: str = "learned"  # "learned" (a table of position vectors) | "rotary" (queries and keys turned by position)
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None  # config.json's rope_scaling (None: plain rotary)
    rope_factors: tuple | None = None  # divisors of the rotary frequencies (GGUF rope_freqs)
    mlp: str = "dense"  # "dense": act(x W_in) W_out | "gated": (act(x W_gate) * x W_in) W_out
    activation: str = "gelu"
    causal: bool = True  # a query sees only itself and earlier tokens (a decoder)
    token_types: bool = False  # a table of segment vectors added to the embeddings (BERT)
    tied_embeddings: bool = True  # the output projection is the input embeddings (transposed)
    description: str = ""  # one line: what kind of model this is, for `model info`
    update_caption: str = ""  # how to read its per-layer updates, under the residual table
    extra: dict = field(default_factory=dict)  # anything else a family records (for `model info`)

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads
