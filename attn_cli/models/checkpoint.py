"""Finding and reading a Hugging Face checkpoint on disk: the folder, its config, weights and tokenizer.

Nothing here touches the network. A NAME is looked up in the local Hugging Face cache only.
`safetensors` and `tokenizers` are imported here, so only the checkpoint path pays for them.
"""

import json
import os
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError, InputError
from attn_cli.files import user_path

SUPPORTED = {"bert": "BERT-family encoder (no mask)", "gpt2": "GPT-2-family decoder (causal mask)"}
WEIGHT_FILE = "model.safetensors"
PICKLE_FILES = ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack")
PREFIXES = ("bert.", "transformer.", "model.")  # task heads (BertForMaskedLM, GPT2LMHeadModel) nest the base model
MAX_REF_BYTES = 256  # refs/main holds a commit hash (40 characters)


def hub_cache() -> Path:
    """The Hugging Face hub cache as the `huggingface_hub` library finds it (HF_HUB_CACHE, HF_HOME, ~/.cache)."""
    if os.environ.get("HF_HUB_CACHE"):
        return user_path(os.environ["HF_HUB_CACHE"], "HF_HUB_CACHE")
    if os.environ.get("HF_HOME"):
        return user_path(os.environ["HF_HOME"], "HF_HOME") / "hub"
    return user_path(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "the Hugging Face cache") / "huggingface" / "hub"


