"""Llama and its kin (SmolLM/SmolLM2, TinyLlama, Llama 2/3): pre-norm decoder, RMSNorm, rotary positions,
grouped-query attention, a gated MLP (SwiGLU), output tied to the embeddings or not.

    x = E_word;   x = x + Attn(RMSNorm(x)) with Q, K turned by position;   x = x + W_down(silu(W_gate x) * W_up x);   output = RMSNorm(x)
"""

import math

from attn_cli.core.blocks import ACTIVATIONS, ROPE_TYPES
from attn_cli.errors import DataError
from attn_cli.models.families import config_bool, config_float, config_int, config_str, linear, shown, table, vector
from attn_cli.models.spec import Spec

SHORT = "Llama-family decoder (SmolLM2, TinyLlama, Llama 3)"
DESCRIPTION = "Llama decoder: causal mask, rotary positions, grouped-query attention, SwiGLU MLP"
CAPTION = ("Llama normalises before each block (pre-norm, RMSNorm): the updates add to the stream exactly, "
           "x_l = x_{l-1} + Δ attention + Δ MLP")


def rope(config: dict, where: str, d_head: int) -> tuple[float, dict | None]:
    """rope_theta and rope_scaling, from the keys transformers 4 writes or from transformers 5's rope_parameters
    (`d_head`: the size of a head, which longrope's factors are half of)."""
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
        if kind in ("longrope", "su"):
            scaling = longrope(config, scaling, d_head, where)
        scaling = None if kind == "default" else scaling
    return theta, scaling


def longrope(config: dict, scaling: dict, d_head: int, where: str) -> dict:
    """Longrope's settings, checked: original_max_position_embeddings (in rope_scaling, else beside it, as Phi-3 keeps it),
    long_factor and short_factor (d_head / 2 positive numbers each), and attention_factor and factor where given."""
    original = scaling.get("original_max_position_embeddings") or config.get("original_max_position_embeddings")
    scaling = {**scaling, "original_max_position_embeddings": config_int({"original_max_position_embeddings": original},
                                                                         "original_max_position_embeddings", where=f"{where} rope scaling")}
    for key in ("long_factor", "short_factor"):
        factors = scaling.get(key)
        if factors is None:
            raise DataError(f"{where}: rope scaling is longrope but has no {key}")
        if (not isinstance(factors, list) or len(factors) != d_head // 2
                or not all(isinstance(f, (int, float)) and not isinstance(f, bool) and 0 < f < math.inf for f in factors)):
            raise DataError(f"{where}: rope scaling {key} should be {d_head // 2} positive numbers, not {shown(factors)}")
    for key in ("attention_factor", "factor"):
        if scaling.get(key) is not None:
            config_float(scaling, key, None, low=1e-6, high=1e6, where=f"{where} rope scaling")
    return scaling


def spec(config: dict, where: str = "config.json", family: str = "llama", description: str = DESCRIPTION, caption: str = CAPTION) -> Spec:
    n_heads, d = config_int(config, "num_attention_heads", where=where), config_int(config, "hidden_size", where=where)
    n_kv = config_int(config, "num_key_value_heads", where=where, default=n_heads)
    d_head = config_int(config, "head_dim", where=where, default=d // n_heads)
    if n_heads % n_kv:
        raise DataError(f"{where}: {n_heads} query heads cannot share {n_kv} key/value heads evenly")
    theta, scaling = rope(config, where, d_head)
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
