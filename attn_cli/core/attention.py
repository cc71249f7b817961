"""Attention math in plain NumPy: no classes of state, no I/O, no terminal code.

Shape letters: n = tokens in the sentence, d = d_model (word-vector size), d_k = query/key
size, d_v = value size. Queries are rows: weights[i, j] is how much token i attends to j.

Precision follows E: float32 E runs in float32 from end to end (as a model runs, in half the
memory), float64 E in float64 (training and the tests' references rely on it). The [n, n]
matrices are worked through one block of query rows at a time, each block only over the keys it
may see (row_spans): under the causal mask the upper triangle is filled in, never computed.
"""

import math
import mmap
from enum import Enum
from functools import lru_cache

import numpy as np

from attn_cli.records import Record
from attn_cli.core.softmax import softmax_rows_into

class Mask(str, Enum):
    """Which keys a query may see: earlier ones and itself (a decoder), or all (an encoder).

    A str Enum: Mask("causal") reads the strings files and JSON carry, and Mask.causal == "causal".
    """

    causal = "causal"
    none = "none"


class Stage(str, Enum):
    """A step of one head: Q K^T before scaling, scaled and masked, or after softmax."""

    scores = "scores"
    masked = "masked"
    weights = "weights"


def causal_mask(n: int) -> np.ndarray:  # -> [n, n] bool, True where query i may see key j
    """Keys after their query are hidden: later words must not influence earlier ones."""
    return np.tril(np.ones((n, n), dtype=bool))


@lru_cache(maxsize=64)
def _causal(n: int) -> np.ndarray:  # [n, n] bool, shared between sentences of the same length: read-only
    mask = causal_mask(n)
    mask.setflags(write=False)
    return mask


def allowed_keys(mask: "Mask | str", n: int) -> np.ndarray | None:  # -> [n, n] bool (read-only), or None for "all"
    return _causal(n) if Mask(mask) == Mask.causal else None


class Head(Record):
    """One attention head: W_Q, W_K, W_V and an optional output map W_O (for a low-rank value map).

    A plain class, not a dataclass: it is defined on every start of `inspect`, and a dataclass
    compiles its methods then (~0.3 ms each class). Holds arrays: compared by identity.
    """

    __slots__ = ("name", "w_q", "w_k", "w_v", "w_o", "b_q", "distance", "sink")

    def __init__(self, name: str, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, w_o: np.ndarray | None = None,
                 b_q: np.ndarray | None = None, distance: np.ndarray | None = None, sink: float | None = None):
        self.name = name
        self.w_q = w_q  # [d, d_k]
        self.w_k = w_k  # [d, d_k]
        self.w_v = w_v  # [d, d_v]
        self.w_o = w_o  # [d_v, d]; None when d_v == d
        self.b_q = b_q  # [d_k] query bias, Q = E W_Q + b_Q (as a model's linear layers have): lets a key matter to every query
        self.distance = distance  # [3] (before, after, self): a key k tokens before / after the query loses k times that slope (ALiBi), the query itself `self`
        self.sink = sink  # score of one more key that every query sees and that writes nothing (value 0), as the masked scores are compared: weight a query puts there is an update not made

    @property
    def d_k(self) -> int:
        return self.w_q.shape[1]


class HeadResult(Record):
    """One head over one sentence, every array in E's precision (float32 or float64). A plain class, as Head."""

    __slots__ = ("scores", "masked", "weights", "delta", "delta_self", "delta_context", "sink", "values")

    def __init__(self, scores: np.ndarray, masked: np.ndarray, weights: np.ndarray, delta: np.ndarray,
                 delta_self: np.ndarray | None = None, delta_context: np.ndarray | None = None, sink: np.ndarray | None = None,
                 values: np.ndarray | None = None):
        self.scores = scores  # [n, n] Q K^T, before scaling
        self.masked = masked  # [n, n] scores / sqrt(d_k) (scores alone when not scaled) - distance penalty (heads with one), -inf where masked
        self.weights = weights  # [n, n] softmax over keys; rows sum to 1 (0 for a fully masked row; with a sink, 1 less its weight)
        self.delta = delta  # [n, d] this head's contribution to Delta E
        self.delta_self = delta_self  # [n, d] w_ii v_i (then W_O): the token's own value, copied
        self.delta_context = delta_context  # [n, d] sum_{j != i} w_ij v_j (then W_O): what the other tokens wrote
        self.sink = sink  # [n] each query's weight on the sink (heads with one; else None): weights[i].sum() + sink[i] = 1
        self.values = values  # [n, d_v] V = E W_V, what each key offers (before W_O)


