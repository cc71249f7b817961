"""Keys and values of the positions a model has already run, so a pass over new tokens reads them instead of recomputing.

Per layer: keys [h_kv, t, d_head] (after RoPE: a key's position is fixed when it is made) and values
[h_kv, t, d_head], as llama.cpp's KV cache and transformers' DynamicCache hold them. A pass with
`cache=` runs only its new tokens, at positions cache.length .. cache.length + n - 1, and appends
their keys and values; positions (RoPE, learned positions, the causal mask, sliding windows) come
from those absolute positions, so a cached pass computes what the full pass computes.
"""

import numpy as np


class KVCache:
    """The keys and values of every layer of `model` for the positions run so far (length)."""

    __slots__ = ("n_layers", "length", "keys", "values", "_pending")

    def __init__(self, model):
        self.n_layers = model.spec.n_layers
        self.length = 0  # positions held
        self.keys: list[np.ndarray | None] = [None] * self.n_layers  # [h_kv, capacity, d_head] each; rows 0 .. length - 1 used
        self.values: list[np.ndarray | None] = [None] * self.n_layers
        self._pending = 0  # new positions appended by the pass under way (length moves when it ends)

    def layer(self, l: int, k_new: np.ndarray, v_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Layer l's keys and values with the pass's new ones appended ([h_kv, length + n, d_head] each, views of the cache)."""
        n = k_new.shape[1]
        self._pending = n
        end = self.length + n
        for store in (self.keys, self.values):
            new = k_new if store is self.keys else v_new
            held = store[l]
            if held is None or held.shape[1] < end:  # grow by doubling: appending a token at a time stays linear
                grown = np.empty((new.shape[0], max(end, 2 * (0 if held is None else held.shape[1]), 16), new.shape[2]), new.dtype)
                if held is not None:
                    grown[:, : self.length] = held[:, : self.length]
                store[l] = held = grown
            held[:, self.length : end] = new
        return self.keys[l][:, :end], self.values[l][:, :end]

    def advance(self) -> None:
        """The pass is done: its positions are now the cache's."""
        self.length += self._pending
        self._pending = 0

    def nbytes(self) -> int:
        return sum(a.nbytes for store in (self.keys, self.values) for a in store if a is not None)
