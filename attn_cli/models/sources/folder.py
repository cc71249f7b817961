"""A Hugging Face checkpoint folder on disk: the folder (or a name in the local Hugging Face cache), its config, its
safetensors weights (left in the file until read) and its tokenizer files, as a Source.

Nothing here touches the network. `safetensors` and `tokenizers` are imported here, so only the
checkpoint path pays for them. The files are treated as hostile: every value read is checked.
"""

import json
import os
from functools import cache
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError, InputError
from attn_cli.io.files import user_path

WEIGHT_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"  # a checkpoint in several files: which file holds which tensor
PICKLE_FILES = ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack")
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
        raise InputError(f"--model {spec}: no such folder or file, no model of that name in the Hugging Face cache at {hub_cache()}, and no installed package of that name (attn never downloads)")
    return snapshot


MAX_LOOKED_AT = 500  # folders looked into for a model below the one given (a home folder is not searched whole)


def models_below(folder: Path) -> list[Path]:
    """The folders one or two levels below `folder` that hold a config.json (a model folder given one level
    too high, or a Hugging Face cache's models--NAME/snapshots/REV), nearest first, at most three."""
    found, looked = [], 0
    level = [folder]
    for _ in range(3):  # children, grandchildren, great-grandchildren (models--x/snapshots/rev)
        below = []
        for parent in level:
            try:
                children = sorted(p for p in parent.iterdir() if p.is_dir() and not p.name.startswith("."))
            except OSError:
                continue
            for child in children:
                looked += 1
                if looked > MAX_LOOKED_AT:
                    return found
                (found if (child / "config.json").is_file() else below).append(child)
        if found:
            return found[:3]
        level = below
    return found


def read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        below = models_below(folder)
        if below:
            names = " or ".join(f"--model {p}" for p in below)
            raise DataError(f"{folder}: no config.json here, but {'a folder below has' if len(below) == 1 else 'folders below have'} one: {names}")
        raise DataError(f"{folder}: no config.json; a model folder holds config.json, {WEIGHT_FILE} and tokenizer files")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise DataError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(config, dict):
        raise DataError(f"{path}: expected a JSON object")
    return config


# How model.safetensors stores each float dtype attn reads. NumPy has F16, F32 and F64; BF16 and the 8-bit
# floats are read as their bits and widened to float32 here (exactly: float32 holds every one of their values).
STORED = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "BF16": "<u2", "F8_E4M3": "u1", "F8_E5M2": "u1"}


class Unreadable:
    """A tensor attn does not read as weights: integers (BERT's position_ids buffer) or a float format
    it has no conversion for. Refused, naming its dtype, only if a layer needs it."""

    def __init__(self, name: str, shape: tuple, dtype: str):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype

    def refusal(self) -> str:
        return f"tensor {self.name} is stored as {self.dtype}; attn reads weights stored as {', '.join(STORED)}"


