"""x W^T straight from a GGUF tensor's blocks: the products of a few rows, without a float32 copy of the weight.

A generated token's step multiplies one row by every matrix of the model: it is bound by the bytes it reads, and a
quantized weight is 4 to 8 times fewer bytes than its float32 copy. `_products.c` (built by pip install where a C
compiler is found) decodes each block into its integer codes and scales and multiplies them with float32 activations,
summing in float32, on the threads BLAS is given; without it, NumPy dequantizes a block of rows at a time and
multiplies (the same values to float32 rounding, slower). Long inputs are faster through BLAS on the dequantized
layer: `Blocks.product` is for FEW_ROWS rows or fewer (tests/benchmarks/bench_products.py measures the crossover).

    Blocks(parts).product(x)   x [n, in] -> [n, out], W = the parts' rows one after another, [out, in] as GGUF keeps them
"""

import numpy as np

from attn_cli.models.sources.gguf_file import GGML_TYPES

TYPES = frozenset({"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16"})  # what _products.c reads
FEW_ROWS = 8  # rows of x up to which the blocks' products beat BLAS on layers held as float32 (bench_products.py: 1 to 8)
FIRST_PASS_ROWS = 16  # ... and beat dequantizing a layer that is not held, for one pass (a prompt: 0.3 s of SmolLM2's layers)
CHUNK_BYTES = 4 << 20  # the NumPy path: rows dequantized at a time, as float32

try:  # the optional C products (_products.c)
    from attn_cli.models.sources import _products as COMPILED
except ImportError:
    COMPILED = None


def kernel() -> str:
    """Which products run here, for a benchmark's or `attn info`'s line."""
    return f"compiled ({COMPILED.kernel()})" if COMPILED is not None else "NumPy (no C compiler at install)"


def product(x: np.ndarray, blocks: np.ndarray, dtype: str, out: np.ndarray | None = None, column: int = 0,
            threads: int = 1) -> np.ndarray:  # [n, in] float32 x [rows, row bytes] uint8 -> out[:, column:column + rows]
    """x W^T for W the rows of `blocks` (whole blocks of `dtype`), written into columns column.. of `out` [n, width]."""
    if out is None:
        out = np.empty((len(x), len(blocks)), np.float32)
    return products(x, [(blocks, dtype, column, None)], out, threads)


def products(x: np.ndarray, parts: list, out: np.ndarray, threads: int = 1) -> np.ndarray:
    """x W^T for each part (blocks [rows, row bytes], dtype, column, where): its columns of `out` [n, width] from
    `column` on, row r into column + where[r] when `where` (int32, a permutation) is given: one call, one wake of the
    threads, for every part of a weight (Q, K and V)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if COMPILED is not None and out.flags.c_contiguous and len(x):
        COMPILED.product(compiled_parts(parts), x, out, max(1, threads))
        return out
    from attn_cli.models.sources.gguf import decode

    for blocks, dtype, column, where in parts:
        _, per_block, block_bytes = GGML_TYPES_BY_NAME[dtype]
        step = max(1, CHUNK_BYTES // (4 * blocks.shape[1] // block_bytes * per_block))
        part = np.empty((len(x), len(blocks)), np.float32)
        for start in range(0, len(blocks), step):
            w = decode(blocks[start : start + step], dtype, dtype)  # [c, in] float32
            part[:, start : start + len(w)] = x @ w.T  # [n, in] x [in, c] -> [n, c]
        if where is None:
            out[:, column : column + len(blocks)] = part
        else:
            out[:, column + where] = part
    return out


def compiled_parts(parts: list) -> list:  # -> [(dtype, blocks, rows, column, where)]: the C call's own tuples
    return [(dtype, np.ascontiguousarray(b), len(b), column, where) for b, dtype, column, where in parts]


GGML_TYPES_BY_NAME = {name: (type_id, per_block, block_bytes) for type_id, (name, per_block, block_bytes) in GGML_TYPES.items()}


class Blocks:
    """A canonical weight W [in, out] (x @ W, attn's layout) kept as its file's blocks: the parts' rows ([out_i, in],
    GGUF's order) one after another. `order` (Q and K of a llama-family file) is the file's row behind each of a part's
    output columns: each row's sum is written straight into its column."""

    def __init__(self, parts: list[tuple[np.ndarray, str, np.ndarray | None]]):
        self.parts = []  # [(blocks [rows, row bytes] uint8, dtype, first column, where: the column of each file row, or None)]
        column = 0
        for blocks, dtype, order in parts:
            where = None if order is None else np.argsort(order).astype(np.int32)  # file row order[i] is output column i
            self.parts.append((blocks, dtype, column, where))
            column += len(blocks)
        blocks, dtype, _ = parts[0]
        per_block, block_bytes = GGML_TYPES_BY_NAME[dtype][1:]
        self.shape = (blocks.shape[1] // block_bytes * per_block, column)  # [in, out]
        self.nbytes = sum(b.nbytes for b, _, _ in parts)
        self._compiled = None

    @classmethod
    def joined(cls, *weights: "Blocks") -> "Blocks":
        """Weights read from the same input as one (the gated MLP's gate and up): their columns side by side."""
        joined = cls.__new__(cls)
        joined.parts, column = [], 0
        for w in weights:
            joined.parts += [(b, dtype, column + first, where) for b, dtype, first, where in w.parts]
            column += w.shape[1]
        joined.shape, joined.nbytes, joined._compiled = (weights[0].shape[0], column), sum(w.nbytes for w in weights), None
        return joined

    def product(self, x: np.ndarray, threads: int = 1) -> np.ndarray:  # [n, in] -> [n, out] float32
        out = np.empty((len(x), self.shape[1]), np.float32)
        if COMPILED is None or not len(x):
            return products(x, self.parts, out, threads)
        if self._compiled is None:  # the C call's tuples, made once (a generation makes thousands of calls)
            self._compiled = compiled_parts(self.parts)
        if x.dtype != np.float32 or not x.flags.c_contiguous:
            x = np.ascontiguousarray(x, dtype=np.float32)
        COMPILED.product(self._compiled, x, out, threads or 1)
        return out
