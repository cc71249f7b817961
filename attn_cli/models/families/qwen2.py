"""Qwen2 and Qwen2.5: a Llama-family decoder whose Q, K and V projections have biases."""

from attn_cli.errors import DataError
from attn_cli.models.families import llama
from attn_cli.models.spec import Spec

SHORT = "Qwen2-family decoder (Qwen2, Qwen2.5)"
DESCRIPTION = "Qwen2 decoder: causal mask, rotary positions, grouped-query attention, Q/K/V biases, SwiGLU MLP"
TENSORS, LAYER = llama.TENSORS, llama.LAYER
OPTIONAL = ("unembed", "attn.o.b")  # Q, K and V always have biases


def spec(config: dict, where: str = "config.json") -> Spec:
    if config.get("use_sliding_window") is True:
        raise DataError(f"{where}: use_sliding_window is true; attn runs Qwen2 with full attention only")
    return llama.spec(config, where, family="qwen2", description=DESCRIPTION, caption=llama.CAPTION.replace("Llama", "Qwen2"))