def shown(value) -> str:
    """A config value as its JSON text, cut to fit a one-line message."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


class SafeTensor:
    """A tensor left in its safetensors file until asked for (see attn_cli.models.sources); `offset` is where
    its bytes start in the file, read with plain reads (safetensors' own reader says "No such file" of a file it may not read)."""

    def __init__(self, path: Path, name: str, shape: tuple, dtype: str, offset: int):
        self.path, self.name, self.shape, self.dtype, self.offset = path, name, tuple(shape), dtype, offset

    def __repr__(self) -> str:
        return f"SafeTensor({self.name!r}, {list(self.shape)}, {self.dtype})"

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def array(self) -> np.ndarray:  # -> self.shape, float32
        stored = np.empty(self.shape, STORED[self.dtype])
        with self._open() as f:
            f.seek(self.offset)
            self._read_into(f, stored)
        return check_finite(self.name, widen(self.name, stored, self.dtype))

    def rows(self, ids) -> np.ndarray:  # [m] row indices -> [m, d] float32, each row read from the file alone
        ids = [int(i) for i in ids]
        unique = list(dict.fromkeys(ids))
        width = self.size // self.shape[0] * np.dtype(STORED[self.dtype]).itemsize  # bytes of one row
        stored = np.empty((len(unique), self.size // self.shape[0]), STORED[self.dtype])  # [u, d]
        with self._open() as f:
            for k, i in enumerate(unique):
                f.seek(self.offset + i * width)
                self._read_into(f, stored[k])
        place = {i: k for k, i in enumerate(unique)}
        return check_finite(self.name, widen(self.name, stored, self.dtype))[[place[i] for i in ids]]

    def _open(self):
        try:
            return open(self.path, "rb")
        except OSError as e:
            raise DataError(f"{self.path}: cannot read the weights ({e.strerror or e})") from None

    def _read_into(self, f, out: np.ndarray) -> None:
        wanted = out.nbytes
        if wanted and f.readinto(memoryview(out.reshape(-1)).cast("B")) != wanted:
            raise DataError(f"{self.path}: tensor {self.name} ends early; truncated?")


def widen(name: str, stored: np.ndarray, dtype: str) -> np.ndarray:  # -> the same shape, float32
    """Stored values as float32: BF16 is the top 16 bits of a float32; an 8-bit float by its table."""
    if dtype == "BF16":
        return (stored.astype(np.uint32) << 16).view(np.float32)
    if dtype in F8_FORMATS:
        return f8_values(*F8_FORMATS[dtype])[stored]
    with np.errstate(over="ignore", invalid="ignore"):  # F64 beyond float32's range is said below, a NaN by check_finite: not by NumPy
        values = stored.astype(np.float32, copy=False)
    if dtype == "F64" and np.isfinite(stored).all() and not np.isfinite(values).all():
        raise DataError(f"tensor {name}: F64 values beyond float32's range (largest {np.abs(stored).max():.3g})")
    return values


# The 8-bit floats of safetensors (PyTorch's float8_e4m3fn and float8_e5m2): (exponent bits, bias, IEEE-like).
F8_FORMATS = {"F8_E4M3": (4, 7, False), "F8_E5M2": (5, 15, True)}


@cache
def f8_values(exponent_bits: int, bias: int, ieee: bool) -> np.ndarray:  # -> [256] float32: the value of each byte
    """Every 8-bit float from its bits: sign, exponent, mantissa (7 - exponent_bits bits). An all-ones
    exponent is inf (mantissa 0) or NaN when `ieee` (E5M2); E4M3FN has no inf and only S.1111.111 is NaN."""
    byte = np.arange(256)
    mantissa_bits = 7 - exponent_bits
    sign = np.where(byte & 0x80, -1.0, 1.0)
    exponent = (byte >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = byte & ((1 << mantissa_bits) - 1)
    fraction = mantissa / (1 << mantissa_bits)  # [0, 1)
    magnitude = np.where(exponent == 0, fraction * 2.0 ** (1 - bias), (1 + fraction) * 2.0 ** (exponent - bias))  # subnormal, normal
    top = exponent == (1 << exponent_bits) - 1
    if ieee:
        magnitude = np.where(top, np.where(mantissa == 0, np.inf, np.nan), magnitude)
    else:
        magnitude = np.where(top & (mantissa == (1 << mantissa_bits) - 1), np.nan, magnitude)
    return (sign * magnitude).astype(np.float32)


def check_finite(name: str, w: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):  # a sum beyond float32 is no bad value: then each value is looked at
        total = w.sum()
    if not np.isfinite(total) and not np.isfinite(w).all():  # one pass in the common case
        raise DataError(f"tensor {name}: holds NaN or infinite values")
    return w


GENERIC_FOLDERS = ("model", "models", "checkpoint", "weights", "snapshot", "final", "")


def folder_name(folder: Path, config: dict) -> str:
    """What to call the model: the name the user gave it (ORG/NAME of a Hugging Face cache snapshot, else the folder's
    name as given, a symlink's own), then for a folder called "model" or the like its card's title (README.md).
    Only a card-less "model" folder falls back on the config's _name_or_path, and then on the folder with its
    parent: _name_or_path often names the model it was trained from (all-MiniLM-L6-v2 says
    nreimers/MiniLM-L6-H384-uncased)."""
    given, real = Path(os.path.abspath(folder)), folder.resolve()
    for path in (given, real):
        if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
            return path.parent.parent.name[len("models--"):].replace("--", "/")
    if given.name.lower() not in GENERIC_FOLDERS:
        return given.name
    claimed = config.get("_name_or_path")
    claimed = claimed if isinstance(claimed, str) and claimed and not claimed.startswith(("/", ".")) else None
    return card_title(folder) or claimed or (f"{given.parent.name}/{given.name}" if given.parent.name else given.name)


MAX_CARD_BYTES = 64 * 1024  # the title is near the top; a card is read no further


def card_title(folder: Path) -> str | None:
    """The first '# ' heading of the folder's model card (README.md, after its YAML front matter), if it is one
    short printable line."""
    try:
        with open(folder / "README.md", "rb") as f:
            text = f.read(MAX_CARD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # front matter: up to the next ---
        lines = lines[next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), len(lines)) + 1:]
    title = next((line[2:].strip() for line in lines if line.startswith("# ")), None)
    if not title or len(title) > 100 or not title.isprintable() or "\ufffd" in title:
        return None
    return title


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


def read_tensors(folder: Path) -> dict:
    """Every tensor of the folder's safetensors file(s), by name, left in its file: a SafeTensor, or Unreadable
    for a dtype attn does not read as weights (refused only if a layer needs it)."""
    from safetensors import SafetensorError, safe_open

    tensors = {}
    for path in weight_files(folder):
        try:
            with open(path, "rb") as f:  # opened here first: safetensors reports an unreadable file as a missing one
                with safe_open(str(path), framework="numpy"):
                    pass  # it checks the header: dtypes, shapes and offsets that fit the file
                for name, (shape, dtype, offset) in tensor_table(f).items():
                    tensors[name] = SafeTensor(path, name, shape, dtype, offset) if dtype in STORED else Unreadable(name, shape, dtype)
        except (SafetensorError, OSError, ValueError, TypeError, KeyError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e).splitlines()[0] if str(e) else type(e).__name__
            raise DataError(f"{path}: cannot read the weights ({why})") from None
    return tensors


def tensor_table(f) -> dict[str, tuple[list, str, int]]:
    """name -> (shape, dtype, where its bytes start in the file), from the header at the start of `f`:
    8 bytes of its length (little-endian), then JSON {name: {"dtype", "shape", "data_offsets"}}."""
    f.seek(0)
    length = int.from_bytes(f.read(8), "little")
    header = json.loads(f.read(length))
    return {name: (entry["shape"], entry["dtype"], 8 + length + entry["data_offsets"][0])
            for name, entry in header.items() if name != "__metadata__"}


def load(folder: Path):
    """A model folder as a Source: config.json, the tensors (left in their files), the tokenizer files."""
    from attn_cli.models.sources import Source

    config = read_config(folder)
    claimed = config.get("_name_or_path")
    if claimed is not None and not isinstance(claimed, str):
        raise DataError(f"{folder / 'config.json'}: _name_or_path must be a string, not {shown(claimed)}")
    settings = tokenizer_settings(folder)
    template = settings.get("chat_template")
    special = {k: special_text(settings.get(f"{k}_token")) for k in ("bos", "eos")}
    return Source(
        path=folder, name=folder_name(folder, config), config=config,
        tensors=read_tensors(folder), chat_template=template if isinstance(template, str) else None,
        tokenizer_factory=lambda: read_tokenizer(folder, settings), bos_token=special["bos"], eos_token=special["eos"],
    )


def special_text(value) -> str | None:
    """A special token as tokenizer_config.json gives it: a string, or {"content": string}."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def read_tokenizer(folder: Path, settings: dict):
    """The model's own tokenizer: tokenizer.json, else vocab.txt (WordPiece) or vocab.json + merges.txt (byte-level BPE)."""
    tokenizer = _tokenizer_files(folder, settings)
    tokenizer.no_padding()  # one sentence at a time: padding would add [PAD] rows
    tokenizer.no_truncation()  # too long is an error the caller names, not silently cut
    return tokenizer


def _tokenizer_files(folder: Path, settings: dict):
    from tokenizers import Tokenizer

    if (folder / "tokenizer.json").is_file():
        files = ["tokenizer.json"]
    elif (folder / "vocab.txt").is_file():  # a WordPiece vocabulary (BERT's)
        files = ["vocab.txt"]
    elif (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
        files = ["vocab.json", "merges.txt"]
    else:
        raise DataError(f"{folder}: no tokenizer; expected tokenizer.json, vocab.txt, or vocab.json with merges.txt")
    for name in files:  # opened here first: the tokenizers package does not say which file it could not read
        try:
            open(folder / name, "rb").close()
        except OSError as e:
            raise DataError(f"{folder / name}: cannot read ({e.strerror or e})") from None
    lowercase = settings.get("do_lower_case", True) if files == ["vocab.txt"] else True
    if not isinstance(lowercase, bool):
        raise DataError(f"{folder / 'tokenizer_config.json'}: do_lower_case must be true or false, not {shown(lowercase)}")
    paths = [str(folder / name) for name in files]
    try:
        if files == ["tokenizer.json"]:
            return Tokenizer.from_file(paths[0])
        if files == ["vocab.txt"]:
            from tokenizers.implementations import BertWordPieceTokenizer

            return BertWordPieceTokenizer(paths[0], lowercase=lowercase)
        from tokenizers.implementations import ByteLevelBPETokenizer

        return ByteLevelBPETokenizer(*paths)
    except Exception as e:  # the tokenizers package raises plain Exception for a bad file
        raise DataError(f"{folder}: cannot read the tokenizer ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


def tokenizer_settings(folder: Path) -> dict:
    path = folder / "tokenizer_config.json"
    try:
        settings = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    return settings if isinstance(settings, dict) else {}
