"""A .gguf file (llama.cpp's format) as a `Source`: metadata -> config, tensors -> lazy float32, tokenizer.ggml.* -> a tokenizer.

The header is read here, with struct/NumPy on a memory map: `gguf.GGUFReader` builds a NumPy view
per field and per string, which takes seconds on a vocabulary of 50-150k tokens, before any number
is used. The numbers are `gguf.quants`' (llama.cpp's own package), imported only when a quantized
tensor is first dequantized.

The file is treated as hostile: every length, count and offset is checked against the bytes left
before anything is allocated from it, and anything wrong is a one-line DataError.

Layout (little-endian): "GGUF", u32 version (2 or 3), u64 tensor count, u64 key count; the keys
(string key, u32 type, value); the tensor infos (string name, u32 n_dims, u64 dims[n_dims] with the
fastest-varying first, u32 ggml type, u64 offset); padding to `general.alignment` (32); the data.
"""

import mmap
import struct
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError
from attn_cli.models.sources import Source

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_KEY_BYTES = 65535
MAX_NAME_BYTES = 256  # ggml allows 63; a little room, no more
MAX_COUNT = 1 << 24  # tensors, keys or array items: far above any real model, far below a hostile u64

# value types: id -> (name, struct format or None for string/array)
VALUE_TYPES = {
    0: ("UINT8", "<B"), 1: ("INT8", "<b"), 2: ("UINT16", "<H"), 3: ("INT16", "<h"), 4: ("UINT32", "<I"),
    5: ("INT32", "<i"), 6: ("FLOAT32", "<f"), 7: ("BOOL", "<?"), 8: ("STRING", None), 9: ("ARRAY", None),
    10: ("UINT64", "<Q"), 11: ("INT64", "<q"), 12: ("FLOAT64", "<d"),
}
NUMPY_TYPES = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1", 10: "<u8", 11: "<i8", 12: "<f8"}

# ggml tensor types: id -> (name, elements per block, bytes per block), as gguf.GGML_QUANT_SIZES
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18),
}
PLAIN = ("F32", "F16", "BF16", "F64")  # converted here with NumPy
QUANTIZED = (  # dequantized by gguf.quants
    "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ2_XXS", "IQ2_XS",
    "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "IQ1_M", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4",
)
READABLE = PLAIN + QUANTIZED

ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM"}  # general.architecture -> HF class
PERMUTED = ("llama",)  # convert_hf_to_gguf.py permutes Q/K rows for these (LlamaModel.permute); Qwen2 is stored as HF has it

