"""What `inspect` keeps of a checkpoint's pass when it need not keep everything: the heads it shows in full, and the
figures of the rest made by watchers as the pass runs (models.points.Keep), so no [L, H, n, n] and no [L + 1, n, d] exist.

    StreamNumbers   per layer and token |attention update|, |MLP update|, |x|, cos(x_l, x_{l-1}) (residual.layer_numbers),
                    and the --focus token's rows of the stream (residual.residual reads them as a one-token trace)
    FirstToken      each head's mean weight on the first token, over the queries after it
    Pooled          each head's weights averaged over blocks of tokens (the model view of a long text)
"""

import numpy as np

from attn_cli.models.base import Trace
from attn_cli.results.numbers import row_cosines

POOLED = 64  # a long text's model view: each head pooled to at most this many blocks of tokens a side


class StreamNumbers:
    """Watchers of resid_pre, resid_mid and resid_post making residual.layer_numbers' figures, and the focus row's stream."""

    def __init__(self, n_layers: int, n: int, focus: int | None = None):
        self.attn_norms, self.mlp_norms = np.zeros((n_layers, n), np.float32), np.zeros((n_layers, n), np.float32)
        self.norms, self.layer_cosines = np.zeros((n_layers + 1, n), np.float32), np.zeros((n_layers, n), np.float32)
        self.focus, self.store = focus, {}
        self._pre = self._mid = None

    def watch(self) -> dict:
        return {"resid_pre": self.pre, "resid_mid": self.mid, "resid_post": self.post}

    def keep_row(self, point: str, l: int, x: np.ndarray) -> None:
        if self.focus is not None:
            self.store[(point, l)] = x[self.focus : self.focus + 1].copy()

    def pre(self, l: int, x: np.ndarray) -> None:  # [n, d]
        self._pre = x
        if l == 0:
            self.norms[0] = np.linalg.norm(x, axis=-1)
        self.keep_row("resid_pre", l, x)

    def mid(self, l: int, x: np.ndarray) -> None:
        self.attn_norms[l] = np.linalg.norm(x - self._pre, axis=-1)
        self._mid = x
        self.keep_row("resid_mid", l, x)

    def post(self, l: int, x: np.ndarray) -> None:
        self.mlp_norms[l] = np.linalg.norm(x - self._mid, axis=-1)
        self.norms[l + 1] = np.linalg.norm(x, axis=-1)
        self.layer_cosines[l] = row_cosines(x, self._pre)
        self.keep_row("resid_post", l, x)

    def numbers(self) -> dict:
        return {"attn_norms": self.attn_norms, "mlp_norms": self.mlp_norms, "norms": self.norms, "layer_cosines": self.layer_cosines}

    def focus_trace(self, tokens, n_layers: int) -> Trace:
        """The focus token's stream as a trace of one position (residual.residual(model, it, 0, k))."""
        return Trace(tokens, store=dict(self.store), n_layers=n_layers)


class FirstToken:
    """A watcher of attn.pattern: per layer and head, the mean weight on the first key over the queries after the first."""

    def __init__(self, n_layers: int, n_heads: int, n: int):
        self.sums, self.n = np.zeros((n_layers, n_heads)), n

    def watch(self, l: int, block) -> None:
        if block.lo == 0:
            column = block.values[:, :, 0]  # [H, b]
            self.sums[l] += column.sum(axis=1, dtype=np.float64) - (column[:, 0] if block.first == 0 else 0.0)

    def means(self) -> np.ndarray | None:  # [L, H]
        return (self.sums / (self.n - 1)).astype(np.float32) if self.n > 1 else None


class Pooled:
    """A watcher of attn.pattern: each head's weights summed over square blocks of `side` tokens, then averaged ([L, H, p, p])."""

    def __init__(self, n_layers: int, n_heads: int, n: int, blocks: int = POOLED):
        self.side = -(-n // blocks)  # tokens per block
        self.p = -(-n // self.side)
        self.sums = np.zeros((n_layers, n_heads, self.p, self.p))
        self.n = n

    def watch(self, l: int, block) -> None:
        h, b, k = block.values.shape
        rows = (np.arange(block.first, block.first + b) // self.side)  # [b] each row's block
        keys = (np.arange(block.lo, block.lo + k) // self.side)  # [k]
        by_key = np.zeros((h, b, self.p))
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        by_key[:, :, keys[starts]] = np.add.reduceat(block.values, starts, axis=2, dtype=np.float64)  # [H, b, key blocks]
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        self.sums[l][:, rows[starts]] += np.add.reduceat(by_key, starts, axis=1)

    def means(self) -> np.ndarray:  # [L, H, p, p]: over a block's queries, the mean of their summed weight on a block's keys (units.pool)
        sizes = np.minimum(self.side, self.n - np.arange(self.p) * self.side).astype(np.float64)  # tokens in each block
        return self.sums / sizes[:, None]


def watchers(*callables) -> "callable":
    """One watcher calling each of `callables` in turn."""
    return lambda l, value: [f(l, value) for f in callables if f is not None] and None
