"""Gemma 2: a pre-norm decoder with a norm on each side of every block (sandwich norms), norms that scale by 1 + w,
embeddings times sqrt(d), GeGLU (tanh GELU), soft-capped attention scores and logits, and every other layer windowed.

    x = E sqrt(d);   x = x + Norm(Attn(Norm(x)));   x = x + Norm(W_down(gelu_tanh(W_gate x) * W_up x));   output = Norm(x)
    scores = cap tanh((Q K^T / sqrt(query_pre_attn_scalar)) / cap), masked by a window of sliding_window keys on local layers
Defaults are transformers' Gemma2Config's (a GGUF file's are llama.cpp's: attn_cli.models.sources.gguf_arch).
"""

import math

from attn_cli.core.blocks import ACTIVATIONS
from attn_cli.errors import DataError
from attn_cli.models.families import config_bool, config_float, config_int, config_str, llama, shown, vector
from attn_cli.models.spec import Spec

SHORT = "Gemma 2 decoder (soft-caps, alternating windows)"
DESCRIPTION = "Gemma 2 decoder: causal mask, rotary positions, local and global layers, soft-capped scores and logits, sandwich norms, GeGLU MLP"
CAPTION = ("Gemma normalises before and after each block (sandwich norms, RMSNorm): each update is the block's output after its "
           "second norm, and the updates add to the stream exactly, x_l = x_{l-1} + Δ attention + Δ MLP")
LAYER = llama.LAYER
TENSORS = {k: v for k, v in llama.TENSORS.items() if k not in ("attn.qkv.b", "attn.o.b", "unembed")} | {
    "attn.post_norm.w": vector(f"{LAYER}.post_attention_layernorm.weight"),
    "mlp.norm.w": vector(f"{LAYER}.pre_feedforward_layernorm.weight"),
    "mlp.post_norm.w": vector(f"{LAYER}.post_feedforward_layernorm.weight"),
}
OPTIONAL = ()
LAYER_TYPES = ("sliding_attention", "full_attention")


def layer_windows(config: dict, where: str, n_layers: int, pattern: int) -> tuple:
    """Each layer's window: config's layer_types, else every `pattern`-th layer global (transformers' default)."""
    window = config_int(config, "sliding_window", where=where, default=4096)
    types = config.get("layer_types")
    if types is None:
        types = ["sliding_attention" if (l + 1) % pattern else "full_attention" for l in range(n_layers)]
    if not isinstance(types, list) or len(types) != n_layers or any(t not in LAYER_TYPES for t in types):
        raise DataError(f"{where}: layer_types should be {n_layers} of {', '.join(LAYER_TYPES)}, not {shown(types)}")
    return tuple(window if t == "sliding_attention" else None for t in types)


def softcap(config: dict, key: str, default: float | None, where: str) -> float | None:
    return None if config.get(key, default) is None else config_float(config, key, default, low=1e-3, high=1e6, where=where)


def gemma_spec(config: dict, where: str, family: str, description: str, pattern: int, caps: tuple, theta: float, scaling, local_theta) -> Spec:
    """The Spec every Gemma shares; `pattern`: every pattern-th layer global, `caps`: default (attention, final) soft-caps."""
    n_heads, d = config_int(config, "num_attention_heads", where=where), config_int(config, "hidden_size", where=where)
    n_kv = config_int(config, "num_key_value_heads", where=where, default=n_heads)
    d_head = config_int(config, "head_dim", where=where, default=256)
    n_layers = config_int(config, "num_hidden_layers", where=where)
    if n_heads % n_kv:
        raise DataError(f"{where}: {n_heads} query heads cannot share {n_kv} key/value heads evenly")
    if config_bool(config, "use_bidirectional_attention", False, where=where):
        raise DataError(f"{where}: use_bidirectional_attention is true; attn runs Gemma as a decoder only")
    scalar = config_float(config, "query_pre_attn_scalar", 256, low=1e-6, high=1e9, where=where)
    return Spec(
        family=family, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv, d_model=d, d_head=d_head,
        d_ff=config_int(config, "intermediate_size", where=where), vocab_size=config_int(config, "vocab_size", where=where),
        max_positions=config_int(config, "max_position_embeddings", where=where, default=8192), norm="rms", norm_bias=False,
        eps=config_float(config, "rms_norm_eps", 1e-6, low=0.0, high=1.0, where=where), pre_norm=True, final_norm=True, position="rotary",
        rope_theta=theta, rope_scaling=scaling, mlp="gated",
        activation=config_str(config, "hidden_activation", "gelu_pytorch_tanh", ACTIVATIONS, where=where), causal=True,
        tied_embeddings=config_bool(config, "tie_word_embeddings", True, where=where), description=description,
        update_caption=CAPTION, extra={"layers_key": "num_hidden_layers"}, norm_offset=1.0, embed_scale=math.sqrt(d),
        sandwich_norm=True, query_root=math.sqrt(scalar), attn_softcap=softcap(config, "attn_logit_softcapping", caps[0], where),
        final_softcap=softcap(config, "final_logit_softcapping", caps[1], where), windows=layer_windows(config, where, n_layers, pattern),
        local_rope_theta=local_theta,
    )


def spec(config: dict, where: str = "config.json") -> Spec:
    theta, scaling = llama.rope(config, where, config_int(config, "head_dim", where=where, default=256))
    return gemma_spec(config, where, "gemma2", DESCRIPTION, 2, (50.0, 30.0), theta, scaling, None)
