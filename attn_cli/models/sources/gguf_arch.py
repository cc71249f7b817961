"""GGUF architectures attn reads, as data: general.architecture -> the Hugging Face model it is, its tensors' names and
the defaults llama.cpp assumes where the file says nothing (gguf-py's TensorNameMap, read the other way).

Each architecture names:
- `model_type` and `hf_class`: the config.json it becomes (the family that runs it, attn_cli.models.families);
- `names`: GGUF tensor name -> Hugging Face name where it differs from the Llama names in COMMON ({i}: the layer);
- `permuted`: convert_hf_to_gguf.py interleaved Q and K's rotary halves (LlamaModel.permute), undone on reading;
- `norm_plus_one`: convert stored each norm weight as 1 + w (Gemma's norms scale by 1 + w): read back as w, as
  transformers' Gemma2TensorProcessor does, so a GGUF and a safetensors Gemma are the same to the family;
- `extra(meta) -> dict`: config.json keys the file does not state, from llama.cpp's defaults (llama-model.cpp,
  llm_load_hparams); `meta(key, kind, default)` reads `{arch}.{key}`.
"""

from attn_cli.records import Record

COMMON = {  # GGUF tensor name (gguf-py's MODEL_TENSOR names) -> Hugging Face name, as Llama has them
    "token_embd": "model.embed_tokens",
    "output_norm": "model.norm",
    "output": "lm_head",
    "blk.{i}.attn_norm": "model.layers.{i}.input_layernorm",
    "blk.{i}.attn_q": "model.layers.{i}.self_attn.q_proj",
    "blk.{i}.attn_k": "model.layers.{i}.self_attn.k_proj",
    "blk.{i}.attn_v": "model.layers.{i}.self_attn.v_proj",
    "blk.{i}.attn_output": "model.layers.{i}.self_attn.o_proj",
    "blk.{i}.ffn_norm": "model.layers.{i}.post_attention_layernorm",
    "blk.{i}.ffn_gate": "model.layers.{i}.mlp.gate_proj",
    "blk.{i}.ffn_up": "model.layers.{i}.mlp.up_proj",
    "blk.{i}.ffn_down": "model.layers.{i}.mlp.down_proj",
}
QK_NORMS = {"blk.{i}.attn_q_norm": "model.layers.{i}.self_attn.q_norm", "blk.{i}.attn_k_norm": "model.layers.{i}.self_attn.k_norm"}
SANDWICH = {  # Gemma 2 and 3: a norm before and after each block; ffn_norm is the one before the MLP
    "blk.{i}.post_attention_norm": "model.layers.{i}.post_attention_layernorm",
    "blk.{i}.ffn_norm": "model.layers.{i}.pre_feedforward_layernorm",
    "blk.{i}.post_ffw_norm": "model.layers.{i}.post_feedforward_layernorm",
}
PHI3 = {"blk.{i}.attn_qkv": "model.layers.{i}.self_attn.qkv_proj", "blk.{i}.ffn_up": "model.layers.{i}.mlp.gate_up_proj"}  # fused, as Phi-3 keeps them


class Arch(Record):
    __slots__ = ("model_type", "hf_class", "names", "permuted", "norm_plus_one", "extra", "label")

    def __init__(self, model_type: str, hf_class: str, label: str, names: dict | None = None, permuted: bool = False,
                 norm_plus_one: bool = False, extra=None):
        self.model_type, self.hf_class, self.label = model_type, hf_class, label
        self.names = COMMON | (names or {})
        self.permuted, self.norm_plus_one = permuted, norm_plus_one
        self.extra = extra or (lambda meta, config: {})


def query_pre_attn_scalar(config: dict, layers_27b: int) -> int:
    """llama.cpp's query scale for Gemma 2 and 3 (llm_load_hparams, after gemma_pytorch's config) as transformers' config
    says it, scores / sqrt(this): head_dim, but d_model / n_heads for the 27B model, which it knows by its layer count."""
    if config["num_hidden_layers"] == layers_27b:
        return config["hidden_size"] // config["num_attention_heads"]
    return config["head_dim"]


def layer_types(n_layers: int, pattern: int) -> list[str]:
    """llama.cpp's set_swa_pattern(pattern): layer l is windowed unless l % pattern == pattern - 1 (the last of each group)."""
    return ["sliding_attention" if l % pattern < pattern - 1 else "full_attention" for l in range(n_layers)]


