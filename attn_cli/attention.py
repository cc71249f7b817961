"""Attention math in plain NumPy: no classes of state, no I/O, no terminal code.

Shape letters: n = tokens in the sentence, d = d_model (word-vector size), d_k = query/key
size, d_v = value size. Queries are rows: weights[i, j] is how much token i attends to j.
"""

from dataclasses import dataclass

import numpy as np

POSITION_SCALE = 0.5  # sinusoids have norm sqrt(d/2) (5.0 at d=50), GloVe words a median 4.7: position is a clear signal, not the main one


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(x) / sum(exp(x)) along `axis`, stable for any input.

    The max is subtracted first so nothing overflows. -inf entries get exactly 0. Where a
    slice holds +inf entries they share the mass equally. A slice that is all -inf (a
    fully masked row) gets all zeros, never NaN: such a token takes nothing from context.
    """
    x = np.asarray(x, dtype=np.float64)
    top = np.max(x, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0.0)
    pos_inf = np.isposinf(top)
    if not pos_inf.any():  # the usual case, kept fast: attention runs it once per head per sentence
        e = np.exp(x - shift)
        total = np.sum(e, axis=axis, keepdims=True)
        return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    with np.errstate(invalid="ignore"):  # inf - inf where a slice has +inf; replaced below
        e = np.exp(x - shift)
    total = np.sum(np.where(np.isnan(e), 0.0, e), axis=axis, keepdims=True)
    out = np.divide(e, total, out=np.zeros_like(e), where=(total > 0) & np.isfinite(total))
    pos_inf = np.isposinf(x)
    n_inf = np.sum(pos_inf, axis=axis, keepdims=True)
    return np.where(n_inf > 0, pos_inf / np.maximum(n_inf, 1), out)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """log(softmax(x)) computed as x - max - log(sum(exp(x - max))): exact far into the tail."""
    x = np.asarray(x, dtype=np.float64)
    if np.isposinf(x).any():
        with np.errstate(divide="ignore"):
            return np.log(softmax(x, axis))
    top = np.max(x, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0.0)
    total = np.sum(np.exp(x - shift), axis=axis, keepdims=True)
    with np.errstate(divide="ignore"):
        return x - shift - np.log(total)


def softmax_with_temperature(x: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(x / T). T = 0 is the limit: the maximum takes all (ties share equally)."""
    x = np.asarray(x, dtype=np.float64)
    if temperature < 0:
        raise ValueError("temperature must be >= 0")
    if temperature == 0:
        is_max = x == np.max(x, axis=-1, keepdims=True)
        return is_max / np.sum(is_max, axis=-1, keepdims=True)
    top = np.max(x, axis=-1, keepdims=True)
    return softmax((x - np.where(np.isfinite(top), top, 0.0)) / temperature)  # shift first: x / T may overflow


def positional_encoding(n: int, d: int, scale: float = POSITION_SCALE) -> np.ndarray:  # -> [n, d]
    """Sinusoidal positions (Vaswani et al. 2017): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...)."""
    pos = np.arange(n)[:, None]  # [n, 1]
    rate = 1.0 / 10000 ** (np.arange(0, d, 2) / d)  # [ceil(d/2)]
    angles = pos * rate  # [n, ceil(d/2)]
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d // 2])
    return scale * pe


def input_embeddings(words: np.ndarray, position: bool = True) -> np.ndarray:  # [n, d] -> [n, d]
    """E = word vectors + positional encoding: what every head of `inspect` sees."""
    words = np.asarray(words, dtype=np.float64)
    return words + positional_encoding(*words.shape) if position else words


def causal_mask(n: int) -> np.ndarray:  # -> [n, n] bool, True where query i may see key j
    """Keys after their query are hidden: later words must not influence earlier ones."""
    return np.tril(np.ones((n, n), dtype=bool))


