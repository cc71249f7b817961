"""GPT-2 and its kin: pre-LN decoder, learned positions, causal mask, a fused Q/K/V (Conv1D, [in, out]).

    x = E_word + E_pos;   x = x + Attn(LN(x));   x = x + MLP(LN(x));   output = LN_f(x)
"""

from attn_cli.core.blocks import ACTIVATIONS
from attn_cli.errors import DataError
from attn_cli.models.families import config_float, config_int, config_str, conv1d, table, vector
from attn_cli.models.spec import Spec

SHORT = "GPT-2-family decoder (causal mask)"
DESCRIPTION = "GPT-2 decoder: causal mask"
CAPTION = "GPT-2 normalises before each block (pre-LN): the updates add to the stream exactly, x_l = x_{l-1} + Δ attention + Δ MLP"


def spec(config: dict, where: str = "config.json") -> Spec:
    # GPT-2 also answers to BERT's names for these (GPT2Config.attribute_map): where both are given they must agree
    n_heads, d = config_int(config, "n_head", "num_attention_heads", where=where), config_int(config, "n_embd", "hidden_size", where=where)
    if d % n_heads:
        raise DataError(f"{where}: d_model {d} is not a multiple of {n_heads} heads")
    return Spec(
        family="gpt2", n_layers=config_int(config, "n_layer", "num_hidden_layers", where=where), n_heads=n_heads, n_kv_heads=n_heads,
        d_model=d, d_head=d // n_heads, d_ff=config_int(config, "n_inner", where=where, default=4 * d),
        vocab_size=config_int(config, "vocab_size", where=where),
        max_positions=config_int(config, "n_positions" if config.get("n_positions") is not None else "n_ctx", where=where),  # n_ctx: older configs
        norm="layer", eps=config_float(config, "layer_norm_epsilon", 1e-5, low=0.0, high=1.0, where=where), pre_norm=True,
        embed_norm=False, final_norm=True, position="learned", mlp="dense",
        activation=config_str(config, "activation_function", "gelu_new", ACTIVATIONS, where=where), causal=True,
        description=DESCRIPTION, update_caption=CAPTION, extra={"layers_key": "n_layer"},
    )


LAYER = "h.{l}"
TENSORS = {
    "embed.tokens": table("wte.weight"),
    "embed.positions": table("wpe.weight"),
    "final_norm.w": vector("ln_f.weight"),
    "final_norm.b": vector("ln_f.bias"),
    "attn.norm.w": vector(f"{LAYER}.ln_1.weight"),
    "attn.norm.b": vector(f"{LAYER}.ln_1.bias"),
    "attn.qkv.w": conv1d(f"{LAYER}.attn.c_attn.weight"),
    "attn.qkv.b": vector(f"{LAYER}.attn.c_attn.bias"),
    "attn.o.w": conv1d(f"{LAYER}.attn.c_proj.weight"),
    "attn.o.b": vector(f"{LAYER}.attn.c_proj.bias"),
    "mlp.norm.w": vector(f"{LAYER}.ln_2.weight"),
    "mlp.norm.b": vector(f"{LAYER}.ln_2.bias"),
    "mlp.in.w": conv1d(f"{LAYER}.mlp.c_fc.weight"),
    "mlp.in.b": vector(f"{LAYER}.mlp.c_fc.bias"),
    "mlp.out.w": conv1d(f"{LAYER}.mlp.c_proj.weight"),
    "mlp.out.b": vector(f"{LAYER}.mlp.c_proj.bias"),
}
OPTIONAL = ()
