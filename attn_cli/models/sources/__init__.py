"""Where a model's weights, config and tokenizer come from: files on disk, read and nothing run.

A reader returns a `Source`: a config dict with Hugging Face `config.json` keys, the tensors keyed
by Hugging Face names (``model.layers.0.self_attn.q_proj.weight``, ``model.embed_tokens.weight``,
``lm_head.weight``), and what the tokenizer needs. A tensor stays in its (memory-mapped) file
until asked for:

- ``.name`` (the Hugging Face name), ``.shape`` (torch layout, ``[out, in]`` for a matrix),
  ``.dtype`` (how the file stores it: ``"F32"``, ``"F16"``, ``"Q4_1"``, ...);
- ``.array()``: the whole tensor as float32 NumPy, equal to the Hugging Face weight;
- ``.rows(ids)``: some rows of a matrix as float32 (a sentence's embeddings), reading only those.

Readers: `gguf` (a .gguf file, as llama.cpp writes it) and `ollama` (a model in Ollama's store,
which is a GGUF blob). Nothing here touches the network.
"""

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Source:
    path: Path  # the file the weights are read from
    name: str  # the model's own name (GGUF general.name, else the file's stem)
    config: dict  # Hugging Face config.json keys (model_type, hidden_size, num_key_value_heads, ...)
    tensors: dict  # Hugging Face name -> lazy tensor (.name, .shape, .dtype, .array(), .rows(ids))
    chat_template: str | None = None  # Jinja, as in tokenizer_config.json
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    add_bos_token: bool = False  # the tokenizer puts BOS before a sentence
    add_eos_token: bool = False
    tokenizer_factory: object = field(default=None, repr=False, compare=False)  # () -> tokenizers.Tokenizer

    def tokenizer(self):
        """The model's own tokenizer (a `tokenizers.Tokenizer`), built on each call: keep the one you get."""
        return self.tokenizer_factory()