def cached_snapshot(name: str) -> Path | None:
    """models--ORG--NAME/snapshots/<revision> for `name` (ORG/NAME or NAME), the one refs/main names if present."""
    repo = hub_cache() / ("models--" + name.replace("/", "--"))
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    revision = main_revision(repo / "refs" / "main")
    if revision is not None and (snapshots / revision).is_dir():
        return snapshots / revision
    found = sorted((p for p in snapshots.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def main_revision(ref: Path) -> str | None:
    """The snapshot refs/main names: one folder name in ASCII, else None (the newest snapshot is used, as
    when refs/main is absent); a damaged or unreadable ref never names a folder outside snapshots/."""
    try:
        if not ref.is_file():
            return None
        with open(ref, "rb") as f:
            revision = f.read(MAX_REF_BYTES).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return revision if revision and revision not in (".", "..") and not set(revision) & {"/", "\\", "\0"} else None


def resolve(spec: str) -> Path:
    """A model folder from PATH or a NAME in the local Hugging Face cache (never downloaded)."""
    path = user_path(spec, "--model")
    if path.is_dir():
        return path
    if path.exists():
        raise InputError(f"--model {spec}: expected a model folder (config.json, model.safetensors, tokenizer files), got a file")
    snapshot = cached_snapshot(spec) if spec.count("/") <= 1 and not spec.startswith((".", "/", "~")) else None
    if snapshot is None:
        raise InputError(f"--model {spec}: no such folder, and no model of that name in the Hugging Face cache at {hub_cache()} (attn never downloads)")
    return snapshot


def read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise DataError(f"{folder}: no config.json; a model folder holds config.json, {WEIGHT_FILE} and tokenizer files")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise DataError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(config, dict):
        raise DataError(f"{path}: expected a JSON object")
    kind = config.get("model_type")
    if kind not in SUPPORTED:
        known = "; ".join(f"{k} ({v})" for k, v in SUPPORTED.items())
        raise DataError(f"{path}: model_type {kind!r} is not supported; attn runs {known}")
    return config


class LazyTensor:
    """A tensor left in the (memory-mapped) file until needed: the vocabulary's embeddings are most
    of a checkpoint, and one sentence needs a few of their rows."""

    def __init__(self, path: Path, name: str, shape: tuple, dtype: str):
        self.path, self.name, self.shape, self.dtype = path, name, tuple(shape), dtype
        self._full = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def rows(self, ids: list[int]) -> np.ndarray:  # -> [len(ids), d] float32
        if self._full is not None:
            return self._full[ids]
        from safetensors import safe_open

        with safe_open(str(self.path), framework="numpy") as f:
            view = f.get_slice(self.name)
            rows = {i: view[i : i + 1] for i in dict.fromkeys(ids)}  # [1, d] each, read from the mapped file
        return check_finite(self.name, np.concatenate([rows[i] for i in ids]).astype(np.float32, copy=False))

    def full(self) -> np.ndarray:  # -> [V, d] float32
        if self._full is None:
            from safetensors import safe_open

            with safe_open(str(self.path), framework="numpy") as f:
                self._full = check_finite(self.name, f.get_tensor(self.name).astype(np.float32, copy=False))
        return self._full


def check_finite(name: str, w: np.ndarray) -> np.ndarray:
    if not np.isfinite(w.sum()) and not np.isfinite(w).all():  # one pass in the common case
        raise DataError(f"tensor {name}: holds NaN or infinite values")
    return w


LAZY = ("embeddings.word_embeddings.weight", "wte.weight")  # BERT's and GPT-2's vocabulary embeddings


def read_weights(folder: Path) -> dict[str, "np.ndarray | LazyTensor"]:
    """Every tensor of model.safetensors as float32 NumPy arrays, names without a task model's prefix;
    the vocabulary's embeddings stay in the file as a LazyTensor."""
    path = folder / WEIGHT_FILE
    if not path.is_file():
        pickles = [name for name in PICKLE_FILES if (folder / name).exists()]
        if pickles:
            raise DataError(f"{folder}: only {pickles[0]}, a pickle that attn will not run; convert it to {WEIGHT_FILE} (save_pretrained(..., safe_serialization=True))")
        raise DataError(f"{folder}: no {WEIGHT_FILE}")
    from safetensors import SafetensorError, safe_open

    weights = {}
    try:
        with safe_open(str(path), framework="numpy") as f:
            for name in f.keys():
                short = strip_prefix(name)
                if short in LAZY:
                    view = f.get_slice(name)
                    weights[short] = LazyTensor(path, name, view.get_shape(), view.get_dtype())
                else:
                    weights[short] = f.get_tensor(name)
    except (SafetensorError, OSError, ValueError, TypeError) as e:
        raise DataError(f"{path}: cannot read the weights ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    floats = {name: w for name, w in weights.items() if isinstance(w, LazyTensor) or w.dtype.kind == "f"}
    return {name: w if isinstance(w, LazyTensor) else w.astype(np.float32, copy=False) for name, w in floats.items()}


def strip_prefix(name: str) -> str:
    for prefix in PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def read_tokenizer(folder: Path, config: dict):
    """The model's own tokenizer: tokenizer.json, else vocab.txt (WordPiece) or vocab.json + merges.txt (byte-level BPE)."""
    tokenizer = _tokenizer_files(folder, config)
    tokenizer.no_padding()  # one sentence at a time: padding would add [PAD] rows
    tokenizer.no_truncation()  # too long is an error the caller names, not silently cut
    return tokenizer


def _tokenizer_files(folder: Path, config: dict):
    from tokenizers import Tokenizer

    try:
        if (folder / "tokenizer.json").is_file():
            return Tokenizer.from_file(str(folder / "tokenizer.json"))
        if config["model_type"] == "bert" and (folder / "vocab.txt").is_file():
            from tokenizers.implementations import BertWordPieceTokenizer

            lowercase = tokenizer_settings(folder).get("do_lower_case", True)
            return BertWordPieceTokenizer(str(folder / "vocab.txt"), lowercase=bool(lowercase))
        if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
            from tokenizers.implementations import ByteLevelBPETokenizer

            return ByteLevelBPETokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    except Exception as e:  # the tokenizers package raises plain Exception for a bad file
        raise DataError(f"{folder}: cannot read the tokenizer ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    raise DataError(f"{folder}: no tokenizer; expected tokenizer.json, vocab.txt, or vocab.json with merges.txt")


def tokenizer_settings(folder: Path) -> dict:
    path = folder / "tokenizer_config.json"
    try:
        settings = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    return settings if isinstance(settings, dict) else {}