ROW_BLOCK_BYTES = 1 << 19  # a block of rows of one [n, n] matrix (512 KiB): the block stays in cache while it is scaled, masked, exponentiated and normalised (256 KiB to 1 MiB measure about the same)
VALUE_BLOCK_ROWS = 256  # rows of weights per product with V: fewer makes each matrix product slow, more multiplies more zeros above the diagonal
HUGE_PAGE = 2 << 20  # bytes in a transparent huge page (x86-64; arm64 with 4 KiB pages)


def float_type(a: np.ndarray) -> np.dtype:
    """The precision attention runs in: float32 stays float32 (as a model runs); anything else float64 (the reference, training)."""
    return np.dtype(np.float32) if a.dtype == np.float32 else np.dtype(np.float64)


def zero_matrices(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """Fresh zeroed memory for the [n, n] results of the heads, which outlive the call (so no buffer can be reused).

    From half a huge page up, it is an anonymous mapping advised to use 2 MiB pages: the kernel
    zeroes it in a few page faults instead of one per 4 KiB page (at n = 512 a head's three
    float32 matrices are 768 small pages, milliseconds of faults on a virtual machine).
    Where huge pages are unknown (not Linux), np.zeros.
    """
    size = math.prod(shape)
    nbytes = size * np.dtype(dtype).itemsize
    if nbytes < HUGE_PAGE // 2 or not hasattr(mmap, "MADV_HUGEPAGE"):
        return np.zeros(shape, dtype)
    pages = mmap.mmap(-1, -(-nbytes // HUGE_PAGE) * HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # whole huge pages, zero until written
    try:
        pages.madvise(mmap.MADV_HUGEPAGE)
    except OSError:  # a kernel without transparent huge pages: the mapping still works, in small pages
        pass
    return np.frombuffer(pages, dtype, size).reshape(shape)


def row_spans(mask: np.ndarray | None, n_rows: int, n: int, block_rows: int) -> list[tuple[int, int, int, int]]:
    """Blocks of `block_rows` query rows (r0, r1, lo, hi) of an [n_rows, n] matrix.

    Every row of a block sees keys [0, lo); no row of it sees a key from hi on. Only [lo, hi)
    needs the mask: under the causal mask that is the block's diagonal tile, and the keys from
    hi on (the upper triangle, half the matrix) take no arithmetic at all. A matrix that is a
    single block is masked as a whole.
    """
    starts = list(range(0, n_rows, max(1, block_rows)))
    ends = starts[1:] + [n_rows]
    if mask is None:
        return [(r0, r1, n, n) for r0, r1 in zip(starts, ends)]
    if len(starts) <= 1:
        return [(0, n_rows, 0, n)] if n_rows else []
    first_hidden = np.argmin(mask, axis=1)  # [n_rows]: each query's first hidden key (0 also when it sees every key)
    first_hidden[mask[np.arange(n_rows), first_hidden]] = n  # ... those see every key
    lo = np.minimum.reduceat(first_hidden, starts).tolist()  # [blocks]
    hi = np.maximum.reduceat(first_hidden, starts).tolist()  # [blocks]: right when each row sees a prefix of the keys (causal, padding)
    spans = []
    for r0, r1, lo_block, hi_block in zip(starts, ends, lo, hi):
        if hi_block < n and mask[r0:r1, hi_block:].any():  # a row that sees a key after one it may not: find the block's last
            seen = mask[r0:r1].any(axis=0)  # [n]: keys some query of the block sees
            hi_block = n - int(np.argmax(seen[::-1]))
        spans.append((r0, r1, min(lo_block, hi_block), hi_block))
    return spans


def distance_penalty(rows: np.ndarray, n: int, slopes: np.ndarray) -> np.ndarray:  # [b], n, [h, 3] -> [h, b, n]
    """What query i loses on key j: ALiBi's slope_before * (i - j) for an earlier key, slope_after * (j - i) for
    a later one (Press et al. 2022), and a fixed cost on itself (a relative bias at offset 0, as T5 learns one)."""
    gap = rows[:, None] - np.arange(n)[None, :]  # [b, n]: > 0 for keys before the query
    before, after, itself = (slopes[:, c, None, None] for c in range(3))  # [h, 1, 1] each
    return np.where(gap > 0, before * gap, np.where(gap < 0, -after * gap, itself))  # [h, b, n]


def head_slopes(heads: list, dtype: np.dtype) -> np.ndarray | None:  # -> [h, 3] or None
    """The heads' distance costs [h, 3], zero for a head without; None when no head has any."""
    if all(x.distance is None for x in heads):
        return None
    return np.array([np.zeros(3) if x.distance is None else x.distance for x in heads], dtype=dtype)  # [h, 3]


def scaled_softmax(scores: np.ndarray, root: float | None, mask: np.ndarray | None, spans: list, masked: np.ndarray, weights: np.ndarray,
                   slopes: np.ndarray | None = None, sinks: np.ndarray | None = None) -> np.ndarray | None:
    """masked = scores / root (root None: scores as they are) - distance penalty, -inf where hidden; weights = softmax of its rows.

    All [..., n, n] (a stack of heads shares the mask); `weights` must start as zeros: keys
    hidden from a whole block of rows are never written. slopes: [h, 3] per head of the stack (distance_penalty), or None.
    sinks: [h] per head, the score of a key every query sees that writes nothing (-inf: none), or None;
    then returns each query's weight on it, [..., n].
    """
    n = scores.shape[-1]
    sunk = None if sinks is None else np.zeros(scores.shape[:-1], weights.dtype)  # [..., n]
    sink_column = None if sinks is None else np.asarray(sinks, dtype=weights.dtype).reshape(*scores.shape[:-2], 1, 1)  # [h, 1, 1] or [1, 1]
    for r0, r1, lo, hi in spans:
        m, w = masked[..., r0:r1, :], weights[..., r0:r1, :]  # [..., b, n] views
        if hi < n:
            m[..., hi:] = -np.inf  # keys no row of the block may see (their weights stay 0)
        if root is None:
            m[..., :hi] = scores[..., r0:r1, :hi]
        else:  # divided, not multiplied by 1/root: the float64 reference rounds once
            np.divide(scores[..., r0:r1, :hi], root, out=m[..., :hi])
        if slopes is not None:
            seen = m[..., :hi]  # [h, b, hi] for a stack of heads, [b, hi] for one matrix
            seen -= distance_penalty(np.arange(r0, r1), hi, slopes).astype(m.dtype, copy=False).reshape(seen.shape)
        if lo < hi:  # keys some rows of the block see and others do not
            np.copyto(m[..., lo:hi], -np.inf, where=~mask[r0:r1, lo:hi])
        if hi:
            rest = softmax_rows_into(m[..., :hi], w[..., :hi], sink_column)
            if rest is not None:
                sunk[..., r0:r1] = rest[..., 0]
        elif sunk is not None:  # rows that see no key at all: what weight there is goes to the sink
            sunk[..., r0:r1] = np.where(np.isfinite(sink_column[..., 0]), 1.0, 0.0)
    return sunk


def block_rows(n: int, stack: int, dtype: np.dtype) -> int:
    """Rows per block so that a block of a stack of `stack` [n, n] matrices is about ROW_BLOCK_BYTES."""
    return ROW_BLOCK_BYTES // max(1, stack * n * dtype.itemsize)


def attention_weights(scores: np.ndarray, d_k: int, mask: np.ndarray | None, scale: bool = True, distance: np.ndarray | None = None,
                      sink: float | None = None):  # [n, n] -> [n, n], [n, n]
    """(masked, weights): scores / sqrt(d_k) (or as they are, `scale=False`), -inf where the mask hides a key; softmax of each row.

    Runs in the precision of `scores` (float32 stays float32), one block of rows at a time, and
    only over the keys a block can see: a key hidden from every row of a block is filled in
    (-inf, weight 0) but never divided, exponentiated or summed. With a `sink` score, each row's
    weights sum to 1 less the sink's (see Head.sink).
    """
    scores = np.asarray(scores)
    dtype = float_type(scores)
    mask = None if mask is None else np.asarray(mask, dtype=bool)
    n_rows, n = scores.shape
    masked, weights = zero_matrices((2, n_rows, n), dtype)  # [n, n] each
    spans = row_spans(mask, n_rows, n, block_rows(n, 1, dtype))
    slopes = None if distance is None else np.asarray(distance, dtype=dtype)[None, :]  # [1, 3]
    sinks = None if sink is None else np.array([sink], dtype=dtype)  # [1]
    scaled_softmax(scores, dtype.type(math.sqrt(d_k)) if scale else None, mask, spans, masked, weights, slopes, sinks)
    return masked, weights


def weighted_values(weights: np.ndarray, v: np.ndarray, spans: list) -> np.ndarray:  # [..., n, n], [..., n, d_v] -> [..., n, d_v]
    """weights V over the keys each block of rows can see (the causal mask halves the work).

    Blocks are joined to at least VALUE_BLOCK_ROWS rows, where the matrix product runs well.
    """
    out = np.zeros((*weights.shape[:-1], v.shape[-1]), weights.dtype)  # [..., n, d_v]; rows that see no key stay 0
    start, end = 0, 0
    for r0, r1, _, hi in spans:
        end = max(end, hi)
        if r1 - start >= VALUE_BLOCK_ROWS or r1 == spans[-1][1]:
            np.matmul(weights[..., start:r1, :end], v[..., :end, :], out=out[..., start:r1, :])  # [..., b, end] x [..., end, d_v]
            start = r1
    return out


def split_update(weights: np.ndarray, v: np.ndarray, delta: np.ndarray, w_o: np.ndarray | None):
    """Delta E = self + context: the self part w_ii v_i (then W_O) and the rest, sum_{j != i} w_ij v_j (then W_O).

    weights [..., n, n], v [..., n, d_v], delta [..., n, d] (weights V, then W_O) -> ([..., n, d], [..., n, d]).
    The self part costs n * d_v multiplications; the context part is what is left of Delta E.
    """
    own = np.diagonal(weights, axis1=-2, axis2=-1)[..., None] * v  # [..., n, 1] * [..., n, d_v] -> [..., n, d_v]
    if w_o is not None:
        own = own @ w_o  # [..., n, d_v] x [..., d_v, d] -> [..., n, d]
    return own, delta - own


class Attended(Record):
    """What `attend` computed for a stack of heads (a plain class: see Head)."""

    __slots__ = ("scores", "masked", "weights", "values", "sink")

    def __init__(self, scores, masked, weights, values, sink):
        self.scores = scores  # [h, n, n] Q K^T as computed, before scaling (None unless kept)
        self.masked = masked  # [h, n, n] scores / root - distance costs, -inf where the mask hides a key
        self.weights = weights  # [h, n, n] softmax of each row of `masked` (with a sink, the row sums to 1 less its weight)
        self.values = values  # [h, n, d_v] weights V: each query's mix of the values it attends to
        self.sink = sink  # [h, n] each query's weight on the sink, or None (no head has one)


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None, *, root: float | None,
           slopes: np.ndarray | None = None, sinks: np.ndarray | None = None, keep_scores: bool = True) -> Attended:
    """softmax(Q K^T / root - distance, masked) V for a stack of heads: the one attention step of every model.

    q [h, n, d_k]; k [h_kv, n, d_k] and v [h_kv, n, d_v] with h_kv dividing h: the g = h / h_kv
    query heads h_kv * 0 .. g - 1, ... share one key/value head each (grouped-query attention;
    h_kv = h: a key and value head per query head). root: what the scores are divided by
    (sqrt(d_k)), or None to leave them as they are. slopes [h, 3]: distance costs (see
    distance_penalty); sinks [h]: the score of a key that writes nothing (-inf: none). Without
    `keep_scores` the raw Q K^T is not kept: its memory becomes `masked`.

    Runs in q's precision; the [n, n] matrices are worked one block of query rows at a time, each
    only over the keys it can see (row_spans).
    """
    dtype = float_type(q)
    h, n, d_k = q.shape
    h_kv = k.shape[0]
    g = h // h_kv
    mask = None if mask is None else np.asarray(mask, dtype=bool)
    if keep_scores:
        scores, masked, weights = zero_matrices((3, h, n, n), dtype)  # [h, n, n] each
    else:
        scores = None
        masked, weights = zero_matrices((2, h, n, n), dtype)
    product = masked if scores is None else scores
    np.matmul(q.reshape(h_kv, g, n, d_k), k.transpose(0, 2, 1)[:, None], out=product.reshape(h_kv, g, n, n))  # [h_kv, g, n, d_k] x [h_kv, 1, d_k, n]
    spans = row_spans(mask, n, n, block_rows(n, h, dtype))
    sunk = scaled_softmax(product, root, mask, spans, masked, weights, slopes, sinks)
    values = weighted_values(weights.reshape(h_kv, g, n, n), v[:, None], spans).reshape(h, n, v.shape[-1])  # [h_kv, g, n, n] x [h_kv, 1, n, d_v]
    return Attended(scores, masked, weights, values, sunk)


def run_heads(e: np.ndarray, heads: list[Head], mask: np.ndarray | None, scale: bool = True) -> list[HeadResult]:  # e: [n, d]
    """Heads of the same shapes (d_k, d_v, with or without W_O) over E, as one stack: each step is one call for all of them.

    Runs in E's precision: float32 E gives float32 results throughout (the heads' matrices are
    cast to it), as a model runs; any other E, float64 (training relies on it).
    """
    if len({(x.d_k, x.w_v.shape[1], x.w_o is None) for x in heads}) != 1:
        raise ValueError("run_heads takes one or more heads of the same shapes (d_k, d_v, W_O or not); multi_head takes any")
    e = np.asarray(e)
    dtype = float_type(e)
    e = e.astype(dtype, copy=False)
    n, h, d_k = len(e), len(heads), heads[0].d_k
    w_qkv = np.concatenate([w for x in heads for w in (x.w_q, x.w_k, x.w_v)], axis=1, dtype=dtype)  # [d, h (2 d_k + d_v)], head by head
    qkv = (e @ w_qkv).reshape(n, h, w_qkv.shape[1] // h).transpose(1, 0, 2)  # [n, d] x [d, h (2 d_k + d_v)] -> [h, n, 2 d_k + d_v]
    q, k, v = qkv[..., :d_k], qkv[..., d_k : 2 * d_k], qkv[..., 2 * d_k :]  # [h, n, d_k], [h, n, d_k], [h, n, d_v]
    if any(x.b_q is not None for x in heads):
        q += np.array([np.zeros(d_k) if x.b_q is None else x.b_q for x in heads], dtype=dtype)[:, None, :]  # [h, 1, d_k]
    w_o = None if heads[0].w_o is None else np.stack([x.w_o for x in heads]).astype(dtype, copy=False)  # [h, d_v, d]
    sinks = None if all(x.sink is None for x in heads) else np.array([-np.inf if x.sink is None else x.sink for x in heads], dtype=dtype)  # [h]
    out = attend(q, k, v, mask, root=dtype.type(math.sqrt(d_k)) if scale else None, slopes=head_slopes(heads, dtype), sinks=sinks)
    delta = out.values if w_o is None else out.values @ w_o  # [h, n, d_v] x [h, d_v, d] -> [h, n, d]
    own, context = split_update(out.weights, v, delta, w_o)  # [h, n, d], [h, n, d]
    return [HeadResult(out.scores[i], out.masked[i], out.weights[i], delta[i], own[i], context[i], None if heads[i].sink is None else out.sink[i],
                       v[i]) for i in range(h)]


def run_head(e: np.ndarray, head: Head, mask: np.ndarray | None, scale: bool = True) -> HeadResult:  # e: [n, d]
    """One head over E; `scale=False` skips the division of the scores by sqrt(d_k). In E's precision (see run_heads)."""
    return run_heads(e, [head], mask, scale)[0]


def total(arrays: list[np.ndarray], like: np.ndarray) -> np.ndarray:  # [h][n, d] -> [n, d]
    """The heads' [n, d] arrays added up in order (zeros like `like` for no heads)."""
    if not arrays:
        return np.zeros_like(like)
    out = arrays[0].copy()
    for a in arrays[1:]:
        out += a
    return out


def multi_head(e: np.ndarray, heads: list[Head], mask: np.ndarray | None, scale: bool = True, parts: bool = False):
    """Every head sees the same E; their updates add up: E' = E + sum_h Delta E_h.

    Heads of the same shapes run as one stack (run_heads). Returns (outs, Delta E [n, d], E' [n, d]);
    with `parts=True` also the summed self and context parts of Delta E ([n, d] each; self +
    context = Delta E): (outs, delta, e', self, context).
    """
    groups: dict[tuple, list[int]] = {}
    for i, head in enumerate(heads):
        groups.setdefault((head.d_k, head.w_v.shape[1], head.w_o is None), []).append(i)
    outs: list = [None] * len(heads)
    for members in groups.values():
        for i, out in zip(members, run_heads(e, [heads[i] for i in members], mask, scale)):
            outs[i] = out
    delta = total([o.delta for o in outs], e)  # [n, d]
    if not parts:
        return outs, delta, e + delta
    own = total([o.delta_self for o in outs], e)  # [n, d]
    context = total([o.delta_context for o in outs], e)  # [n, d]
    return outs, delta, e + delta, own, context
