"""A .gguf file (llama.cpp's format) as a `Source`: metadata -> config, tensors -> lazy float32, tokenizer.ggml.* -> a tokenizer.

The header is read by gguf_file (fast, and checked as hostile input); the tokenizer is built by
gguf_tokenizer. The commonest block types (Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K) are dequantized
by `quants` here, the others by `gguf.quants` (llama.cpp's own package, imported only when a tensor of
such a type is first read); both give the same float32 bits.
"""

import re
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError
from attn_cli.models.sources import Source
from attn_cli.models.sources.gguf_file import GGML_TYPES, PLAIN, QUANTIZED, READABLE, GGUFFile, TensorInfo, _get, _shortest, read_file  # noqa: F401 (the reader's names)
from attn_cli.models.sources.gguf_tokenizer import LLAMA3_PRES, PRE_TOKENIZERS, _check_tokenizer, build_tokenizer  # noqa: F401

from attn_cli.models.sources.gguf_arch import ARCHITECTURES, EXPERTS, hf_name, supported  # noqa: F401 (hf_name: the reader's names)

ROPE_FREQS = "rope_freqs.weight"  # llama3 rope scaling as convert writes it: a divisor per rotary frequency
LONGROPE = ("rope_factors_long.weight", "rope_factors_short.weight")  # Phi-3's longrope (128k models): divisors per frequency


# --- tensors ----------------------------------------------------------------------------------------

DEQUANTIZE_VALUES = 1 << 16  # values dequantized by one call of gguf.quants: whole rows, up to this many. Its
# temporaries (~256 KB each) stay in the CPU's cache: at 1 << 20 SmolLM2's Q8_0 embeddings took 3x as long, its Q4_1 layers
# 1.3x. Its own grouping, 16 rows at a time, costs twice the time in NumPy calls on a 576-wide model.
READABLE_IDS = {info[0]: type_id for type_id, info in GGML_TYPES.items()}
PLAIN_VIEWS = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "F64": "<f8"}  # unquantized types: how their bytes read


class GGUFTensor:
    """A tensor left in the mapped file until asked for, dequantized to float32 then, in Hugging Face's layout.

    `order`, for Q and K of a llama-family file, is the row of the file that holds each Hugging
    Face row: convert_hf_to_gguf.py interleaves each head's two rotary halves, and gathering rows
    in this order undoes it."""

    __slots__ = ("name", "gguf_name", "shape", "dtype", "_file", "_info", "_order", "_shift")

    def __init__(self, name: str, file: GGUFFile, info: TensorInfo, order: np.ndarray | None = None, shift: bool = False):
        self.name = name
        self.gguf_name = info.name
        self.shape = tuple(reversed(info.dims))  # torch layout: [out, in] for a matrix
        self.dtype = info.type_name
        self._file, self._info, self._order = file, info, order
        self._shift = shift  # a Gemma norm, stored as 1 + w: read as w (transformers' Gemma2TensorProcessor does the same)

    def __repr__(self) -> str:
        return f"GGUFTensor({self.name!r}, shape={self.shape}, dtype={self.dtype!r})"

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def nbytes(self) -> int:  # bytes in the file
        _, block, block_bytes = GGML_TYPES[self._info.type_id]
        return self.size // block * block_bytes

    def array(self, out: np.ndarray | None = None) -> np.ndarray:  # -> self.shape, float32
        """The tensor as float32; `out` (C-contiguous, self.shape, float32): written there instead of into new memory."""
        blocks = self._blocks()
        if self._order is not None:  # gathered as bytes, before they become (several times as many) floats
            blocks = blocks[self._order]
        rows = None if out is None else out.reshape(len(blocks), -1)
        values = _finite(self.name, decode(blocks, self.dtype, self.name, rows).reshape(self.shape))
        if self._shift:
            values -= np.float32(1)
        return values

    def row_range(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:  # -> [stop - start, in] float32
        """Rows start..stop of a matrix (a block of the vocabulary), dequantized from their bytes alone; `out` as in array()."""
        if len(self.shape) != 2 or not 0 <= start <= stop <= self.shape[0]:
            raise IndexError(f"tensor {self.name}: rows {start}..{stop} of shape {list(self.shape)}")
        if self._order is not None:  # Q or K: the file's rows are permuted (rows() gathers them)
            rows = self.rows(np.arange(start, stop))
            return rows if out is None else np.copyto(out, rows) or out
        return _finite(self.name, decode(self._blocks()[start:stop], self.dtype, self.name, out))

    def rows(self, ids) -> np.ndarray:  # [m] row indices -> [m, in] float32
        if len(self.shape) != 2:
            raise DataError(f"tensor {self.name}: rows() needs a matrix, this has shape {list(self.shape)}")
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.shape[0]):
            bad = int(ids[(ids < 0) | (ids >= self.shape[0])][0])
            raise IndexError(f"tensor {self.name}: row {bad} is out of range (it has {self.shape[0]:,} rows)")
        if not ids.size:
            return np.zeros((0, self.shape[1]), dtype=np.float32)
        if self._order is None and ids[-1] - ids[0] == len(ids) - 1 and (len(ids) == 1 or (np.diff(ids) == 1).all()):
            return self.row_range(int(ids[0]), int(ids[-1]) + 1)  # a block of rows: read in place, not gathered first
        if self._order is not None:
            ids = self._order[ids]
        return _finite(self.name, decode(self._blocks()[ids], self.dtype, self.name))

    def blocks(self):  # -> ([rows, bytes per row] uint8, dtype, order or None), or None for a tensor that is not a matrix
        """The matrix as its file keeps it, for products straight from its blocks (sources.products.Blocks): a view of the
        mapped file, and `order`, the file's row behind each Hugging Face row (Q and K of a llama-family file)."""
        return (self._blocks(), self.dtype, self._order) if len(self.shape) == 2 and not self._shift else None

    def _blocks(self) -> np.ndarray:  # -> [rows, bytes per row] uint8 view (rows = every dim but the first)
        _, block, block_bytes = GGML_TYPES[self._info.type_id]
        row_bytes = self._info.dims[0] // block * block_bytes
        return self._file.raw(self._info).reshape(-1, row_bytes)


