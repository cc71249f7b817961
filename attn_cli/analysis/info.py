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
        parameters=parameters, attention_layers=[
            {"layer": l, "window": spec.window(l), "rope_base": spec.rope_base(l) if spec.position == "rotary" else None} for l in range(spec.n_layers)
        ], features=features(spec),
    )


def features(spec) -> list[str]:
    """What a family's blocks add to the plain pre-norm decoder, as `model info` lists them."""
    found = []
    if spec.qk_norm:
        found.append("q/k RMSNorm per head")
    if spec.sandwich_norm:
        found.append("a norm after each block too (sandwich)")
    if spec.norm_offset:
        found.append(f"norms scale by {spec.norm_offset:g} + w")
    if spec.embed_scale is not None:
        found.append(f"embeddings × {spec.embed_scale:.4g} (√d)")
    if spec.query_root is not None:
        found.append(f"scores / {spec.query_root:.4g} (√query_pre_attn_scalar)")
    if spec.attn_softcap is not None:
        found.append(f"attention soft-cap {spec.attn_softcap:g}")
    if spec.final_softcap is not None:
        found.append(f"logit soft-cap {spec.final_softcap:g}")
    kind = (spec.rope_scaling or {}).get("rope_type", (spec.rope_scaling or {}).get("type"))
    if kind:
        found.append(f"RoPE scaling {kind}")
    return found