@dataclass
class Head:
    """One attention head: W_Q, W_K, W_V and an optional output map W_O (for a low-rank value map)."""

    name: str
    w_q: np.ndarray  # [d, d_k]
    w_k: np.ndarray  # [d, d_k]
    w_v: np.ndarray  # [d, d_v]
    w_o: np.ndarray | None = None  # [d_v, d]; None when d_v == d

    @property
    def d_k(self) -> int:
        return self.w_q.shape[1]


@dataclass
class HeadResult:
    scores: np.ndarray  # [n, n] Q K^T, before scaling
    masked: np.ndarray  # [n, n] scores / sqrt(d_k) (scores alone when not scaled), -inf where masked
    weights: np.ndarray  # [n, n] softmax over keys; rows sum to 1 (0 for a fully masked row)
    delta: np.ndarray  # [n, d] this head's contribution to Delta E
    delta_self: np.ndarray | None = None  # [n, d] w_ii v_i (then W_O): the token's own value, copied
    delta_context: np.ndarray | None = None  # [n, d] sum_{j != i} w_ij v_j (then W_O): what the other tokens wrote


def attention_weights(scores: np.ndarray, d_k: int, mask: np.ndarray | None, scale: bool = True):  # [n, n] -> [n, n], [n, n]
    """(masked, weights): scores / sqrt(d_k) (or as they are, `scale=False`), -inf where the mask hides a key; softmax of each row."""
    masked = scores / np.sqrt(d_k) if scale else scores
    if mask is not None:
        masked = np.where(mask, masked, -np.inf)
    return masked, softmax(masked)  # [n, n], [n, n]


def split_update(weights: np.ndarray, v: np.ndarray, delta: np.ndarray, w_o: np.ndarray | None):
    """Delta E = self + context: the self part w_ii v_i (then W_O) and the rest, sum_{j != i} w_ij v_j (then W_O).

    weights [n, n], v [n, d_v], delta [n, d] (weights V, then W_O) -> ([n, d], [n, d]). The self
    part costs n * d_v multiplications; the context part is what is left of Delta E.
    """
    own = np.diagonal(weights)[:, None] * v  # [n, 1] * [n, d_v] -> [n, d_v]
    if w_o is not None:
        own = own @ w_o  # [n, d_v] x [d_v, d] -> [n, d]
    return own, delta - own


def run_head(e: np.ndarray, head: Head, mask: np.ndarray | None, scale: bool = True) -> HeadResult:  # e: [n, d]
    """One head over E; `scale=False` skips the division of the scores by sqrt(d_k)."""
    q, k, v = e @ head.w_q, e @ head.w_k, e @ head.w_v  # [n, d_k], [n, d_k], [n, d_v]
    scores = q @ k.T  # [n, d_k] x [d_k, n] -> [n, n]
    masked, weights = attention_weights(scores, head.d_k, mask, scale)  # [n, n], [n, n]
    delta = weights @ v  # [n, n] x [n, d_v] -> [n, d_v]
    if head.w_o is not None:
        delta = delta @ head.w_o  # [n, d_v] x [d_v, d] -> [n, d]
    own, context = split_update(weights, v, delta, head.w_o)  # [n, d], [n, d]
    return HeadResult(scores, masked, weights, delta, own, context)


def multi_head(e: np.ndarray, heads: list[Head], mask: np.ndarray | None, scale: bool = True, parts: bool = False):
    """Every head sees the same E; their updates add up: E' = E + sum_h Delta E_h.

    Returns (outs, Delta E [n, d], E' [n, d]); with `parts=True` also the summed self and
    context parts of Delta E ([n, d] each; self + context = Delta E): (outs, delta, e', self, context).
    """
    outs = [run_head(e, head, mask, scale) for head in heads]
    delta = np.sum([o.delta for o in outs], axis=0) if outs else np.zeros_like(e)  # [n, d]
    if not parts:
        return outs, delta, e + delta
    own = np.sum([o.delta_self for o in outs], axis=0) if outs else np.zeros_like(e)  # [n, d]
    context = np.sum([o.delta_context for o in outs], axis=0) if outs else np.zeros_like(e)  # [n, d]
    return outs, delta, e + delta, own, context
