"""One forward pass's bookkeeping (models.transformer): what it keeps and edits, where it starts, what it has stored."""

import numpy as np

from attn_cli.models.cache import KVCache
from attn_cli.models.points import AXES, Keep, apply_edits, edits_at


class Run:
    """One forward pass's bookkeeping: what it keeps and edits, where it starts, and what it has stored."""

    __slots__ = ("keep", "edits", "cache", "offset", "batched", "read_only", "threads", "store", "rotary")

    def __init__(self, keep: Keep, edits: list, cache: KVCache | None, offset: int, batched: bool, read_only: bool = False, threads: int = 1):
        self.keep, self.edits, self.cache, self.offset, self.batched = keep, edits, cache, offset, batched
        self.read_only = read_only  # the cache is read, not appended to (a pass started from given streams)
        self.threads = threads  # BLAS's threads (io.blas.threads_for): how a product is best asked of BLAS depends on them
        self.store: dict = {}
        self.rotary = None

    def unbatched(self, value: np.ndarray) -> np.ndarray:  # [B, ...] -> [...] when the pass has no batch axis
        return value if self.batched else value[0]

    def point(self, name: str, l: int | None, value: np.ndarray) -> np.ndarray:
        """`value` ([B, ...]) at point (name, l): edited, shown to its watcher, stored as kept; returns what the pass goes on with."""
        if self.edits:
            value = apply_edits(self.edits, name, l, value)
        keep = self.keep
        if name in keep.watch:
            keep.watch[name](l, self.unbatched(value))
        if keep.wants(name, l):
            kept = value
            axes = AXES[name]
            if keep.rows is not None and "n" in axes:
                kept = np.take(kept, keep.row_index(value.shape[axes.index("n") - len(axes)]), axis=axes.index("n") - len(axes))
            if keep.heads is not None and "H" in axes:
                kept = np.take(kept, keep.heads, axis=axes.index("H") - len(axes))
            self.store[(name, l)] = self.unbatched(kept)
        return value

    def block_editor(self, l: int, batch: int, h: int):
        """The edits of layer l's attn.scores and attn.pattern as attend_rows makes them, a block of rows at a time (None: none)."""
        mine = [e for p in ("attn.scores", "attn.pattern") for e in edits_at(self.edits, p, l)]
        if not mine:
            return None

        def edit(point: str, r0: int, r1: int, lo: int, block: np.ndarray) -> None:  # block [B h, b, k]: rows r0 .. r1 - 1, keys lo ..
            view = block.reshape(batch, h, r1 - r0, block.shape[-1])  # [B, h, b, k], the same memory
            for e in mine:
                if e.point == point:
                    e.apply(view, at=(r0, lo))

        return edit
