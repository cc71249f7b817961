"""Nearest neighbours by cosine, in plain NumPy: every key (or vocabulary row) scored a block at a time, the top k kept.

Search is a matrix product over the vectors scaled to norm 1, a block of rows at a time (`Vectors.blocks`,
so no normalised copy of the vocabulary is kept), and a partial sort for the top k.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from attn_cli.vectors.store import Vectors

F32 = np.float32
NEIGHBOR_CHUNK = 4096  # vocabulary rows scored at a time: [chunk, d] float32

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


def indices_of(vectors: "Vectors", words: Iterable[str]) -> list[int]:
    """Row numbers of the words that are keys (fastText subword-only words have none)."""
    return [i for w in words if (i := vectors.row(w)) is not None]


MATMUL_QUERIES = 4  # from this many query rows key_scores multiplies by BLAS (3CosMul's three terms stay on einsum)
PIECE_MACS = 200_000  # multiply-adds per BLAS product in key_scores: below where BLAS spreads one over threads (OpenBLAS: 262,144)


def key_scores(vectors: "Vectors", queries: np.ndarray) -> np.ndarray:  # [t, d] -> [t, n_keys] float32
    """Every key's unit vector dotted with each query row (the cosine, for unit queries; a key
    without a direction scores NaN), computed a block of keys at a time, with the keys' norms
    read from the folder when it stores them (Vectors.norms), else computed here.

    One to three queries: einsum, not BLAS: a matrix-vector product per block is all memory
    traffic, and BLAS threads waiting on each other for it cost more than the work on a busy
    machine. More (inspect's tokens): BLAS products of a few hundred keys each, small enough to
    stay on this thread (no waiting for busy cores, no thread pool to start in a fresh process),
    twice as fast as einsum.
    """
    from attn_cli.vectors.store import BLOCK_ROWS, row_norms, unit_rows

    queries = np.asarray(queries, dtype=np.float32)
    out = np.empty((len(queries), len(vectors)), dtype=np.float32)
    by_blas = len(queries) >= MATMUL_QUERIES
    q_t = np.ascontiguousarray(queries.T)  # [d, t]
    piece = max(16, PIECE_MACS // max(1, queries.size))  # keys per product
    products = np.empty((min(len(vectors), BLOCK_ROWS), len(queries)), dtype=np.float32) if by_blas else None  # [c, t], reused by every block
    for start, block in vectors.blocks():
        scores = out[:, start : start + len(block)]  # [t, c]
        norms = row_norms(block) if vectors.norms is None else vectors.norms[start : start + len(block)]  # [c] float64 (stored: norms.npy)
        if not np.all((norms > 1e-15) & (norms < 1e15)):  # zero, tiny, huge or non-finite rows: scale each row to norm 1 first (NaN: no direction)
            np.einsum("tj,ij->ti", queries, unit_rows(block), out=scores)
        elif not by_blas:  # ordinary rows: their float32 dot products neither overflow nor vanish
            np.divide(np.einsum("tj,ij->ti", queries, block), norms, out=scores, casting="unsafe")  # [t, d] x [c, d] -> [t, c]
        else:
            dots = products[: len(block)]  # [c, t]
            for r in range(0, len(block), piece):
                np.matmul(block[r : r + piece], q_t, out=dots[r : r + piece])  # [p, d] x [d, t] -> [p, t]
            np.divide(dots.T, norms, out=scores, casting="unsafe")  # one division a block, not one a product
    return out


def cosines(vectors: "Vectors", v: np.ndarray) -> np.ndarray:  # [d] -> [n_keys]
    """Cosine of every key's vector with v."""
    return key_scores(vectors, unit_vector(np.asarray(v, dtype=np.float64))[None, :])[0]


def nearest(vectors: "Vectors", v: np.ndarray, k: int, exclude: Iterable[str] = ()) -> list[tuple[str, float]]:
    """The k keys whose vectors have the highest cosine with v, best first."""
    scores = cosines(vectors, v)
    best = top_k(scores, k, indices_of(vectors, exclude))
    return [(vectors.key_at(i), float(scores[i])) for i in best]


def nearest_rows(rows: np.ndarray, matrix: np.ndarray, k: int) -> np.ndarray:  # [m, d], [V, d] -> [m, k] row indices
    """The k rows of `matrix` nearest by cosine to each of `rows`, scored a chunk at a time (no normalised copy of the matrix)."""
    rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), F32(1e-12))  # [m, d]
    best_score = np.full((len(rows), 0), -np.inf, F32)
    best_index = np.zeros((len(rows), 0), np.int64)
    for start in range(0, len(matrix), NEIGHBOR_CHUNK):
        chunk = matrix[start : start + NEIGHBOR_CHUNK]  # [c, d]
        sims = rows @ chunk.T / np.maximum(np.linalg.norm(chunk, axis=1), F32(1e-12))  # [m, d] x [d, c] -> [m, c]
        scores = np.concatenate([best_score, sims], axis=1)
        index = np.concatenate([best_index, np.broadcast_to(np.arange(start, start + len(chunk)), sims.shape)], axis=1)
        keep = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        best_score, best_index = np.take_along_axis(scores, keep, 1), np.take_along_axis(index, keep, 1)
    return best_index
