"""Attention a block of query rows at a time, so that no [H, n, t] matrix exists unless it is kept.

Shape letters: G query heads (a batch of B streams folds into them: G = B H), G_kv key/value heads
(G / G_kv query heads share one, grouped-query attention), n query rows, t keys, d_k, d_v.
Query row r sits at absolute position offset + r (a cached pass: offset = the cache's length), and
keys at positions 0 .. t - 1. Under the causal mask a query sees the keys at or before its position;
with a sliding `window` of w, only the last w of them (its own and w - 1 before).

Each block of rows is worked over the keys [lo, hi) that some row of it may see: the block's scores
(Q K^T / root, soft-capped, masked), softmax and weighted values are made in one scratch buffer of
about BLOCK_BYTES, and only what the caller keeps is copied out of it.
"""

from functools import lru_cache

import numpy as np

from attn_cli.core.softmax import softmax_rows_into
from attn_cli.records import Record

BLOCK_BYTES = 2 << 20  # the scratch of one block of rows, [G, b, k] float32: large enough for a good matrix product, small enough to stay near the cache
MIN_BLOCK_ROWS = 16
CAUSAL_BLOCKS = 8  # a causal pass in at least this many blocks (of MIN_BLOCK_ROWS rows or more): each block reads only the keys
# its rows see, so about 9/16 of the triangle's square is computed rather than all of it (twice as fast at 256 tokens)


class RowBlock(Record):
    """A block of rows of an [G, n, t] point, as a watcher sees it: rows first .. first + b - 1 of the pass, over keys lo .. lo + k - 1
    (keys outside it are hidden from every row of the block: weight 0, score -inf)."""

    __slots__ = ("first", "lo", "values", "keys", "offset")

    def __init__(self, first: int, lo: int, values: np.ndarray, keys: int, offset: int):
        self.first = first  # the block's first row within the pass
        self.lo = lo  # its first key
        self.values = values  # [G, b, k]; a view into scratch memory: copy what must outlive the call
        self.keys = keys  # t, every key of the pass
        self.offset = offset  # the absolute position of row 0


class Attended(Record):
    """What attend_rows computed: every query's weighted values, the parts kept, and whether float32 overflowed."""

    __slots__ = ("z", "kept", "overflow")

    def __init__(self, z: np.ndarray, kept: dict, overflow: bool):
        self.z = z  # [G, n, d_v] softmax(scores) V
        self.kept = kept  # point -> [G', m, t]: the heads and rows asked for ("attn.qk", "attn.scores", "attn.pattern")
        self.overflow = overflow  # some Q K^T was +inf or NaN (weights beyond float32)


