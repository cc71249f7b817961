"""Keys and values of the positions a model has already run, so a pass over new tokens reads them instead of recomputing.

Per layer: keys [h_kv, t, d_head] (after RoPE: a key's position is fixed when it is made) and values
[h_kv, t, d_head], as llama.cpp's KV cache and transformers' DynamicCache hold them. A pass with
`cache=` runs only its new tokens, at positions cache.length .. cache.length + n - 1, and appends
their keys and values; positions (RoPE, learned positions, the causal mask, sliding windows) come
from those absolute positions, so a cached pass computes what the full pass computes.

Longrope (Phi-3's 128k models) turns every position with short or long factors by the whole sequence's length: when
appending takes the sequence past the original context, the keys held were turned with the short factors, so they are
made again, once, by a pass over the ids held with the long ones (see `long_factors`).
"""

import numpy as np


class KVCache:
    """The keys and values of every layer of `model` for the positions run so far (length)."""

    __slots__ = ("n_layers", "length", "keys", "values", "_pending", "ids", "long")

    def __init__(self, model):
        self.n_layers = model.spec.n_layers
        self.length = 0  # positions held
        self.ids: list[int] = []  # their token ids, to make their keys again (long_factors)
        self.long = False  # whether the keys held were turned with longrope's long factors
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

    def advance(self, ids=()) -> None:
        """The pass is done: its positions (token ids `ids`) are now the cache's."""
        self.length += self._pending
        self.ids.extend(ids)
        self._pending = 0

    def long_factors(self, model, length: int, appending: bool = True) -> bool:
        """Whether a pass that makes the sequence `length` tokens long turns with longrope's long factors. They are
        decided by the whole sequence (a cache only grows: once long, always long). A pass `appending` to a cache of
        keys turned with the short factors that takes the sequence past the original context first makes the keys held
        again, with the long factors: the pass over their ids that a full pass over the sequence would make."""
        from attn_cli.core.blocks import longrope_long
        from attn_cli.models.points import Keep

        long = self.long or longrope_long(model.spec.rope_scaling, length)
        if long and not self.long and appending:
            ids, self.long = self.ids, True
            self.length, self.ids, self.keys, self.values = 0, [], [None] * self.n_layers, [None] * self.n_layers
            if ids:
                model.forward(ids, keep=Keep.nothing(), cache=self)
        return long

    def prefix(self, length: int) -> "KVCache":
        """The first `length` positions, sharing this cache's arrays: for passes that read them and append nothing
        (a pass started from given streams, models.points.Start)."""
        view = object.__new__(KVCache)
        view.n_layers, view.length, view._pending = self.n_layers, min(length, self.length), 0
        view.ids, view.long = self.ids[: view.length], self.long
        view.keys, view.values = list(self.keys), list(self.values)
        return view

    def past(self, l: int) -> tuple[np.ndarray, np.ndarray]:
        """Layer l's keys and values of the positions held ([h_kv, length, d_head] each), read only."""
        return self.keys[l][:, : self.length], self.values[l][:, : self.length]

    def nbytes(self) -> int:
        return sum(a.nbytes for store in (self.keys, self.values) for a in store if a is not None)