# GGUF tensor name (gguf-py's TensorNameMap, MODEL_TENSOR names) -> Hugging Face name; {i} is the layer
TENSOR_NAMES = {
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
ROPE_FREQS = "rope_freqs.weight"  # llama3 rope scaling as convert writes it: a divisor per rotary frequency

# tokenizer.ggml.pre -> llama.cpp's split regexes (llama-vocab.cpp), applied one after another, then the byte alphabet
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRE_TOKENIZERS = {
    "default": (r"[\p{P}\$\+<=>\^~\|]+", _GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"),
    "gpt2": (_GPT2,), "gpt-2": (_GPT2,), "mpt": (_GPT2,), "olmo": (_GPT2,),
    "smollm": (r"\p{N}", _GPT2), "starcoder": (r"\p{N}", _GPT2), "refact": (r"\p{N}", _GPT2),
    "llama3": (_LLAMA3,), "llama-v3": (_LLAMA3,), "llama-bpe": (_LLAMA3,), "falcon3": (_LLAMA3,),
    "qwen2": (_QWEN2,), "deepseek-r1-qwen": (_QWEN2,),
}
LLAMA3_PRES = ("llama3", "llama-v3", "llama-bpe", "falcon3")  # llama.cpp: a whole piece in the vocabulary skips the merges; BOS by default
CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values (llama.cpp's LLAMA_TOKEN_TYPE_*)


# --- the header -------------------------------------------------------------------------------------


class TensorInfo:
    """One tensor's entry in the header: where its bytes are, never the bytes themselves."""

    __slots__ = ("name", "dims", "type_id", "offset", "nbytes")

    def __init__(self, name: str, dims: tuple, type_id: int, offset: int, nbytes: int):
        self.name = name
        self.dims = dims  # ggml order: dims[0] varies fastest (a matrix is [in, out])
        self.type_id = type_id
        self.offset = offset  # absolute, in the file
        self.nbytes = nbytes

    @property
    def type_name(self) -> str:
        return GGML_TYPES[self.type_id][0]


class GGUFFile:
    """The parsed header of a .gguf file and a read-only memory map of it."""

    def __init__(self, path: Path, version: int, metadata: dict, value_types: dict, tensors: dict, alignment: int, data_start: int, buffer):
        self.path = path
        self.version = version
        self.metadata = metadata  # key -> int | float | bool | str | list[str] | np.ndarray (numeric arrays)
        self.value_types = value_types  # key -> value type id (for an array: (9, item type id))
        self.tensors = tensors  # GGUF name -> TensorInfo, in file order
        self.alignment = alignment
        self.data_start = data_start
        self.buffer = buffer  # mmap.mmap, or bytes for an empty file

    def raw(self, info: TensorInfo) -> np.ndarray:  # -> [nbytes] uint8, a view of the mapped file
        return np.frombuffer(self.buffer, dtype=np.uint8, count=info.nbytes, offset=info.offset)


class _Reader:
    """A cursor over the mapped bytes that checks every read against the end."""

    def __init__(self, buffer, size: int, path: Path):
        self.buffer, self.size, self.pos, self.path = buffer, size, 0, path

    def fail(self, what: str):
        raise DataError(f"{self.path}: not a valid GGUF file: {what}")

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            self.fail(f"{what} at byte {self.pos:,} runs past the end of the file ({self.size:,} bytes); truncated?")

    def scalar(self, fmt: str, what: str):
        n = struct.calcsize(fmt)
        self.need(n, what)
        (value,) = struct.unpack_from(fmt, self.buffer, self.pos)
        self.pos += n
        return value

    def count(self, what: str, least_bytes_each: int) -> int:
        """A u64 count, refused if that many items of at least `least_bytes_each` bytes cannot fit in what is left."""
        n = self.scalar("<Q", what)
        if n > MAX_COUNT or n * least_bytes_each > self.size - self.pos:
            self.fail(f"{what} is {n:,}, more than the {self.size - self.pos:,} bytes left can hold")
        return n

    def string(self, what: str, limit: int | None = None) -> str:
        n = self.scalar("<Q", f"the length of {what}")
        if limit is not None and n > limit:
            self.fail(f"{what} is {n:,} bytes long (at most {limit:,})")
        self.need(n, what)
        data = self.buffer[self.pos:self.pos + n]
        self.pos += n
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.fail(f"{what} at byte {self.pos - n:,} is not UTF-8")

    def strings(self, n: int, what: str) -> list[str]:
        """n strings in a row: one struct call per string, no NumPy object per item (a vocabulary is 50-150k of them)."""
        buffer, pos, size, out = self.buffer, self.pos, self.size, [None] * n
        unpack = struct.Struct("<Q").unpack_from
        for i in range(n):
            if pos + 8 > size:
                self.pos = pos
                self.need(8, f"item {i:,} of {what}")
            (length,) = unpack(buffer, pos)
            pos += 8
            if length > size - pos:
                self.pos = pos
                self.fail(f"item {i:,} of {what} is {length:,} bytes long, more than is left")
            out[i] = buffer[pos:pos + length]
            pos += length
        self.pos = pos
        try:
            return [b.decode("utf-8") for b in out]
        except UnicodeDecodeError:
            bad = next(i for i, b in enumerate(out) if not _utf8(b))
            self.fail(f"item {bad:,} of {what} is not UTF-8")

    def value(self, type_id: int, what: str):
        if type_id not in VALUE_TYPES:
            self.fail(f"{what} has value type {type_id}, not a GGUF type")
        name, fmt = VALUE_TYPES[type_id]
        if fmt is not None:
            value = self.scalar(fmt, what)
            return bool(value) if type_id == 7 else value
        if name == "STRING":
            return self.string(what)
        item = self.scalar("<I", f"the item type of {what}")
        if item not in VALUE_TYPES:
            self.fail(f"{what} is an array of value type {item}, not a GGUF type")
        if item == 9:
            self.fail(f"{what} is an array of arrays, which no model file holds")
        if item == 8:
            return self.strings(self.count(f"the length of {what}", 8), what)
        dtype = np.dtype(NUMPY_TYPES[item])
        n = self.count(f"the length of {what}", dtype.itemsize)
        values = np.frombuffer(self.buffer, dtype=dtype, count=n, offset=self.pos).copy()
        self.pos += n * dtype.itemsize
        return values.astype(bool) if item == 7 else values


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def read_file(path) -> GGUFFile:
    """Parse a .gguf header (metadata and tensor infos), checking every length, count and offset."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            if size < 24:
                raise DataError(f"{path}: not a GGUF file ({size:,} bytes; a GGUF header alone is 24)")
            buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({e.strerror or e})") from None
    r = _Reader(buffer, size, path)
    if buffer[:4] != MAGIC:
        raise DataError(f"{path}: not a GGUF file (it starts with {bytes(buffer[:4])!r}, not b'GGUF')")
    r.pos = 4
    version = r.scalar("<I", "the version")
    if version not in VERSIONS:
        swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
        if swapped in VERSIONS:
            raise DataError(f"{path}: a big-endian GGUF file; attn reads little-endian GGUF (versions 2 and 3)")
        raise DataError(f"{path}: GGUF version {version} is not supported; attn reads versions 2 and 3")
    n_tensors = r.count("the tensor count", 8 + 4 + 8 + 4 + 8)  # name length, n_dims, a dim, type, offset
    n_keys = r.count("the metadata key count", 8 + 4 + 1)

    metadata, value_types = {}, {}
    for k in range(n_keys):
        key = r.string(f"metadata key {k:,}", MAX_KEY_BYTES)
        if key in metadata:
            r.fail(f"metadata key {key!r} appears twice")
        type_id = r.scalar("<I", f"the value type of {key!r}")
        start = r.pos
        metadata[key] = r.value(type_id, f"metadata {key!r}")
        value_types[key] = (type_id, struct.unpack_from("<I", buffer, start)[0]) if type_id == 9 else type_id

    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if value_types.get("general.alignment", 4) != 4 or not 0 < alignment <= 1 << 16 or alignment & (alignment - 1):
        r.fail(f"general.alignment is {alignment!r}; it must be a power of two (u32)")

    infos = []
    for t in range(n_tensors):
        name = r.string(f"the name of tensor {t:,}", MAX_NAME_BYTES)
        n_dims = r.scalar("<I", f"the dimension count of tensor {name!r}")
        if not 1 <= n_dims <= MAX_DIMS:
            r.fail(f"tensor {name!r} has {n_dims:,} dimensions (1 to {MAX_DIMS})")
        r.need(8 * n_dims, f"the shape of tensor {name!r}")
        dims = struct.unpack_from(f"<{n_dims}Q", buffer, r.pos)
        r.pos += 8 * n_dims
        type_id = r.scalar("<I", f"the type of tensor {name!r}")
        offset = r.scalar("<Q", f"the offset of tensor {name!r}")
        if type_id not in GGML_TYPES:
            r.fail(f"tensor {name!r} has type {type_id}, not a ggml type")
        _, block, block_bytes = GGML_TYPES[type_id]
        elements = 1
        for d in dims:
            if d == 0 or d > size * 256:  # no format packs more than 256 elements into a byte... or close
                r.fail(f"tensor {name!r} has shape {list(dims)}, which no file of {size:,} bytes holds")
            elements *= d
        if dims[0] % block:
            r.fail(f"tensor {name!r} has rows of {dims[0]:,} values, not a multiple of {GGML_TYPES[type_id][0]}'s block of {block}")
        nbytes = elements // block * block_bytes
        if offset % alignment:
            r.fail(f"tensor {name!r} starts at offset {offset:,}, not a multiple of the alignment {alignment}")
        infos.append((name, tuple(dims), type_id, offset, nbytes))

    data_start = -(-r.pos // alignment) * alignment
    tensors = {}
    for name, dims, type_id, offset, nbytes in infos:
        if name in tensors:
            r.fail(f"tensor {name!r} appears twice")
        start = data_start + offset
        if start + nbytes > size:
            raise DataError(
                f"{path}: not a valid GGUF file: tensor {name!r} ({nbytes:,} bytes at {start:,}) runs past the end "
                f"of the file ({size:,} bytes); truncated?"
            )
        tensors[name] = TensorInfo(name, dims, type_id, start, nbytes)
    return GGUFFile(path, version, metadata, value_types, tensors, alignment, data_start, buffer)


# --- tensors ----------------------------------------------------------------------------------------


class GGUFTensor:
    """A tensor left in the mapped file until asked for, dequantized to float32 then, in Hugging Face's layout.

    `order`, for Q and K of a llama-family file, is the row of the file that holds each Hugging
    Face row: convert_hf_to_gguf.py interleaves each head's two rotary halves, and gathering rows
    in this order undoes it."""

    __slots__ = ("name", "gguf_name", "shape", "dtype", "_file", "_info", "_order")

    def __init__(self, name: str, file: GGUFFile, info: TensorInfo, order: np.ndarray | None = None):
        self.name = name
        self.gguf_name = info.name
        self.shape = tuple(reversed(info.dims))  # torch layout: [out, in] for a matrix
        self.dtype = info.type_name
        self._file, self._info, self._order = file, info, order

    def __repr__(self) -> str:
        return f"GGUFTensor({self.name!r}, shape={self.shape}, dtype={self.dtype!r})"

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def array(self) -> np.ndarray:  # -> self.shape, float32
        out = _decode(self._blocks(), self.dtype, self.name)
        if self._order is not None:
            out = out[self._order]
        return _finite(self.name, out.reshape(self.shape))

    def rows(self, ids) -> np.ndarray:  # [m] row indices -> [m, in] float32
        if len(self.shape) != 2:
            raise DataError(f"tensor {self.name}: rows() needs a matrix, this has shape {list(self.shape)}")
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.shape[0]):
            bad = int(ids[(ids < 0) | (ids >= self.shape[0])][0])
            raise IndexError(f"tensor {self.name}: row {bad} is out of range (it has {self.shape[0]:,} rows)")
        if not ids.size:
            return np.zeros((0, self.shape[1]), dtype=np.float32)
        if self._order is not None:
            ids = self._order[ids]
        return _finite(self.name, _decode(self._blocks()[ids], self.dtype, self.name))

    def _blocks(self) -> np.ndarray:  # -> [rows, bytes per row] uint8 view (rows = every dim but the first)
        _, block, block_bytes = GGML_TYPES[self._info.type_id]
        row_bytes = self._info.dims[0] // block * block_bytes
        return self._file.raw(self._info).reshape(-1, row_bytes)


def _decode(blocks: np.ndarray, dtype: str, name: str) -> np.ndarray:  # [rows, bytes] uint8 -> [rows, values] float32
    if dtype == "F32":
        return blocks.view("<f4").astype(np.float32)  # a copy: the map stays read-only and may be closed
    if dtype == "F16":
        return blocks.view("<f2").astype(np.float32)
    if dtype == "BF16":
        return (blocks.view("<u2").astype(np.uint32) << 16).view(np.float32)
    if dtype == "F64":
        return blocks.view("<f8").astype(np.float32)
    if dtype not in QUANTIZED:
        raise DataError(f"tensor {name}: type {dtype} is not supported; attn reads {', '.join(READABLE)}")
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    try:
        with np.errstate(all="ignore"):  # a damaged scale gives NaN, which _finite reports in one line
            return dequantize(np.ascontiguousarray(blocks), GGMLQuantizationType[dtype]).astype(np.float32, copy=False)
    except (KeyError, NotImplementedError):  # a type newer than the installed gguf package
        raise DataError(f"tensor {name}: type {dtype} needs a newer gguf package than the one installed (pip install -U gguf)") from None


def _finite(name: str, w: np.ndarray) -> np.ndarray:
    if not np.isfinite(w.sum()) and not np.isfinite(w).all():  # one pass in the common case
        raise DataError(f"tensor {name}: holds NaN or infinite values")
    return w


def unpermute_order(rows: int, n_head: int) -> np.ndarray:
    """Row i of the Hugging Face Q (or K) is row order[i] of the file (convert's permute, reversed).

    convert stores each head's rows as pairs (x_0, x_{d/2}), (x_1, x_{d/2+1}), ...: file row
    (h, i, j) is Hugging Face row (h, j, i), for j in {0, 1} (the half) and i < d/2."""
    return np.arange(rows).reshape(n_head, rows // n_head // 2, 2).swapaxes(1, 2).reshape(-1)


def hf_name(gguf_name: str) -> str | None:
    """The Hugging Face name of a GGUF tensor name, or None if it is not one of TENSOR_NAMES."""
    base, dot, suffix = gguf_name.rpartition(".")
    if not dot or suffix not in ("weight", "bias"):
        return None
    parts = base.split(".")
    if len(parts) >= 3 and parts[0] == "blk" and parts[1].isdigit() and parts[1] == str(int(parts[1])):
        pattern = TENSOR_NAMES.get("blk.{i}." + ".".join(parts[2:]))
        return f"{pattern.format(i=int(parts[1]))}.{suffix}" if pattern else None
    pattern = TENSOR_NAMES.get(base)
    return f"{pattern}.{suffix}" if pattern and "{i}" not in pattern else None


# --- metadata -> config ------------------------------------------------------------------------------


def _get(file: GGUFFile, key: str, kind, default=None, required: bool = False):
    """A metadata value of the expected kind (int, float, bool, str), else a DataError naming the key."""
    if key not in file.metadata:
        if required:
            raise DataError(f"{file.path}: GGUF metadata has no {key}")
        return default
    value = file.metadata[key]
    if kind is int and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if kind is float and isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return _shortest(value, file.value_types[key])
    if kind is bool and isinstance(value, bool):
        return value
    if kind is str and isinstance(value, str):
        return value
    raise DataError(f"{file.path}: GGUF metadata {key} should be {kind.__name__}, got {type(value).__name__}")


def _shortest(value, type_id) -> float:
    """A float32 key as the shortest decimal that rounds to it (1e-05, not 9.999999747378752e-06), as config.json has it."""
    return float(str(np.float32(value))) if type_id == 6 else float(value)


def _positive(file: GGUFFile, key: str, value: int) -> int:
    if value < 1:
        raise DataError(f"{file.path}: GGUF metadata {key} is {value}; it must be at least 1")
    return value


def config_from(file: GGUFFile) -> dict:
    """Hugging Face config.json keys from llama.cpp's metadata (the keys convert_hf_to_gguf.py writes)."""
    arch = _get(file, "general.architecture", str, required=True)
    if arch not in ARCHITECTURES:
        raise DataError(f"{file.path}: architecture {arch!r} is not supported; attn reads GGUF {', '.join(ARCHITECTURES)} (Llama, Mistral, SmolLM, Qwen2)")
    m = lambda key, kind, **kw: _get(file, f"{arch}.{key}", kind, **kw)  # noqa: E731
    hidden = _positive(file, f"{arch}.embedding_length", m("embedding_length", int, required=True))
    n_layers = _positive(file, f"{arch}.block_count", m("block_count", int, required=True))
    n_heads = _positive(file, f"{arch}.attention.head_count", m("attention.head_count", int, required=True))
    n_kv = _positive(file, f"{arch}.attention.head_count_kv", m("attention.head_count_kv", int, default=n_heads))
    head_dim = m("attention.key_length", int) or m("rope.dimension_count", int) or hidden // n_heads
    if n_heads % n_kv or head_dim % 2 or head_dim < 2:
        raise DataError(f"{file.path}: {n_heads} query heads, {n_kv} key/value heads and head size {head_dim} do not fit together")
    tokens = file.metadata.get("tokenizer.ggml.tokens")
    name = _get(file, "general.name", str) or ""
    config = {
        "model_type": "mistral" if arch == "llama" and "mistral" in name.lower() else arch,  # llama.cpp writes Mistral as llama
        "architectures": [ARCHITECTURES[arch] if "mistral" not in name.lower() else "MistralForCausalLM"],
        "hidden_size": hidden,
        "intermediate_size": _positive(file, f"{arch}.feed_forward_length", m("feed_forward_length", int, required=True)),
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "rms_norm_eps": m("attention.layer_norm_rms_epsilon", float, default=1e-5),
        "rope_theta": m("rope.freq_base", float, default=10000.0),
        "rope_scaling": _rope_scaling(file, arch),
        "max_position_embeddings": m("context_length", int, default=2048),
        "vocab_size": m("vocab_size", int) or (len(tokens) if isinstance(tokens, list) else None),
        "tie_word_embeddings": "output.weight" not in file.tensors,
        "attention_bias": "blk.0.attn_q.bias" in file.tensors,
        "bos_token_id": _get(file, "tokenizer.ggml.bos_token_id", int),
        "eos_token_id": _get(file, "tokenizer.ggml.eos_token_id", int),
    }
    if ROPE_FREQS in file.tensors:  # GGUF only: llama3 scaling as llama.cpp keeps it (a divisor per frequency)
        info = file.tensors[ROPE_FREQS]
        if info.dims != (head_dim // 2,) or info.type_name != "F32":
            raise DataError(f"{file.path}: {ROPE_FREQS} is {info.type_name} {list(info.dims)}; expected F32 [{head_dim // 2}]")
        config["rope_freq_factors"] = [float(x) for x in _finite(ROPE_FREQS, _decode(file.raw(info)[None], "F32", ROPE_FREQS)[0])]
    return config


def _rope_scaling(file: GGUFFile, arch: str) -> dict | None:
    """rope.scaling.* as config.json's rope_scaling (linear, yarn); none for llama3, which is rope_freqs.weight."""
    kind = _get(file, f"{arch}.rope.scaling.type", str)
    if kind in (None, "none"):
        return None
    factor = _get(file, f"{arch}.rope.scaling.factor", float)
    if kind == "linear":
        return {"rope_type": "linear", "factor": factor}
    if kind == "yarn":
        return {"rope_type": "yarn", "factor": factor,
                "original_max_position_embeddings": _get(file, f"{arch}.rope.scaling.original_context_length", int)}
    raise DataError(f"{file.path}: rope scaling {kind!r} is not supported; attn reads none, linear, yarn (and llama3's rope_freqs)")


# --- the source ----------------------------------------------------------------------------------------


def load(path) -> Source:
    """A .gguf file as a Source: config, lazy tensors by Hugging Face name, tokenizer metadata."""
    file = read_file(path)
    config = config_from(file)
    tensors = _tensors(file, config)
    name = _get(file, "general.name", str) or Path(path).stem
    pre = _get(file, "tokenizer.ggml.pre", str, default="default")
    add_bos = _get(file, "tokenizer.ggml.add_bos_token", bool, default=pre in LLAMA3_PRES)  # convert writes it when the tokenizer says
    add_eos = _get(file, "tokenizer.ggml.add_eos_token", bool, default=False)
    bos, eos = config["bos_token_id"], config["eos_token_id"]
    _check_tokenizer(file, config)
    return Source(
        path=file.path, name=name, config=config, tensors=tensors,
        chat_template=_get(file, "tokenizer.chat_template", str), bos_token_id=bos, eos_token_id=eos,
        add_bos_token=add_bos, add_eos_token=add_eos, tokenizer_factory=lambda: build_tokenizer(file, add_bos, add_eos),
    )


def _tensors(file: GGUFFile, config: dict) -> dict:
    arch = file.metadata["general.architecture"]
    n_heads, n_kv, head_dim, hidden = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"], config["hidden_size"]
    expected = {  # a first line of defence; the family checks the rest
        "model.embed_tokens.weight": (config["vocab_size"], hidden),
        "q_proj.weight": (n_heads * head_dim, hidden),
        "k_proj.weight": (n_kv * head_dim, hidden),
        "v_proj.weight": (n_kv * head_dim, hidden),
    }
    tensors = {}
    for gguf_name, info in file.tensors.items():
        name = hf_name(gguf_name)
        if name is None:
            continue  # rope_freqs (in the config) and tensors attn does not use
        if info.type_name not in READABLE:
            raise DataError(f"{file.path}: tensor {gguf_name} has type {info.type_name}, which is not supported; attn reads {', '.join(READABLE)}")
        shape = tuple(reversed(info.dims))
        want = expected.get(name) or expected.get(name.rsplit(".", 2)[-2] + "." + name.rsplit(".", 1)[-1])
        if want is not None and want[0] is not None and shape != want:
            raise DataError(f"{file.path}: tensor {gguf_name} has shape {list(shape)}, expected {list(want)} from the metadata")
        order = None
        if arch in PERMUTED and name.endswith(("q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias")):
            heads = n_heads if ".q_proj." in name else n_kv
            if shape[0] % (2 * heads):
                raise DataError(f"{file.path}: tensor {gguf_name} has {shape[0]} rows, not a multiple of 2 x {heads} heads")
            order = unpermute_order(shape[0], heads)
        tensors[name] = GGUFTensor(name, file, info, order)
    if "model.embed_tokens.weight" not in tensors:
        raise DataError(f"{file.path}: no token_embd.weight tensor")
    return tensors


# --- the tokenizer --------------------------------------------------------------------------------------


def _check_tokenizer(file: GGUFFile, config: dict) -> None:
    """The tokenizer metadata is of the right kinds and sizes (cheap: the tokenizer itself is built on demand)."""
    model = _get(file, "tokenizer.ggml.model", str, required=True)
    if model != "gpt2":
        raise DataError(f"{file.path}: tokenizer {model!r} is not supported; attn builds gpt2 (byte-level BPE) tokenizers from GGUF")
    pre = _get(file, "tokenizer.ggml.pre", str, default="default")
    if pre not in PRE_TOKENIZERS:
        raise DataError(f"{file.path}: pre-tokenizer {pre!r} is not supported; attn knows {', '.join(PRE_TOKENIZERS)}")
    tokens = file.metadata.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens:
        raise DataError(f"{file.path}: GGUF metadata tokenizer.ggml.tokens should be a list of strings")
    merges = file.metadata.get("tokenizer.ggml.merges", [])
    if not isinstance(merges, list):
        raise DataError(f"{file.path}: GGUF metadata tokenizer.ggml.merges should be a list of strings")
    types = file.metadata.get("tokenizer.ggml.token_type")
    if types is not None and (not isinstance(types, np.ndarray) or types.dtype.kind not in "iu" or len(types) != len(tokens)):
        raise DataError(f"{file.path}: GGUF metadata tokenizer.ggml.token_type should be {len(tokens):,} integers")
    for key in ("bos_token_id", "eos_token_id"):
        if config[key] is not None and not 0 <= config[key] < len(tokens):
            raise DataError(f"{file.path}: tokenizer.ggml.{key} is {config[key]}, but there are {len(tokens):,} tokens")
    rows = file.tensors["token_embd.weight"].dims[-1]
    if len(tokens) > rows:
        raise DataError(f"{file.path}: {len(tokens):,} tokens but token_embd.weight has {rows:,} rows")


def build_tokenizer(file: GGUFFile, add_bos: bool, add_eos: bool):
    """A `tokenizers` byte-level BPE from tokenizer.ggml.*: llama.cpp's split regexes for `pre`, the file's
    merges, control tokens as specials (user-defined ones as added tokens), BOS/EOS as the file says."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE

    tokens = file.metadata["tokenizer.ggml.tokens"]
    pre = _get(file, "tokenizer.ggml.pre", str, default="default")
    types = file.metadata.get("tokenizer.ggml.token_type")
    types = types.tolist() if types is not None else [1] * len(tokens)
    vocab = {token: i for i, token in enumerate(tokens)}
    merges = []
    for k, merge in enumerate(file.metadata.get("tokenizer.ggml.merges", [])):
        left, space, right = merge.partition(" ")
        if not space or not left or not right or " " in right:
            raise DataError(f"{file.path}: merge {k:,} ({merge[:40]!r}) is not two tokens separated by a space")
        merges.append((left, right))
    try:
        options = {"ignore_merges": True} if pre in LLAMA3_PRES else {}
        tok = Tokenizer(BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False, **options))
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(p), behavior="isolated") for p in PRE_TOKENIZERS[pre]]
            + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
        )
        tok.decoder = decoders.ByteLevel()
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types) if k == CONTROL])
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t, k in zip(tokens, types) if k == USER_DEFINED])
        bos_id, eos_id = _get(file, "tokenizer.ggml.bos_token_id", int), _get(file, "tokenizer.ggml.eos_token_id", int)
        single, specials = "$A", []
        if add_bos and bos_id is not None:
            single = f"{tokens[bos_id]} {single}"
            specials.append((tokens[bos_id], bos_id))
        if add_eos and eos_id is not None:
            single = f"{single} {tokens[eos_id]}"
            specials.append((tokens[eos_id], eos_id))
        if specials:
            pair = single + " " + single.replace("$A", "$B")
            tok.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=list(dict.fromkeys(specials)))
    except Exception as e:  # the tokenizers package raises plain Exception for a bad vocabulary or template
        raise DataError(f"{file.path}: cannot build the tokenizer ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    tok.no_padding()
    tok.no_truncation()
    return tok
