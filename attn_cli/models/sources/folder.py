"""Finding and reading a Hugging Face checkpoint on disk: the folder, its config, weights and tokenizer.

Nothing here touches the network. A NAME is looked up in the local Hugging Face cache only.
`safetensors` and `tokenizers` are imported here, so only the checkpoint path pays for them.
"""

import json
import os
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError, InputError

WEIGHT_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"  # a checkpoint in several files: which file holds which tensor
PICKLE_FILES = ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack")
PREFIXES = ("bert.", "transformer.", "model.")  # task heads (BertForMaskedLM, GPT2LMHeadModel) nest the base model


def hub_cache() -> Path:
    """The Hugging Face hub cache as the `huggingface_hub` library finds it (HF_HUB_CACHE, HF_HOME, ~/.cache)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "huggingface"
    return Path(home).expanduser() / "hub"


def cached_snapshot(name: str) -> Path | None:
    """models--ORG--NAME/snapshots/<revision> for `name` (ORG/NAME or NAME), the one refs/main names if present."""
    repo = hub_cache() / ("models--" + name.replace("/", "--"))
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    ref = repo / "refs" / "main"
    if ref.is_file():
        chosen = snapshots / ref.read_text(encoding="utf-8").strip()
        if chosen.is_dir():
            return chosen
    found = sorted((p for p in snapshots.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def resolve(spec: str) -> Path:
    """A model folder from PATH or a NAME in the local Hugging Face cache (never downloaded)."""
    path = Path(spec).expanduser()
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
    return config


class SafeTensor:
    """A tensor left in its (memory-mapped) safetensors file until asked for (see attn_cli.models.sources)."""

    def __init__(self, path: Path, name: str, shape: tuple, dtype: str):
        self.path, self.name, self.shape, self.dtype = path, name, tuple(shape), dtype

    def __repr__(self) -> str:
        return f"SafeTensor({self.name!r}, {list(self.shape)}, {self.dtype})"

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def array(self) -> np.ndarray:  # -> self.shape, float32
        from safetensors import safe_open

        with safe_open(str(self.path), framework="numpy") as f:
            return check_finite(self.name, f.get_tensor(self.name).astype(np.float32, copy=False))

    def rows(self, ids) -> np.ndarray:  # [m] row indices -> [m, d] float32
        from safetensors import safe_open

        with safe_open(str(self.path), framework="numpy") as f:
            view = f.get_slice(self.name)
            rows = {i: view[i : i + 1] for i in dict.fromkeys(int(i) for i in ids)}  # [1, d] each, read from the mapped file
        return check_finite(self.name, np.concatenate([rows[int(i)] for i in ids]).astype(np.float32, copy=False))


def check_finite(name: str, w: np.ndarray) -> np.ndarray:
    if not np.isfinite(w.sum()) and not np.isfinite(w).all():  # one pass in the common case
        raise DataError(f"tensor {name}: holds NaN or infinite values")
    return w


GENERIC_FOLDERS = ("model", "models", "checkpoint", "weights", "snapshot", "final", "")


def folder_name(folder: Path, config: dict) -> str:
    """What to call the model: ORG/NAME of a Hugging Face cache snapshot, else the folder's own name (a config's
    _name_or_path often names the model it was trained from: all-MiniLM-L6-v2 says nreimers/MiniLM-L6-H384-uncased),
    else, for a folder called "model" or the like, _name_or_path."""
    folder = folder.resolve()
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name[len("models--"):].replace("--", "/")
    claimed = config.get("_name_or_path")
    if folder.name.lower() in GENERIC_FOLDERS and isinstance(claimed, str) and claimed and not claimed.startswith(("/", ".")):
        return claimed
    return folder.name


def weight_files(folder: Path) -> list[Path]:
    """model.safetensors, or the files model.safetensors.index.json names."""
    path = folder / WEIGHT_FILE
    if path.is_file():
        return [path]
    index = folder / INDEX_FILE
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
        except (ValueError, UnicodeDecodeError, RecursionError, AttributeError):
            weight_map = None
        if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
            raise DataError(f"{index}: expected a JSON object with a weight_map of tensor names to file names")
        files = sorted(set(weight_map.values()))
        bad = [f for f in files if "/" in f or "\\" in f or f.startswith(".") or not f.endswith(".safetensors")]
        if bad:
            raise DataError(f"{index}: {bad[0]!r} is not the name of a .safetensors file in the folder")
        return [folder / f for f in files]
    pickles = [name for name in PICKLE_FILES if (folder / name).exists()]
    if pickles:
        raise DataError(f"{folder}: only {pickles[0]}, a pickle that attn will not run; convert it to {WEIGHT_FILE} (save_pretrained(..., safe_serialization=True))")
    raise DataError(f"{folder}: no {WEIGHT_FILE}")


def read_tensors(folder: Path) -> dict[str, SafeTensor]:
    """Every floating-point tensor of the folder's safetensors file(s), by name, left in the file."""
    from safetensors import SafetensorError, safe_open

    tensors = {}
    for path in weight_files(folder):
        try:
            with safe_open(str(path), framework="numpy") as f:
                for name in f.keys():
                    view = f.get_slice(name)
                    dtype = view.get_dtype()
                    if dtype.startswith(("F", "BF")):
                        tensors[name] = SafeTensor(path, name, view.get_shape(), dtype)
        except (SafetensorError, OSError, ValueError, TypeError) as e:
            raise DataError(f"{path}: cannot read the weights ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    return tensors


def load(folder: Path):
    """A model folder as a Source: config.json, the tensors (left in their files), the tokenizer files."""
    from attn_cli.models.sources import Source

    config = read_config(folder)
    settings = tokenizer_settings(folder)
    template = settings.get("chat_template")
    return Source(
        path=folder, name=folder_name(folder, config), config=config,
        tensors=read_tensors(folder), chat_template=template if isinstance(template, str) else None,
        tokenizer_factory=lambda: read_tokenizer(folder, settings),
    )


def strip_prefix(name: str) -> str:
    for prefix in PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def read_tokenizer(folder: Path, settings: dict):
    """The model's own tokenizer: tokenizer.json, else vocab.txt (WordPiece) or vocab.json + merges.txt (byte-level BPE)."""
    tokenizer = _tokenizer_files(folder, settings)
    tokenizer.no_padding()  # one sentence at a time: padding would add [PAD] rows
    tokenizer.no_truncation()  # too long is an error the caller names, not silently cut
    return tokenizer


def _tokenizer_files(folder: Path, settings: dict):
    from tokenizers import Tokenizer

    try:
        if (folder / "tokenizer.json").is_file():
            return Tokenizer.from_file(str(folder / "tokenizer.json"))
        if (folder / "vocab.txt").is_file():  # a WordPiece vocabulary (BERT's)
            from tokenizers.implementations import BertWordPieceTokenizer

            lowercase = settings.get("do_lower_case", True)
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
