"""Llama and its kin (SmolLM/SmolLM2, TinyLlama, Llama 2/3): pre-norm decoder, RMSNorm, rotary positions,
grouped-query attention, a gated MLP (SwiGLU), output tied to the embeddings or not.

    x = E_word;   x = x + Attn(RMSNorm(x)) with Q, K turned by position;   x = x + W_down(silu(W_gate x) * W_up x);   output = RMSNorm(x)
"""

from attn_cli.core.blocks import ACTIVATIONS, ROPE_TYPES
from attn_cli.errors import DataError
from attn_cli.models.families import config_bool, config_float, config_int, config_str, linear, table, vector
from attn_cli.models.spec import Spec

SHORT = "Llama-family decoder (SmolLM2, TinyLlama, Llama 3)"
DESCRIPTION = "Llama decoder: causal mask, rotary positions, grouped-query attention, SwiGLU MLP"
CAPTION = ("Llama normalises before each block (pre-norm, RMSNorm): the updates add to the stream exactly, "
           "x_l = x_{l-1} + Δ attention + Δ MLP")


def rope(config: dict, where: str) -> tuple[float, dict | None]:
    """rope_theta and rope_scaling, from the keys transformers 4 writes or from transformers 5's rope_parameters."""
    parameters = config.get("rope_parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise DataError(f"{where}: rope_parameters should be an object")
    merged = {**(parameters or {}), **{k: config[k] for k in ("rope_theta",) if config.get(k) is not None}}
    theta = config_float(merged, "rope_theta", 10000.0, low=1.0, high=1e12, where=where)
    scaling = config.get("rope_scaling") or {k: v for k, v in (parameters or {}).items() if k != "rope_theta"} or None
    if scaling is not None:
        if not isinstance(scaling, dict):
            raise DataError(f"{where}: rope_scaling should be an object")
        kind = scaling.get("rope_type", scaling.get("type", "default"))
        if kind not in ROPE_TYPES:
            raise DataError(f"{where}: rope scaling {kind!r} is not supported; attn runs {', '.join(ROPE_TYPES)}")
        for key in {"linear": ("factor",), "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}.get(kind, ()):
            config_float(scaling, key, None, low=1e-6, high=1e9, where=f"{where} rope scaling")
        scaling = None if kind == "default" else scaling
    return theta, scaling


def spec(config: dict, where: str = "config.json", family: str = "llama", description: str = DESCRIPTION, caption: str = CAPTION) -> Spec:
    n_heads, d = config_int(config, "num_attention_heads", where=where), config_int(config, "hidden_size", where=where)
    n_kv = config_int(config, "num_key_value_heads", where=where, default=n_heads)
    d_head = config_int(config, "head_dim", where=where, default=d // n_heads)
    if n_heads % n_kv:
        raise DataError(f"{where}: {n_heads} query heads cannot share {n_kv} key/value heads evenly")
    theta, scaling = rope(config, where)
    factors = config.get("rope_freq_factors")  # a GGUF file's rope_freqs (llama.cpp's form of llama3 scaling)
    if factors is not None and (not isinstance(factors, list) or len(factors) != d_head // 2):
        raise DataError(f"{where}: rope_freq_factors should be {d_head // 2} numbers")
    return Spec(
        family=family, n_layers=config_int(config, "num_hidden_layers", where=where), n_heads=n_heads, n_kv_heads=n_kv,
        d_model=d, d_head=d_head, d_ff=config_int(config, "intermediate_size", where=where),
        vocab_size=config_int(config, "vocab_size", where=where),
        max_positions=config_int(config, "max_position_embeddings", where=where, default=2048),
        norm="rms", norm_bias=False, eps=config_float(config, "rms_norm_eps", 1e-6, low=0.0, high=1.0, where=where), pre_norm=True,
        embed_norm=False, final_norm=True, position="rotary", rope_theta=theta, rope_scaling=scaling,
        rope_factors=None if factors is None else tuple(float(f) for f in factors), mlp="gated",
        activation=config_str(config, "hidden_act", "silu", ACTIVATIONS, where=where), causal=True,
        tied_embeddings=config_bool(config, "tie_word_embeddings", False, where=where), description=description, update_caption=caption,
        extra={"layers_key": "num_hidden_layers"},
    )


LAYER = "layers.{l}"
TENSORS = {
    "embed.tokens": table("embed_tokens.weight"),
    "final_norm.w": vector("norm.weight"),
    "unembed": table("lm_head.weight"),
    "attn.norm.w": vector(f"{LAYER}.input_layernorm.weight"),
    "attn.qkv.w": linear(*(f"{LAYER}.self_attn.{m}_proj.weight" for m in "qkv")),
    "attn.qkv.b": vector(*(f"{LAYER}.self_attn.{m}_proj.bias" for m in "qkv")),
    "attn.o.w": linear(f"{LAYER}.self_attn.o_proj.weight"),
    "attn.o.b": vector(f"{LAYER}.self_attn.o_proj.bias"),
    "mlp.norm.w": vector(f"{LAYER}.post_attention_layernorm.weight"),
    "mlp.gate.w": linear(f"{LAYER}.mlp.gate_proj.weight"),
    "mlp.in.w": linear(f"{LAYER}.mlp.up_proj.weight"),
    "mlp.out.w": linear(f"{LAYER}.mlp.down_proj.weight"),
}
OPTIONAL = ("unembed", "attn.qkv.b", "attn.o.b")  # tied embeddings; biases where attention_bias says so