def block_rows(heads: int, keys: int, itemsize: int = 4, budget: int = BLOCK_BYTES) -> int:
    """Rows per block so that a block's [heads, b, keys] scratch is about `budget` bytes."""
    return max(MIN_BLOCK_ROWS, budget // max(1, heads * keys * itemsize))


def key_span(r0: int, r1: int, offset: int, t: int, causal: bool, window: int | None) -> tuple[int, int]:
    """The keys [lo, hi) some query of rows r0 .. r1 - 1 may see."""
    hi = min(t, offset + r1) if causal else t
    lo = max(0, offset + r0 - window + 1) if window is not None else 0
    return lo, max(lo, hi)


def visible(r0: int, r1: int, lo: int, hi: int, offset: int, causal: bool, window: int | None) -> np.ndarray | None:
    """[b, hi - lo] True where query row r (position offset + r) may see key j; None when every row sees every key of the span."""
    p = np.arange(offset + r0, offset + r1)[:, None]  # [b, 1] positions of the queries
    j = np.arange(lo, hi)[None, :]  # [1, k]
    seen = np.ones((r1 - r0, hi - lo), bool)
    if causal and offset + r0 < hi:
        seen &= j <= p
    if window is not None and lo <= offset + r1 - 1 - window:
        seen &= j > p - window
    return None if seen.all() else seen


MASKS_KEPT, MASK_CELLS = 64, 1 << 16  # hidden() keeps this many masks of up to this many cells (at most 4 MiB)


def hidden(r0: int, r1: int, lo: int, hi: int, offset: int, causal: bool, window: int | None) -> np.ndarray | None:
    """~visible, read-only: True where query row r may not see key j; None when every row sees every key of the span.
    A small mask depends only on the block's shape and where its keys start, the same blocks in every layer: made once."""
    made = _hidden if (r1 - r0) * (hi - lo) <= MASK_CELLS else _hidden.__wrapped__  # a large one is made afresh, not kept
    return made(r1 - r0, hi - lo, offset + r0 - lo, causal, window)


@lru_cache(maxsize=MASKS_KEPT)
def _hidden(b: int, width: int, first: int, causal: bool, window: int | None) -> np.ndarray | None:  # rows at first .. first + b - 1, keys 0 .. width - 1
    seen = visible(0, b, 0, width, first, causal, window)  # the same offsets between queries and keys: the same mask
    if seen is None:
        return None
    mask = ~seen
    mask.setflags(write=False)
    return mask


def scale(block: np.ndarray, root: float | None, cap: float | None) -> None:
    """In place: Q K^T / root, then soft-capped, cap tanh(s / cap) (smooth, bounded by +-cap; Gemma 2's logit soft-cap)."""
    dtype = block.dtype.type
    if root is not None:
        np.divide(block, dtype(root), out=block)
    if cap is not None:
        np.divide(block, dtype(cap), out=block)
        np.tanh(block, out=block)
        np.multiply(block, dtype(cap), out=block)


def copy_kept(into: np.ndarray | None, block: np.ndarray, head_of, row_of, here, r0: int, lo: int) -> None:
    """The kept heads and rows of a block [G, b, k] copied into the kept point [G', m, t] (nothing when it is not kept)."""
    if into is None or (here is not None and not len(here)):
        return
    src = block if head_of is None else block[head_of]
    if here is None:
        into[:, r0 : r0 + block.shape[1], lo : lo + block.shape[2]] = src
    else:
        into[:, here, lo : lo + block.shape[2]] = src[:, row_of[here] - r0]


def attend_rows(q: np.ndarray, k: np.ndarray, v: np.ndarray, offset: int = 0, *, root: float | None, causal: bool = True,
                window: int | None = None, cap: float | None = None, keep: tuple = (), heads=None, rows=None,
                watch: dict | None = None, edit=None, budget: int = BLOCK_BYTES) -> Attended:
    """softmax(cap tanh((Q K^T / root) / cap), masked) V, a block of query rows at a time.

    q [G, n, d_k]; k [G_kv, t, d_k] and v [G_kv, t, d_v] (after RoPE; a cached pass's keys first).
    root: what Q K^T is divided by (sqrt(d_k)), None to leave it. causal / window: which keys a query
    sees (module docstring; window None: all earlier keys). cap: the logit soft-cap (Gemma 2), None: none.
    keep: which of "attn.qk" (Q K^T), "attn.scores" (what softmax reads), "attn.pattern" (its weights)
    to return whole, only for `heads` (indices into G; None: all) and `rows` (indices into n, or a
    slice; None: all). watch: {point: callable(RowBlock)} called for every block with all G heads.
    edit: callable(point, r0, r1, lo, block) that may change a block of "attn.scores" (before the
    softmax) or "attn.pattern" (before it weighs V) in place; None: no edits.
    """
    g_all, n, d_k = q.shape
    g_kv, t, d_v = v.shape
    g = g_all // g_kv
    if n == 1 and not watch and edit is None:  # a generated token: one row, none of the block machinery
        return attend_one(q, k, v, offset, root, causal, window, cap, keep, heads)
    dtype, watch = q.dtype, watch or {}
    z = np.empty((g_all, n, d_v), dtype)  # [G, n, d_v]
    row_of = np.arange(n)[rows] if rows is not None else None  # the rows kept, in order
    m = n if row_of is None else len(row_of)
    head_of = None if heads is None else np.asarray(heads, dtype=np.int64)
    g_kept = g_all if head_of is None else len(head_of)
    kept = {point: np.full((g_kept, m, t), -np.inf if point != "attn.pattern" else 0, dtype) for point in keep}  # [G', m, t] each
    b_max = min(n, block_rows(g_all, t, dtype.itemsize, budget), max(MIN_BLOCK_ROWS, -(-n // CAUSAL_BLOCKS)) if causal else n) if n else 0
    scratch = np.empty(g_all * b_max * t, dtype)
    overflow = False
    q_groups = q.reshape(g_kv, g, n, d_k)
    z_groups = z.reshape(g_kv, g, n, d_v)
    for r0 in range(0, n, max(1, b_max)):
        r1 = min(n, r0 + b_max)
        b = r1 - r0
        lo, hi = key_span(r0, r1, offset, t, causal, window)
        width = hi - lo
        s = scratch[: g_all * b * width].reshape(g_kv, g * b, width)  # [G_kv, g b, k], = [G, b, k] in head order
        queries = q_groups[:, :, r0:r1].reshape(g_kv, g * b, d_k)  # [G_kv, g b, d_k]
        np.matmul(queries, k[:, lo:hi].transpose(0, 2, 1), out=s)  # [G_kv, g b, d_k] x [G_kv, d_k, k] -> [G_kv, g b, k]
        block = s.reshape(g_all, b, width)  # [G, b, k]
        if not block.max(initial=-np.inf) < np.inf:  # +inf or NaN: Q K^T beyond float32
            overflow = True
        here = None if row_of is None else np.flatnonzero((row_of >= r0) & (row_of < r1))  # kept rows in this block
        put = lambda point: copy_kept(kept.get(point), block, head_of, row_of, here, r0, lo)  # noqa: E731
        put("attn.qk")
        scale(block, root, cap)
        masked = hidden(r0, r1, lo, hi, offset, causal, window)
        if masked is not None:
            np.copyto(block, dtype.type(-np.inf), where=masked)
        if edit is not None:
            edit("attn.scores", r0, r1, lo, block)
        put("attn.scores")
        if "attn.scores" in watch:
            watch["attn.scores"](RowBlock(r0, lo, block, t, offset))
        softmax_rows_into(block, block)
        if edit is not None:
            edit("attn.pattern", r0, r1, lo, block)
        put("attn.pattern")
        if "attn.pattern" in watch:
            watch["attn.pattern"](RowBlock(r0, lo, block, t, offset))
        mixed = np.matmul(s, v[:, lo:hi])  # [G_kv, g b, k] x [G_kv, k, d_v] -> [G_kv, g b, d_v]
        z_groups[:, :, r0:r1] = mixed.reshape(g_kv, g, b, d_v)
    return Attended(z, kept, overflow)


def attend_one(q: np.ndarray, k: np.ndarray, v: np.ndarray, offset: int, root: float | None, causal: bool, window: int | None,
               cap: float | None, keep: tuple, heads) -> Attended:
    """attend_rows for one query row ([G, 1, d_k]) with nothing to edit or watch: the same steps on the keys it sees."""
    g_all, _, d_k = q.shape
    g_kv, t, d_v = v.shape
    g = g_all // g_kv
    lo, hi = key_span(0, 1, offset, t, causal, window)
    s = np.matmul(q.reshape(g_kv, g, d_k), k[:, lo:hi].transpose(0, 2, 1))  # [G_kv, g, d_k] x [G_kv, d_k, k] -> [G_kv, g, k]
    block = s.reshape(g_all, 1, hi - lo)  # [G, 1, k]
    overflow = not block.max(initial=-np.inf) < np.inf
    head_of = None if heads is None else np.asarray(heads, dtype=np.int64)
    kept = {}

    def put(point: str) -> None:
        if point in keep and lo == 0 and hi == t:  # every key seen: the block itself, copied
            kept[point] = (block if head_of is None else block[head_of]).copy()
        elif point in keep:
            whole = np.full((g_all if head_of is None else len(head_of), 1, t), -np.inf if point != "attn.pattern" else 0, q.dtype)
            whole[:, :, lo:hi] = block if head_of is None else block[head_of]
            kept[point] = whole

    put("attn.qk")
    scale(block, root, cap)
    put("attn.scores")
    softmax_rows_into(block, block)
    put("attn.pattern")
    z = np.matmul(s, v[:, lo:hi])  # [G_kv, g, k] x [G_kv, k, d_v] -> [G_kv, g, d_v]
    return Attended(z.reshape(g_all, 1, d_v), kept, overflow)


def plain_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, offset: int = 0, *, root: float | None, causal: bool = True,
                    window: int | None = None, cap: float | None = None):  # -> scores [G, n, t], pattern [G, n, t], z [G, n, d_v]
    """The same attention written out whole, in float64, one head and one query at a time: the reference attend_rows is checked against."""
    g_all, n, _ = q.shape
    g_kv, t, d_v = v.shape
    g = g_all // g_kv
    scores = np.full((g_all, n, t), -np.inf)
    pattern = np.zeros((g_all, n, t))
    z = np.zeros((g_all, n, d_v))
    for h in range(g_all):
        kh, vh = k[h // g].astype(np.float64), v[h // g].astype(np.float64)
        for r in range(n):
            p = offset + r
            for j in range(t):
                if (causal and j > p) or (window is not None and j <= p - window):
                    continue
                s = float(q[h, r].astype(np.float64) @ kh[j])
                if root is not None:
                    s /= root
                if cap is not None:
                    s = cap * np.tanh(s / cap)
                scores[h, r, j] = s
            row = scores[h, r]
            if np.isfinite(row).any():
                e = np.exp(row - row.max())
                pattern[h, r] = e / e.sum()
                z[h, r] = pattern[h, r] @ vh
    return scores, pattern, z
