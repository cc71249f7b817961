"""`--model PATH|NAME`: find the checkpoint, read it with its family's table, and return a Transformer ready to run.

Sources (attn_cli.models.sources): a Hugging Face folder (config.json, safetensors, tokenizer
files), a name in the local Hugging Face cache, a .gguf file, `ollama:NAME[:TAG]` in Ollama's
store, or the name of an installed Python package that ships a .gguf file. Nothing is ever downloaded.
"""

from pathlib import Path

from attn_cli.errors import DataError, InputError
from attn_cli.models import families
from attn_cli.models.transformer import Transformer
from attn_cli.models.weights import Weights


def open_source(spec: str):
    """The Source `--model` names (see attn_cli.models.sources)."""
    from attn_cli.models.sources import folder

    if spec.startswith("ollama:"):
        from attn_cli.models.sources import ollama

        return ollama.load(spec)
    from attn_cli.io.files import user_path

    path = user_path(spec, "--model")
    if path.suffix.lower() == ".gguf" and not path.is_dir():
        from attn_cli.models.sources import gguf

        if not path.exists():
            from attn_cli.io.files import shown_path

            raise InputError(f"{shown_path(spec)}: no such file")
        return gguf.load(path)
    from attn_cli.models.sources import package

    if not path.exists() and package.is_package_name(spec) and folder.cached_snapshot(spec) is None:  # the cache's name first
        shipped = package.resolve(spec)
        if shipped is not None:
            from attn_cli.models.sources import gguf

            return gguf.load(shipped)
    return folder.load(folder.resolve(spec))


def load(spec: str) -> Transformer:
    """The checkpoint at PATH, NAME (the local Hugging Face cache), FILE.gguf or ollama:NAME, ready to run."""
    source = open_source(spec)
    in_folder = Path(source.path).is_dir()
    where = str(Path(source.path) / "config.json") if in_folder else str(source.path)
    family = families.family(source.config.get("model_type"), where)
    spec_ = family.spec(source.config, where)
    weights_at = str(Path(source.path) / "model.safetensors") if in_folder else str(source.path)
    tensors = source.tensors
    if spec_.tied_embeddings:  # the output projection is the embeddings: a stored copy (some files keep one) is not read
        tensors = {name: t for name, t in tensors.items() if not name.endswith("lm_head.weight")}
    weights = Weights(spec_, tensors, family.TENSORS, family.OPTIONAL, weights_at, where, family.LAYER)
    if not spec_.tied_embeddings and "unembed" in family.TENSORS and not weights.has("unembed"):
        raise DataError(f"{weights_at}: the config says the output is not tied to the embeddings, but there is no lm_head.weight")
    weights.prefetch()  # a quantized file's first layers, dequantized on the other threads while the tokenizer is built
    tokenizer = source.tokenizer()
    special = {"bos": source.bos_token, "eos": source.eos_token}
    for key, token_id in (("bos", source.bos_token_id), ("eos", source.eos_token_id)):
        if special[key] is None and isinstance(token_id, int):
            special[key] = tokenizer.id_to_token(token_id)
    return Transformer(source.name, Path(source.path), spec_, weights, tokenizer, source.config, source.chat_template, special)
