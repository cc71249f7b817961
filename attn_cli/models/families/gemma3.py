"""Gemma 3 (text): Gemma 2's blocks with q/k RMSNorm per head instead of the soft-caps, five local layers to one global,
and a RoPE base of its own for the local layers (10,000; the global layers' is 1,000,000, scaled in the larger models).

    q = Norm_q(x W_Q), k = Norm_k(x W_K) per head, turned by the layer's RoPE; the rest is Gemma 2's (gemma2.py)
Defaults are transformers' Gemma3TextConfig's (a GGUF file's are llama.cpp's: attn_cli.models.sources.gguf_arch).
"""

from attn_cli.errors import DataError
from attn_cli.models.families import config_float, config_int, gemma2, llama, shown, vector
from attn_cli.models.spec import Spec

SHORT = "Gemma 3 decoder (local and global layers)"
DESCRIPTION = "Gemma 3 decoder: causal mask, rotary positions, 5 local layers to 1 global, q/k RMSNorm, sandwich norms, GeGLU MLP"
LAYER = gemma2.LAYER
TENSORS = gemma2.TENSORS | {
    "attn.q_norm.w": vector(f"{LAYER}.self_attn.q_norm.weight"),
    "attn.k_norm.w": vector(f"{LAYER}.self_attn.k_norm.weight"),
}
OPTIONAL = ()


LAYER_KINDS = ("full_attention", "sliding_attention")  # transformers 5's rope_parameters: one entry per layer type


def rope(config: dict, where: str, d_head: int) -> tuple[float, dict | None, float]:
    """The global layers' RoPE base and scaling, and the local layers' base (unscaled): from transformers 5's
    rope_parameters, one entry per layer type or one for the global layers (checked as Gemma 2's, llama.rope), else
    from transformers 4's rope_theta, rope_scaling and rope_local_base_freq."""
    parameters = config.get("rope_parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise DataError(f"{where}: rope_parameters should be an object, not {shown(parameters)}")
    if not any(kind in (parameters or {}) for kind in LAYER_KINDS):  # the global layers' alone, as Gemma 2 reads it
        given = {k: config[k] for k in ("rope_theta", "rope_scaling") if config.get(k) is not None}
        theta, scaling = llama.rope(given | {"rope_parameters": {"rope_theta": 1_000_000.0} | (parameters or {})}, where, d_head)
        return theta, scaling, config_float(config, "rope_local_base_freq", 10_000.0, low=1.0, high=1e12, where=where)
    if others := sorted(set(parameters) - set(LAYER_KINDS)):
        raise DataError(f"{where}: rope_parameters has {', '.join(others)} beside {' and '.join(k for k in LAYER_KINDS if k in parameters)}; "
                        f"it should be one object per layer type ({', '.join(LAYER_KINDS)}) or one object")
    full, local = ({} if parameters.get(kind) is None else parameters[kind] for kind in LAYER_KINDS)
    if not isinstance(full, dict) or not isinstance(local, dict):
        raise DataError(f"{where}: rope_parameters' full_attention and sliding_attention should be objects")
    theta, scaling = llama.rope({"rope_parameters": {"rope_theta": 1_000_000.0} | full}, f"{where} rope_parameters.full_attention", d_head)
    local_where = f"{where} rope_parameters.sliding_attention"
    local_theta = config_float({"rope_theta": 10_000.0} | local, "rope_theta", None, low=1.0, high=1e12, where=local_where)
    if (kind := local.get("rope_type", "default")) != "default":
        raise DataError(f"{local_where}: rope_type {shown(kind)} is not supported; attn turns the local layers by plain RoPE (default)")
    return theta, scaling, local_theta


def spec(config: dict, where: str = "config.json") -> Spec:
    theta, scaling, local_theta = rope(config, where, config_int(config, "head_dim", where=where, default=256))
    pattern = config.get("sliding_window_pattern", 6)
    if not isinstance(pattern, int) or isinstance(pattern, bool) or pattern < 1:
        raise DataError(f"{where}: sliding_window_pattern should be a positive whole number")
    return gemma2.gemma_spec(config, where, "gemma3_text", DESCRIPTION, pattern, (None, None), theta, scaling, local_theta).replace(qk_norm=True)