def decode(blocks: np.ndarray, dtype: str, name: str, out: np.ndarray | None = None) -> np.ndarray:  # [rows, bytes] uint8 -> [rows, values] float32
    """The values of `blocks` as float32, in `out` [rows, values] when given (memory reused), else in a new array."""
    if dtype in PLAIN_VIEWS:  # a copy either way: the map stays read-only and may be closed
        values = blocks.view(PLAIN_VIEWS[dtype])
        if dtype == "BF16":
            values = (values.astype(np.uint32) << 16).view(np.float32)
        with np.errstate(over="ignore"):  # an F64 beyond float32 becomes inf, which _finite reports in one line
            if out is None:
                return values.astype(np.float32)
            np.copyto(out, values, casting="same_kind")
        return out
    if dtype not in QUANTIZED:
        raise DataError(f"tensor {name}: type {dtype} is not supported; attn reads {', '.join(READABLE)}")
    from attn_cli.models.sources import quants as ours

    if dtype in ours.DECODERS:
        with np.errstate(all="ignore"):  # a damaged scale gives NaN, which _finite reports in one line
            return ours.dequantize(blocks, dtype, out)
    from gguf import quants

    kind = getattr(quants, dtype, None)  # gguf.quants' class for the type (Q4_1, Q8_0, ...)
    if kind is None or not hasattr(kind, "dequantize_rows"):  # a type newer than the installed gguf package
        raise DataError(f"tensor {name}: type {dtype} needs a newer gguf package than the one installed (pip install -U gguf)")
    _, block, block_bytes = GGML_TYPES[READABLE_IDS[dtype]]
    values = blocks.shape[1] // block_bytes * block
    step = max(1, DEQUANTIZE_VALUES // max(1, values))  # rows at a time
    try:
        kind.init_grid()  # the lookup grids of the IQ types, made once (what gguf.quants.dequantize does first)
        with np.errstate(all="ignore"):  # a damaged scale gives NaN, which _finite reports in one line
            if len(blocks) <= step and out is None:  # one call: its result is the array (no copy into another)
                return kind.dequantize_rows(np.ascontiguousarray(blocks)).astype(np.float32, copy=False)
            if out is None:
                out = np.empty((len(blocks), values), dtype=np.float32)
            for r in range(0, len(blocks), step):
                out[r : r + step] = kind.dequantize_rows(np.ascontiguousarray(blocks[r : r + step]))
    except NotImplementedError:
        raise DataError(f"tensor {name}: type {dtype} needs a newer gguf package than the one installed (pip install -U gguf)") from None
    return out


def _finite(name: str, w: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):  # huge finite values overflow the sum: then each value is looked at
        total = w.sum()
    if not np.isfinite(total) and not np.isfinite(w).all():  # one pass in the common case
        raise DataError(f"tensor {name}: holds NaN or infinite values")
    return w


def unpermute_order(rows: int, n_head: int) -> np.ndarray:
    """Row i of the Hugging Face Q (or K) is row order[i] of the file (convert's permute, reversed).

    convert stores each head's rows as pairs (x_0, x_{d/2}), (x_1, x_{d/2+1}), ...: file row
    (h, i, j) is Hugging Face row (h, j, i), for j in {0, 1} (the half) and i < d/2."""
    return np.arange(rows).reshape(n_head, rows // n_head // 2, 2).swapaxes(1, 2).reshape(-1)


# --- metadata -> config ------------------------------------------------------------------------------


def _positive(file: GGUFFile, key: str, value: int) -> int:
    if value < 1:
        raise DataError(f"{file.path}: GGUF metadata {key} is {value}; it must be at least 1")
    return value


def config_from(file: GGUFFile) -> dict:
    """Hugging Face config.json keys from llama.cpp's metadata (the keys convert_hf_to_gguf.py writes)."""
    arch = _get(file, "general.architecture", str, required=True)
    if arch not in ARCHITECTURES:
        raise DataError(f"{file.path}: architecture {arch!r} is not supported; attn reads GGUF {supported()}")
    if any(name.split(".")[2:3] == [kind] for name in file.tensors for kind in EXPERTS):
        raise DataError(f"{file.path}: a mixture of experts ({arch!r} with expert tensors) is not supported; attn reads GGUF {supported()}")
    m = lambda key, kind, default=None, required=False: _get(file, f"{arch}.{key}", kind, default, required)  # noqa: E731
    hidden = _positive(file, f"{arch}.embedding_length", m("embedding_length", int, required=True))
    n_layers = _positive(file, f"{arch}.block_count", m("block_count", int, required=True))
    n_heads = _positive(file, f"{arch}.attention.head_count", m("attention.head_count", int, required=True))
    n_kv = _positive(file, f"{arch}.attention.head_count_kv", m("attention.head_count_kv", int, default=n_heads))
    head_dim = m("attention.key_length", int) or m("rope.dimension_count", int) or hidden // n_heads
    if n_heads % n_kv or head_dim % 2 or head_dim < 2:
        raise DataError(f"{file.path}: {n_heads} query heads, {n_kv} key/value heads and head size {head_dim} do not fit together")
    tokens = file.metadata.get("tokenizer.ggml.tokens")
    name = _get(file, "general.name", str) or ""
    mistral = arch == "llama" and "mistral" in name.lower()  # llama.cpp writes Mistral as llama
    config = {
        "model_type": "mistral" if mistral else ARCHITECTURES[arch].model_type,
        "architectures": ["MistralForCausalLM" if mistral else ARCHITECTURES[arch].hf_class],
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
        config["rope_freq_factors"] = _factors(file, ROPE_FREQS, head_dim)
    if any(name in file.tensors for name in LONGROPE):  # Phi-3's longrope, as convert writes it (no rope.scaling.type)
        config["rope_scaling"] = _longrope(file, arch, head_dim)
    return config | ARCHITECTURES[arch].extra(m, config)


def _longrope(file: GGUFFile, arch: str, head_dim: int) -> dict:
    """Longrope as config.json's rope_scaling: both tables of factors (one alone is refused, not dropped), the original
    context, and the attention factor (a positive number) where the file gives one."""
    if missing := [name for name in LONGROPE if name not in file.tensors]:
        raise DataError(f"{file.path}: {' and '.join(n for n in LONGROPE if n not in missing)} without {missing[0]}; "
                        "longrope needs both tables of factors, long and short")
    attn_factor = _get(file, f"{arch}.rope.scaling.attn_factor", float)
    if attn_factor is not None and not 0 < attn_factor < float("inf"):  # NaN fails too
        raise DataError(f"{file.path}: GGUF metadata {arch}.rope.scaling.attn_factor is {attn_factor}; it must be a positive number")
    return {"rope_type": "longrope", "long_factor": _factors(file, LONGROPE[0], head_dim), "short_factor": _factors(file, LONGROPE[1], head_dim),
            "original_max_position_embeddings": _get(file, f"{arch}.rope.scaling.original_context_length", int, required=True),
            "attention_factor": attn_factor}


def _factors(file: GGUFFile, name: str, head_dim: int) -> list[float]:
    """A divisor per rotary frequency (rope_freqs, rope_factors_long/short): F32 [head_dim / 2]."""
    info = file.tensors[name]
    if info.dims != (head_dim // 2,) or info.type_name != "F32":
        raise DataError(f"{file.path}: {name} is {info.type_name} {list(info.dims)}; expected F32 [{head_dim // 2}]")
    return [float(x) for x in _finite(name, decode(file.raw(info)[None], "F32", name)[0])]


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
    name = file_name(Path(path)) or _get(file, "general.name", str) or Path(path).stem
    pre = _get(file, "tokenizer.ggml.pre", str, default="default")
    spm = _get(file, "tokenizer.ggml.model", str) == "llama"  # llama.cpp puts BOS first in a SentencePiece text unless the file says not to
    add_bos = _get(file, "tokenizer.ggml.add_bos_token", bool, default=pre in LLAMA3_PRES or spm)  # convert writes it when the tokenizer says
    add_eos = _get(file, "tokenizer.ggml.add_eos_token", bool, default=False)
    bos, eos = config["bos_token_id"], config["eos_token_id"]
    _check_tokenizer(file, config)
    return Source(
        path=file.path, name=name, config=config, tensors=tensors,
        chat_template=_get(file, "tokenizer.chat_template", str), bos_token_id=bos, eos_token_id=eos,
        add_bos_token=add_bos, add_eos_token=add_eos, tokenizer_factory=lambda: build_tokenizer(file, add_bos, add_eos),
    )


QUANT_SUFFIX = re.compile(r"[.-](?:[IQ]?Q\d[\w]*|F16|F32|BF16|F64)$", re.IGNORECASE)


def file_name(path: Path) -> str | None:
    """The model's name as its file says it ("SmolLM2-135M-Instruct" for SmolLM2-135M-Instruct.Q4_1.gguf): a file's own name is
    what people call the model (general.name is often a converter's slug); None for a blob named by its digest."""
    stem = QUANT_SUFFIX.sub("", path.stem)
    return None if stem.startswith("sha256") or not stem else stem


def _tensors(file: GGUFFile, config: dict) -> dict:
    arch = ARCHITECTURES[file.metadata["general.architecture"]]
    n_heads, n_kv, head_dim, hidden = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"], config["hidden_size"]
    expected = {  # a first line of defence; the family checks the rest
        "model.embed_tokens.weight": (config["vocab_size"], hidden),
        "q_proj.weight": (n_heads * head_dim, hidden),
        "k_proj.weight": (n_kv * head_dim, hidden),
        "v_proj.weight": (n_kv * head_dim, hidden),
    }
    tensors = {}
    for gguf_name, info in file.tensors.items():
        name = hf_name(gguf_name, file.metadata["general.architecture"])
        if name is None:
            continue  # rope_freqs (in the config) and tensors attn does not use
        if info.type_name not in READABLE:
            raise DataError(f"{file.path}: tensor {gguf_name} has type {info.type_name}, which is not supported; attn reads {', '.join(READABLE)}")
        shape = tuple(reversed(info.dims))
        want = expected.get(name) or expected.get(name.rsplit(".", 2)[-2] + "." + name.rsplit(".", 1)[-1])
        if want is not None and want[0] is not None and shape != want:
            raise DataError(f"{file.path}: tensor {gguf_name} has shape {list(shape)}, expected {list(want)} from the metadata")
        order = None
        if arch.permuted and name.endswith(("q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias")):
            heads = n_heads if ".q_proj." in name else n_kv
            if shape[0] % (2 * heads):
                raise DataError(f"{file.path}: tensor {gguf_name} has {shape[0]} rows, not a multiple of 2 x {heads} heads")
            order = unpermute_order(shape[0], heads)
        shift = arch.norm_plus_one and name.endswith("norm.weight")  # stored as 1 + w
        tensors[name] = GGUFTensor(name, file, info, order, shift)
    if "model.embed_tokens.weight" not in tensors:
        raise DataError(f"{file.path}: no token_embd.weight tensor")
    return tensors
