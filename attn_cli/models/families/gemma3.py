"""Gemma 3 (text): Gemma 2's blocks with q/k RMSNorm per head instead of the soft-caps, five local layers to one global,
and a RoPE base of its own for the local layers (10,000; the global layers' is 1,000,000, scaled in the larger models).

    q = Norm_q(x W_Q), k = Norm_k(x W_K) per head, turned by the layer's RoPE; the rest is Gemma 2's (gemma2.py)
Defaults are transformers' Gemma3TextConfig's (a GGUF file's are llama.cpp's: attn_cli.models.sources.gguf_arch).
"""

from attn_cli.errors import DataError
from attn_cli.models.families import config_float, gemma2, llama, vector
from attn_cli.models.spec import Spec

SHORT = "Gemma 3 decoder (local and global layers)"
DESCRIPTION = "Gemma 3 decoder: causal mask, rotary positions, 5 local layers to 1 global, q/k RMSNorm, sandwich norms, GeGLU MLP"
LAYER = gemma2.LAYER
TENSORS = gemma2.TENSORS | {
    "attn.q_norm.w": vector(f"{LAYER}.self_attn.q_norm.weight"),
    "attn.k_norm.w": vector(f"{LAYER}.self_attn.k_norm.weight"),
}
OPTIONAL = ()


def spec(config: dict, where: str = "config.json") -> Spec:
    parameters = config.get("rope_parameters")
    if isinstance(parameters, dict) and "full_attention" in parameters:  # transformers 5: one entry per layer type
        full, local = parameters.get("full_attention") or {}, parameters.get("sliding_attention") or {}
        if not isinstance(full, dict) or not isinstance(local, dict):
            raise DataError(f"{where}: rope_parameters' full_attention and sliding_attention should be objects")
        theta, scaling = llama.rope({"rope_parameters": {"rope_theta": 1_000_000.0} | full}, where)
        local_theta = config_float({"rope_theta": 10_000.0} | local, "rope_theta", None, low=1.0, high=1e12, where=where)
        if local.get("rope_type", "default") != "default":
            raise DataError(f"{where}: rope scaling of the local layers is not supported")
    else:  # transformers 4: rope_theta, rope_scaling (global layers), rope_local_base_freq
        theta, scaling = llama.rope({"rope_theta": 1_000_000.0} | {k: v for k, v in config.items() if k in ("rope_theta", "rope_scaling")}, where)
        local_theta = config_float(config, "rope_local_base_freq", 10_000.0, low=1.0, high=1e12, where=where)
    pattern = config.get("sliding_window_pattern", 6)
    if not isinstance(pattern, int) or isinstance(pattern, bool) or pattern < 1:
        raise DataError(f"{where}: sliding_window_pattern should be a positive whole number")
    return gemma2.gemma_spec(config, where, "gemma3_text", DESCRIPTION, pattern, (None, None), theta, scaling, local_theta).replace(qk_norm=True)
