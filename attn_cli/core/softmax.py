"""Softmax in plain NumPy, on the last axis: what every head applies to its scores, and what
`attn softmax` shows. A module of its own so that `attn softmax` reads only this (attention.py,
the rest of the math, is several times its size and costs start-up time).
"""

import math

import numpy as np


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


def softmax_rows_into(x: np.ndarray, out: np.ndarray, sink: np.ndarray | None = None) -> np.ndarray | None:  # [..., m] -> out [..., m]
    """out = softmax(x) along the last axis, written into `out` (x is left as it is).

    The usual case (every row has a finite maximum) in four in-place passes; a block with a
    fully masked row, +inf or NaN goes through `softmax`, which defines those cases.
    `sink` [..., 1]: the score of one more column that is not written out; returns its weights [..., 1]
    (the row's other weights then sum to 1 minus it). None: no such column (returns None).
    """
    top = np.maximum.reduce(x, axis=-1, keepdims=True)  # [..., 1]
    if sink is not None:
        top = np.maximum(top, sink)  # a finite sink gives every row a finite maximum
    if not np.isfinite(top).all():
        if sink is None:
            out[...] = softmax(x)
            return None
        both = softmax(np.concatenate([x, np.broadcast_to(sink, top.shape).astype(x.dtype)], axis=-1))  # [..., m + 1]
        out[...] = both[..., :-1]
        return both[..., -1:]
    np.subtract(x, top, out=out)  # <= 0: exp cannot overflow
    np.exp(out, out=out)  # masked entries are -inf here: exp gives exactly 0
    total = np.add.reduce(out, axis=-1, keepdims=True)  # [..., 1]
    rest = None if sink is None else np.exp(sink - top)  # [..., 1] the sink's exp
    if rest is not None:
        total += rest
    np.divide(out, total, out=out)  # each sum is >= 1: the maximum's own exp(0)
    return None if rest is None else rest / total


def softmax_at(logits: np.ndarray):  # [V] float32 -> (token id -> its probability, float)
    """softmax(logits) read at a few tokens: exp over the vocabulary once in float32, summed in float64 (Gemma's
    262,144 logits: a fraction of a float64 softmax of them all), each probability exp(l - logsumexp) in float64."""
    top = float(logits.max())
    total = np.exp(logits - np.float32(top)).sum(dtype=np.float64)
    lse = top + math.log(total)
    return lambda j: math.exp(float(logits[j]) - lse)
