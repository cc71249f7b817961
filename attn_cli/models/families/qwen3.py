"""Qwen3: a Llama-family decoder whose queries and keys are RMS-normed per head before RoPE, without Qwen2's Q/K/V biases.

    q = RMSNorm_q(x W_Q) per head, k = RMSNorm_k(x W_K) per head, then rotary positions; the rest is Llama's
"""

from attn_cli.errors import DataError
from attn_cli.models.families import llama, vector
from attn_cli.models.spec import Spec

SHORT = "Qwen3 decoder (q/k norms)"
DESCRIPTION = "Qwen3 decoder: causal mask, rotary positions, grouped-query attention, q/k RMSNorm per head, SwiGLU MLP"
LAYER = llama.LAYER
TENSORS = llama.TENSORS | {
    "attn.q_norm.w": vector(f"{LAYER}.self_attn.q_norm.weight"),
    "attn.k_norm.w": vector(f"{LAYER}.self_attn.k_norm.weight"),
}
OPTIONAL = llama.OPTIONAL


def spec(config: dict, where: str = "config.json") -> Spec:
    if config.get("use_sliding_window") is True:
        raise DataError(f"{where}: use_sliding_window is true; attn runs Qwen3 with full attention only")
    # transformers' Qwen3Config: head_dim 128 when the config gives none (not hidden_size / heads)
    config = {"head_dim": 128} | {k: v for k, v in config.items() if v is not None}
    return llama.spec(config, where, family="qwen3", description=DESCRIPTION, caption=llama.CAPTION.replace("Llama", "Qwen3")).replace(qk_norm=True)
