"""Where a model's weights, config and tokenizer come from: files on disk, read and nothing run.

A reader returns a `Source`: a config dict with Hugging Face `config.json` keys, the tensors keyed
by Hugging Face names (``model.layers.0.self_attn.q_proj.weight``, ``model.embed_tokens.weight``,
``lm_head.weight``), and what the tokenizer needs. A tensor stays in its (memory-mapped) file
until asked for:

- ``.name`` (the Hugging Face name), ``.shape`` (torch layout, ``[out, in]`` for a matrix),
  ``.dtype`` (how the file stores it: ``"F32"``, ``"F16"``, ``"Q4_1"``, ...);
- ``.array()``: the whole tensor as float32 NumPy, equal to the Hugging Face weight;
- ``.rows(ids)``: some rows of a matrix as float32 (a sentence's embeddings), reading only those.

Readers: `gguf` (a .gguf file, as llama.cpp writes it), `ollama` (a model in Ollama's store,
which is a GGUF blob) and `package` (the .gguf file an installed Python package ships, found by the
package's name without importing it). Nothing here touches the network.
"""

from pathlib import Path

from attn_cli.io.files import one_line
from attn_cli.records import Record


class Source(Record):
    """What a reader found (a plain class: --model defines it on every start)."""

    __slots__ = ("path", "name", "config", "tensors", "chat_template", "bos_token_id", "eos_token_id", "add_bos_token", "add_eos_token",
                 "tokenizer_factory", "bos_token", "eos_token")

    def __init__(self, path: Path, name: str, config: dict, tensors: dict, chat_template: str | None = None, bos_token_id: int | None = None,
                 eos_token_id: int | None = None, add_bos_token: bool = False, add_eos_token: bool = False, tokenizer_factory=None,
                 bos_token: str | None = None, eos_token: str | None = None):
        self.path = path  # the file (or folder) the weights are read from
        self.name = one_line(name)  # what to call the model (see each reader); a file's name for it is one line
        self.config = config  # Hugging Face config.json keys (model_type, hidden_size, num_key_value_heads, ...)
        self.tensors = tensors  # Hugging Face name -> lazy tensor (.name, .shape, .dtype, .array(), .rows(ids))
        self.chat_template = chat_template  # Jinja, as in tokenizer_config.json
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.add_bos_token = add_bos_token  # the tokenizer puts BOS before a sentence
        self.add_eos_token = add_eos_token
        self.tokenizer_factory = tokenizer_factory  # () -> tokenizers.Tokenizer
        self.bos_token = bos_token  # its text, for a chat template ({{ bos_token }}); None: found from bos_token_id
        self.eos_token = eos_token

    def tokenizer(self):
        """The model's own tokenizer (a `tokenizers.Tokenizer`), built on each call: keep the one you get."""
        return self.tokenizer_factory()

    def renamed(self, name: str) -> "Source":
        return Source(**{slot: getattr(self, slot) for slot in self.__slots__} | {"name": name})