def _gemma2(meta, config: dict) -> dict:
    # llama.cpp (llm_load_hparams, LLM_ARCH_GEMMA2): every other layer windowed (set_swa_pattern(2)), soft-caps 50 and 30
    # unless the file says (llama_hparams' defaults), the query scale of query_pre_attn_scalar (27B: 46 layers)
    return {
        "hidden_activation": "gelu_pytorch_tanh", "sliding_window": meta("attention.sliding_window", int, 4096),
        "layer_types": layer_types(config["num_hidden_layers"], 2),
        "attn_logit_softcapping": meta("attn_logit_softcapping", float, 50.0),
        "final_logit_softcapping": meta("final_logit_softcapping", float, 30.0),
        "query_pre_attn_scalar": query_pre_attn_scalar(config, 46),
    }


def _gemma3(meta, config: dict) -> dict:
    # llama.cpp (llm_load_hparams, LLM_ARCH_GEMMA3): every sixth layer global (set_swa_pattern(6)), the windowed layers' RoPE
    # base 10,000 unless the file says (rope.freq_base_swa) and unscaled (rope_freq_base_train_swa, rope_freq_scale_train_swa), no soft-caps, the query scale of
    # query_pre_attn_scalar (27B: 62 layers); the global layers keep the file's base and rope scaling
    full = {"rope_type": "default", "rope_theta": config["rope_theta"]} | (config["rope_scaling"] or {})
    return {
        "hidden_activation": "gelu_pytorch_tanh", "sliding_window": meta("attention.sliding_window", int, 4096),
        "layer_types": layer_types(config["num_hidden_layers"], 6),
        "rope_parameters": {"full_attention": full, "sliding_attention": {"rope_type": "default", "rope_theta": meta("rope.freq_base_swa", float, 10000.0)}},
        "query_pre_attn_scalar": query_pre_attn_scalar(config, 62),
    }


def _phi3(meta, config: dict) -> dict:
    # llama.cpp (LLM_ARCH_PHI3) runs no sliding window even when the file names one, nor does transformers' GGUF loader
    original = meta("rope.scaling.original_context_length", int, None)
    return {"original_max_position_embeddings": original} if original else {}


ARCHITECTURES = {  # general.architecture -> what it is
    "llama": Arch("llama", "LlamaForCausalLM", "Llama, Mistral, SmolLM", permuted=True),
    "qwen2": Arch("qwen2", "Qwen2ForCausalLM", "Qwen2"),
    "qwen3": Arch("qwen3", "Qwen3ForCausalLM", "Qwen3", names=QK_NORMS),
    "phi3": Arch("phi3", "Phi3ForCausalLM", "Phi-3", names=PHI3, extra=_phi3),
    "gemma2": Arch("gemma2", "Gemma2ForCausalLM", "Gemma 2", names=SANDWICH, norm_plus_one=True, extra=_gemma2),
    "gemma3": Arch("gemma3_text", "Gemma3ForCausalLM", "Gemma 3", names=SANDWICH | QK_NORMS, norm_plus_one=True, extra=_gemma3),
}
EXPERTS = ("ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps")  # a mixture of experts' router and experts


def supported() -> str:
    """The architectures attn reads, for a message: "llama (Llama, Mistral, SmolLM), qwen2 (Qwen2), ..."."""
    return ", ".join(f"{name} ({arch.label})" for name, arch in ARCHITECTURES.items())


def hf_name(gguf_name: str, arch: str = "llama") -> str | None:
    """The Hugging Face name of a GGUF tensor name in a file of `arch`, or None if it is not one attn reads."""
    names = ARCHITECTURES[arch].names if arch in ARCHITECTURES else COMMON
    base, dot, suffix = gguf_name.rpartition(".")
    if not dot or suffix not in ("weight", "bias"):
        return None
    parts = base.split(".")
    if len(parts) >= 3 and parts[0] == "blk" and parts[1].isdigit() and parts[1] == str(int(parts[1])):
        pattern = names.get("blk.{i}." + ".".join(parts[2:]))
        return f"{pattern.format(i=int(parts[1]))}.{suffix}" if pattern else None
    pattern = names.get(base)
    return f"{pattern}.{suffix}" if pattern and "{i}" not in pattern else None
