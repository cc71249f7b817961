"""Phi-3: a Llama-family decoder with Q, K and V in one matrix (qkv_proj) and the MLP's gate and up in one (gate_up_proj,
gate first); the 128k models scale RoPE with longrope ("su"): per-frequency divisors, short or long by the text's length,
and cos, sin times an attention factor.

    [q k v] = x W_qkv;   [g u] = x W_gate_up;   x = x + W_down(silu(g) * u)
"""

from attn_cli.errors import DataError
from attn_cli.models.families import config_float, config_int, linear, llama
from attn_cli.models.spec import Spec

SHORT = "Phi-3 decoder (fused qkv and gate_up)"
DESCRIPTION = "Phi-3 decoder: causal mask, rotary positions (longrope for 128k), fused Q/K/V and gate/up, SwiGLU MLP"
LAYER = llama.LAYER
TENSORS = {k: v for k, v in llama.TENSORS.items() if k not in ("attn.qkv.b", "attn.o.b")} | {
    "attn.qkv.w": linear(f"{LAYER}.self_attn.qkv_proj.weight"),
    "mlp.gate.w": linear(f"{LAYER}.mlp.gate_up_proj.weight", part=(0, 2)),
    "mlp.in.w": linear(f"{LAYER}.mlp.gate_up_proj.weight", part=(1, 2)),
}
OPTIONAL = ("unembed",)


def spec(config: dict, where: str = "config.json") -> Spec:
    if config_float(config, "partial_rotary_factor", 1.0, low=0.0, high=1.1, where=where) != 1.0:
        raise DataError(f"{where}: partial_rotary_factor is not 1; attn runs Phi-3 with RoPE over the whole head")
    spec_ = llama.spec(config, where, family="phi3", description=DESCRIPTION, caption=llama.CAPTION.replace("Llama", "Phi-3"))
    window = config.get("sliding_window")  # transformers' Phi3Attention honours it; a GGUF file leaves it out, as llama.cpp runs none
    if window is not None:
        spec_ = spec_.replace(windows=(config_int(config, "sliding_window", where=where),) * spec_.n_layers)
    return spec_
