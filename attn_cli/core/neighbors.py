"""Nearest neighbours by cosine, in plain NumPy: every key (or vocabulary row) scored a block at a time, the top k kept.

Search is a matrix product over the vectors scaled to norm 1, a block of rows at a time (`Vectors.blocks`,
so no normalised copy of the vocabulary is kept), and a partial sort for the top k.

"Vectors | MatrixKeys" here is anything with len(), blocks() -> (start, [c, d] rows) and norms (the rows' norms, or None):
a word-vector store (attn_cli.vectors.store.Vectors), or a model's embedding matrix (MatrixKeys).
"""

from collections.abc import Iterable

import numpy as np

F32 = np.float32
MATRIX_BLOCK_ROWS = 4096  # rows of an in-memory matrix (a model's vocabulary) scored at a time: [4096, d] float32
QUERY_CHUNK = 64  # query rows scored against every key at a time: [64, n_keys] float32


def row_norms(m: np.ndarray) -> np.ndarray:  # [c, d] float -> [c] float64
    """The norm of each row, summed in float64 (1e38-sized float32 values do not overflow). Every search
    over the keys divides by these: stored in norms.npy they are these very numbers, to the bit."""
    return np.sqrt(np.einsum("ij,ij->i", m, m, dtype=np.float64))



def unit_rows(m: np.ndarray) -> np.ndarray:  # [c, d] -> [c, d] float32, every row of norm 1
    """Rows scaled to norm 1. A zero or non-finite row has no direction: its row is NaN,
    so every cosine with it is NaN and it is never anyone's nearest key."""
    m = np.asarray(m, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = row_norms(m)[:, None]
        good = np.isfinite(norms) & (norms > 0)
        return np.divide(m, norms, out=np.full_like(m, np.nan), where=good).astype(np.float32, copy=False)



def unit_vector(v: np.ndarray) -> np.ndarray:  # [d] -> [d]
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else v


def top_k(scores: np.ndarray, k: int, exclude: Iterable[int] = ()) -> np.ndarray:  # [n] -> [<=k] indices
    """Indices of the k highest scores, best first, skipping `exclude`; a NaN score (a key without
    a direction) is never among them."""
    undefined = np.isnan(scores)
    if undefined.any():
        exclude = {*exclude, *np.flatnonzero(undefined).tolist()}
        scores = np.where(undefined, -np.inf, scores)
    exclude = sorted(set(exclude))
    k = min(k, len(scores) - len(exclude))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    # Take enough candidates that the k best survive removing the excluded ones.
    m = min(k + len(exclude), len(scores))
    candidates = above_mth(scores, m) if m < len(scores) else np.arange(len(scores))
    candidates = candidates[~np.isin(candidates, exclude)]
    order = np.lexsort((candidates, -scores[candidates]))  # by score, ties by frequency rank
    return candidates[order][:k]


TOP_BLOCK = 64  # scores per block whose maximum bounds the m-th best from below (top_k)


def above_mth(scores: np.ndarray, m: int) -> np.ndarray:  # [n] no NaN, m < n -> [>= m] indices
    """Indices of a few scores that surely hold the m highest (ties included).

    The m-th highest of the blocks' maxima is at most the m-th highest score, so the scores at
    or above it hold the m best, and are few: two passes over the scores, not the partition of
    all of them (an argpartition of 100,000 scores takes ~1 ms, and inspect asks for one a token).
    """
    block_max = np.maximum.reduceat(scores, np.arange(0, len(scores), TOP_BLOCK))  # [ceil(n / TOP_BLOCK)]
    bounds = block_max if len(block_max) > m else scores  # few scores: the m-th highest itself
    floor = np.partition(bounds, len(bounds) - m)[len(bounds) - m]
    return np.flatnonzero(scores >= floor)


def indices_of(vectors, words: Iterable[str]) -> list[int]:
    """Row numbers of the words that are keys (fastText subword-only words have none)."""
    return [i for w in words if (i := vectors.row(w)) is not None]


MATMUL_QUERIES = 4  # from this many query rows key_scores multiplies by BLAS (3CosMul's three terms stay on einsum)
PIECE_MACS = 200_000  # multiply-adds per BLAS product in key_scores: below where BLAS spreads one over threads (OpenBLAS: 262,144)


def key_scores(vectors, queries: np.ndarray) -> np.ndarray:  # [t, d] -> [t, n_keys] float32
    """Every key's unit vector dotted with each query row (the cosine, for unit queries; a key
    without a direction scores NaN), computed a block of keys at a time, with the keys' norms
    read from the folder when it stores them (Vectors.norms), else computed here.

    One to three queries: einsum, not BLAS: a matrix-vector product per block is all memory
    traffic, and BLAS threads waiting on each other for it cost more than the work on a busy
    machine. More (inspect's tokens): BLAS products of a few hundred keys each, small enough to
    stay on this thread (no waiting for busy cores, no thread pool to start in a fresh process),
    twice as fast as einsum.
    """
    queries = np.asarray(queries, dtype=np.float32)
    out = np.empty((len(queries), len(vectors)), dtype=np.float32)
    by_blas = len(queries) >= MATMUL_QUERIES
    q_t = np.ascontiguousarray(queries.T)  # [d, t]
    piece = max(16, PIECE_MACS // max(1, queries.size))  # keys per product
    products = None  # [c, t], made for the first block and reused by every block after it
    for start, block in vectors.blocks():
        scores = out[:, start : start + len(block)]  # [t, c]
        norms = row_norms(block) if vectors.norms is None else vectors.norms[start : start + len(block)]  # [c] float64 (stored: norms.npy)
        if not np.all((norms > 1e-15) & (norms < 1e15)):  # zero, tiny, huge or non-finite rows: scale each row to norm 1 first (NaN: no direction)
            np.einsum("tj,ij->ti", queries, unit_rows(block), out=scores)
        elif not by_blas:  # ordinary rows: their float32 dot products neither overflow nor vanish
            np.divide(np.einsum("tj,ij->ti", queries, block), norms, out=scores, casting="unsafe")  # [t, d] x [c, d] -> [t, c]
        else:
            if products is None or len(products) < len(block):
                products = np.empty((len(block), len(queries)), dtype=np.float32)
            dots = products[: len(block)]  # [c, t]
            for r in range(0, len(block), piece):
                np.matmul(block[r : r + piece], q_t, out=dots[r : r + piece])  # [p, d] x [d, t] -> [p, t]
            np.divide(dots.T, norms, out=scores, casting="unsafe")  # one division a block, not one a product
    return out


def cosines(vectors, v: np.ndarray) -> np.ndarray:  # [d] -> [n_keys]
    """Cosine of every key's vector with v."""
    return key_scores(vectors, unit_vector(np.asarray(v, dtype=np.float64))[None, :])[0]


def nearest(vectors, v: np.ndarray, k: int, exclude: Iterable[str] = ()) -> list[tuple[str, float]]:
    """The k keys whose vectors have the highest cosine with v, best first."""
    scores = cosines(vectors, v)
    best = top_k(scores, k, indices_of(vectors, exclude))
    return [(vectors.key_at(i), float(scores[i])) for i in best]


class MatrixKeys:
    """An in-memory matrix (a model's embeddings) as keys for key_scores: its rows a block at a time, norms computed."""

    norms = None

    def __init__(self, matrix: np.ndarray, rows: int = MATRIX_BLOCK_ROWS):
        self.matrix, self.block_rows = matrix, rows

    def __len__(self) -> int:
        return len(self.matrix)

    def blocks(self):
        for start in range(0, len(self.matrix), self.block_rows):
            yield start, self.matrix[start : start + self.block_rows]


def nearest_rows(keys, rows: np.ndarray, k: int, skip: list[int] | None = None) -> list[list[int]]:  # [m, d] -> m lists of <= k key rows
    """The k keys nearest by cosine to each of `rows`, best first, skipping `skip[i]` for row i (-1: skip none).

    `keys`: what key_scores reads (a Vectors, or MatrixKeys). A zero or non-finite row has no
    direction and gets no neighbours. The one nearest-neighbour search: the E and E' neighbours of
    inspect, a token's path through a model's layers, and every vocabulary list.
    """
    found: list[list[int]] = []
    skip = [-1] * len(rows) if skip is None else skip
    for start in range(0, len(rows), QUERY_CHUNK):
        chunk = np.asarray(rows[start : start + QUERY_CHUNK], dtype=np.float64)  # [c, d]
        top = np.max(np.abs(chunk), axis=1, keepdims=True)  # [c, 1]
        usable = (np.isfinite(top) & (top > 0))[:, 0]  # a zero or non-finite row has no direction
        # Scaled by its largest entry, a row keeps its direction (all cosine ranks) and fits in float32.
        scaled = np.divide(chunk, top, out=np.zeros_like(chunk), where=usable[:, None]).astype(np.float32)
        sims = key_scores(keys, scaled)  # [c, n_keys]; ranks as cosine: the keys are scaled to norm 1
        for i, row_sims in enumerate(sims):
            own = [skip[start + i]] if skip[start + i] >= 0 else []  # a token itself says nothing about where it moved
            found.append(top_k(row_sims, k, own).tolist() if usable[i] else [])
    return found
