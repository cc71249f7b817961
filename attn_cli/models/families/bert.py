"""BERT and its kin (MiniLM, sentence-transformers encoders): post-LN encoder, learned positions, no mask.

    x = LN(E_word + E_pos + E_type);   x = LN(x + Attn(x));   x = LN(x + MLP(x))
"""

from attn_cli.core.blocks import ACTIVATIONS
from attn_cli.errors import DataError
from attn_cli.models.families import config_float, config_int, config_str, linear, table, vector
from attn_cli.models.spec import Spec

SHORT = "BERT-family encoder (no mask)"
DESCRIPTION = "BERT encoder: every token sees every token"
CAPTION = "BERT normalises after each block (post-LN): an update here is what the block and the LayerNorm after it changed together"


def spec(config: dict, where: str = "config.json") -> Spec:
    n_heads, d = config_int(config, "num_attention_heads", where=where), config_int(config, "hidden_size", where=where)
    config_str(config, "position_embedding_type", "absolute", ("absolute",), where=where)  # relative positions are not run
    if d % n_heads:
        raise DataError(f"{where}: d_model {d} is not a multiple of {n_heads} heads")
    return Spec(
        family="bert", n_layers=config_int(config, "num_hidden_layers", where=where), n_heads=n_heads, n_kv_heads=n_heads,
        d_model=d, d_head=d // n_heads, d_ff=config_int(config, "intermediate_size", where=where),
        vocab_size=config_int(config, "vocab_size", where=where), max_positions=config_int(config, "max_position_embeddings", where=where),
        norm="layer", eps=config_float(config, "layer_norm_eps", 1e-12, low=0.0, high=1.0, where=where), pre_norm=False,
        embed_norm=True, final_norm=False, position="learned", mlp="dense",
        activation=config_str(config, "hidden_act", "gelu", ACTIVATIONS, where=where), causal=False, token_types=True,
        description=DESCRIPTION, update_caption=CAPTION, extra={"layers_key": "num_hidden_layers"},
    )


LAYER = "encoder.layer.{l}"
TENSORS = {
    "embed.tokens": table("embeddings.word_embeddings.weight"),
    "embed.positions": table("embeddings.position_embeddings.weight"),
    "embed.types": table("embeddings.token_type_embeddings.weight"),  # optional: row 0 for one sentence
    "embed.norm.w": vector("embeddings.LayerNorm.weight", alternatives=("embeddings.LayerNorm.gamma",)),
    "embed.norm.b": vector("embeddings.LayerNorm.bias", alternatives=("embeddings.LayerNorm.beta",)),
    "attn.qkv.w": linear(*(f"{LAYER}.attention.self.{m}.weight" for m in ("query", "key", "value"))),
    "attn.qkv.b": vector(*(f"{LAYER}.attention.self.{m}.bias" for m in ("query", "key", "value"))),
    "attn.o.w": linear(f"{LAYER}.attention.output.dense.weight"),
    "attn.o.b": vector(f"{LAYER}.attention.output.dense.bias"),
    "attn.norm.w": vector(f"{LAYER}.attention.output.LayerNorm.weight", alternatives=(f"{LAYER}.attention.output.LayerNorm.gamma",)),
    "attn.norm.b": vector(f"{LAYER}.attention.output.LayerNorm.bias", alternatives=(f"{LAYER}.attention.output.LayerNorm.beta",)),
    "mlp.in.w": linear(f"{LAYER}.intermediate.dense.weight"),
    "mlp.in.b": vector(f"{LAYER}.intermediate.dense.bias"),
    "mlp.out.w": linear(f"{LAYER}.output.dense.weight"),
    "mlp.out.b": vector(f"{LAYER}.output.dense.bias"),
    "mlp.norm.w": vector(f"{LAYER}.output.LayerNorm.weight", alternatives=(f"{LAYER}.output.LayerNorm.gamma",)),
    "mlp.norm.b": vector(f"{LAYER}.output.LayerNorm.bias", alternatives=(f"{LAYER}.output.LayerNorm.beta",)),
}
MLM = "cls.predictions"  # BertForMaskedLM's head: a dense layer, the activation, LayerNorm, then the embeddings (tied) and a bias
TENSORS |= {
    "mlm.dense.w": linear(f"{MLM}.transform.dense.weight"),
    "mlm.dense.b": vector(f"{MLM}.transform.dense.bias"),
    "mlm.norm.w": vector(f"{MLM}.transform.LayerNorm.weight", alternatives=(f"{MLM}.transform.LayerNorm.gamma",)),
    "mlm.norm.b": vector(f"{MLM}.transform.LayerNorm.bias", alternatives=(f"{MLM}.transform.LayerNorm.beta",)),
    "mlm.bias": vector(f"{MLM}.bias"),
}
OPTIONAL = ("embed.types", "mlm.dense.w", "mlm.dense.b", "mlm.norm.w", "mlm.norm.b", "mlm.bias")  # a checkpoint may leave these out
