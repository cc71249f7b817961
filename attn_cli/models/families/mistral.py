"""Mistral: a Llama-family decoder (its tensors and blocks are Llama's); a sliding window of attention, which
sentences shorter than the window never reach."""

from attn_cli.errors import DataError
from attn_cli.models.families import llama
from attn_cli.models.spec import Spec

SHORT = "Mistral decoder"
DESCRIPTION = "Mistral decoder: causal mask, rotary positions, grouped-query attention, SwiGLU MLP"
TENSORS, OPTIONAL, LAYER = llama.TENSORS, llama.OPTIONAL, llama.LAYER


def spec(config: dict, where: str = "config.json") -> Spec:
    spec_ = llama.spec(config, where, family="mistral", description=DESCRIPTION, caption=llama.CAPTION.replace("Llama", "Mistral"))
    window = config.get("sliding_window")
    if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1):
        raise DataError(f"{where}: sliding_window {window!r} is not a positive integer")
    if window is not None and window < spec_.max_positions:  # beyond the window a query would see fewer keys than attn shows it
        return spec_.replace(max_positions=window)
    return spec_
