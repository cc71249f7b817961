"""The header of a .gguf file (llama.cpp's format), read with struct/NumPy on a memory map; nothing but the bytes.

`gguf.GGUFReader` builds a NumPy view per field and per string, which takes seconds on a vocabulary
of 50-150k tokens before any number is used; this reads the same header in tens of milliseconds.
The file is treated as hostile: every length, count and offset is checked against the bytes left
before anything is allocated from it, and anything wrong is a one-line DataError. Only the arrays attn
reads (KEPT_ARRAYS: the tokenizer's) become Python objects; any other is walked past and kept as an
UnreadArray, so a header costs about what attn uses of it, not ten times the file.

Layout (little-endian): "GGUF", u32 version (2 or 3), u64 tensor count, u64 key count; the keys
(string key, u32 type, value); the tensor infos (string name, u32 n_dims, u64 dims[n_dims] with the
fastest-varying first, u32 ggml type, u64 offset); padding to `general.alignment` (32); the data.
"""

import mmap
import struct
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError

try:  # the optional C reader of string arrays (_gguf_strings.c, built at install where a compiler is found)
    from attn_cli.models.sources import _gguf_strings as COMPILED
except ImportError:
    COMPILED = None

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_KEY_BYTES = 65535
MAX_NAME_BYTES = 256  # ggml allows 63; a little room, no more
MAX_COUNT = 1 << 24  # tensors, keys or array items: far above any real model, far below a hostile u64
MAX_KEPT_STRINGS = 1 << 21  # strings of an array that is kept (a vocabulary or merges: 262k and 500k at most in real files)
KEPT_ARRAYS = ("tokenizer.ggml.",)  # the arrays attn reads; any other is walked past, never made into objects

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


# --- the header -------------------------------------------------------------------------------------


class UnreadArray:
    """An array attn does not use, left in the file: its item type and length, and where it starts."""

    __slots__ = ("item_type", "count", "offset")

    def __init__(self, item_type: int, count: int, offset: int):
        self.item_type, self.count, self.offset = item_type, count, offset

    def __repr__(self) -> str:
        return f"UnreadArray({VALUE_TYPES[self.item_type][0]} x {self.count:,})"


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
        self.metadata = metadata  # key -> int | float | bool | str | list[str] | np.ndarray (numeric arrays) | UnreadArray
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

    def strings(self, n: int, what: str, keep: bool = True) -> list[str] | None:
        """n strings in a row: one struct call per string, no NumPy object per item (a vocabulary is 50-150k of them),
        each decoded as it is read (one copy at a time); with `keep` False only walked past (checked, nothing made)."""
        if COMPILED is not None and (read := COMPILED.strings(self.buffer, self.pos, n, keep)) is not None:
            out, self.pos = read
            return out
        buffer, pos, size = self.buffer, self.pos, self.size  # also where the C reader refused: this walk says why
        out = [None] * n if keep else None
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
            if keep:
                try:
                    out[i] = buffer[pos:pos + length].decode("utf-8")
                except UnicodeDecodeError:
                    self.fail(f"item {i:,} of {what} is not UTF-8")
            pos += length
        self.pos = pos
        return out

    def value(self, type_id: int, what: str, keep: bool = True):
        """The value at the cursor; an array with `keep` False is walked past and left as an UnreadArray."""
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
            start, n = self.pos, self.count(f"the length of {what}", 8)
            if keep and n > MAX_KEPT_STRINGS:
                self.fail(f"{what} holds {n:,} strings; attn reads at most {MAX_KEPT_STRINGS:,}")
            strings = self.strings(n, what, keep)
            return strings if keep else UnreadArray(item, n, start)
        dtype = np.dtype(NUMPY_TYPES[item])
        start, n = self.pos, self.count(f"the length of {what}", dtype.itemsize)
        if not keep:
            self.pos += n * dtype.itemsize
            return UnreadArray(item, n, start)
        values = np.frombuffer(self.buffer, dtype=dtype, count=n, offset=self.pos).copy()
        self.pos += n * dtype.itemsize
        return values.astype(bool) if item == 7 else values


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
        raise DataError(f"{path}: not a GGUF file (it does not start with the bytes 'GGUF')")  # what it does start with is not shown: it may be any file
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
        metadata[key] = r.value(type_id, f"metadata {key!r}", keep=key.startswith(KEPT_ARRAYS))
        value_types[key] = (type_id, struct.unpack_from("<I", buffer, start)[0]) if type_id == 9 else type_id

    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if value_types.get("general.alignment", 4) != 4 or not 0 < alignment <= 1 << 16 or alignment & (alignment - 1):
        r.fail(f"general.alignment is {alignment!r}; it must be a power of two (u32)")
    tensors = _tensor_infos(r, n_tensors, alignment)
    return GGUFFile(path, version, metadata, value_types, tensors, alignment, -(-r.pos // alignment) * alignment, buffer)


def _tensor_infos(r: _Reader, n_tensors: int, alignment: int) -> dict:
    """The tensor infos after the metadata, each checked to lie inside the file."""
    buffer, size, path = r.buffer, r.size, r.path
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
    return tensors


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
    got = "an array" if isinstance(value, (UnreadArray, list, np.ndarray)) else type(value).__name__
    raise DataError(f"{file.path}: GGUF metadata {key} should be {kind.__name__}, got {got}")


def _shortest(value, type_id) -> float:
    """A float32 key as the shortest decimal that rounds to it (1e-05, not 9.999999747378752e-06), as config.json has it."""
    return float(str(np.float32(value))) if type_id == 6 else float(value)
