"""`attn model info`: a checkpoint's sizes and parameters, counted from its tensors (not from the config's claims)."""

from attn_cli.models.transformer import Transformer
from attn_cli.results.models import ModelInfo


def model_info(model: Transformer) -> ModelInfo:
    """Sizes and parameter counts, from the tensors in the checkpoint (not from the config's claims)."""
    spec = model.spec
    d, d_k = spec.d_model, spec.d_head
    counts = model.weights.parameter_counts()
    parameters = {"embeddings": counts["embeddings"], "attention": counts["attention"], "mlp": counts["mlp"], "layer_norms": counts["norms"]}
    if counts["output"]:  # an output projection of its own (not tied to the embeddings)
        parameters["output"] = counts["output"]
    parameters["total"] = sum(parameters.values())
    biases = 3 * d_k if model.weights.has("layers.0.attn.qkv.b") else 0
    group = spec.n_heads // spec.n_kv_heads
    weights = 2 * d * d_k + 2 * d * d_k // group  # W_Q and W_O's share, and its share of the K/V head it reads
    return ModelInfo(
        name=model.name, path=str(model.folder), type=model.kind, mask="causal" if model.causal else "none",
        layers=spec.n_layers, heads=spec.n_heads, d_model=d, d_k=d_k, d_ff=spec.d_ff, vocabulary=spec.vocab_size,
        max_positions=spec.max_positions, activation=spec.activation, description=spec.description, kv_heads=spec.n_kv_heads,
        norm=spec.norm, position=spec.position, mlp=spec.mlp,
        per_head={"w_q": [d, d_k], "w_k": [d, d_k], "w_v": [d, d_k], "w_o": [d_k, d], "weights": weights, "biases": biases},
        parameters=parameters,
    )
