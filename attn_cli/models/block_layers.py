"""A quantized file's matrices read where they lie: Weights' products straight from the blocks (sources.products).

A pass over a few rows (a generated token, a short prompt) multiplies each matrix of a quantized GGUF file from its blocks
in the mapped file, and the output head too: nothing is dequantized, and attn holds no float32 copy of a layer.
"""

import numpy as np

from attn_cli.models.sources import products
from attn_cli.models.sources.products import Blocks


class BlockLayers:
    """The products half of Weights (mixed into it: it reads self.eager, self.plan, self.tensor, self.read, self.layer_keys,
    self.unembedding_key, self._blocks and self._block_layers)."""

    def products_for(self, rows: int | None, l: int | None = None) -> bool:
        """Whether a pass over `rows` rows multiplies a quantized file's matrices (layer l's) straight from their blocks
        (sources.products), with the compiled products built: a generated token (FEW_ROWS), or a short prompt whose layers
        are not held as float32 (FIRST_PASS_ROWS: dequantizing them would cost more than the products)."""
        if rows is None or products.COMPILED is None or self.eager:
            return False
        return rows <= products.FEW_ROWS or (rows <= products.FIRST_PASS_ROWS and (l is None or not self._kept(l)))

    def blocks(self, key: str):
        """A matrix as its file's blocks (sources.products.Blocks: x times its stored rows, so x @ W for a Linear's
        [out, in] and the logits for the vocabulary's table), made once; None when a part is not blocks of a type the
        products read (an F32 matrix, Q2_K) or is stored otherwise."""
        if key in self._blocks:
            return self._blocks[key]
        parts = [tensor.blocks() if layout in ("linear", "table") and hasattr(tensor, "blocks") else None for tensor, layout in self.plan[key]]
        found = None
        if all(p is not None and p[1] in products.TYPES for p in parts):
            found = Blocks(parts)
            probe = found.product(np.ones((1, found.shape[0]), np.float32))  # a weight that is not finite: refused once, as read() does
            if not np.isfinite(probe).all():
                self.read(key)
        self._blocks[key] = found
        return found

    def block_layer(self, l: int) -> dict:
        """Layer l for products_for(): each matrix as Blocks, the rest (norms, biases, a matrix Blocks cannot read) as
        float32, made once and kept: the blocks are the mapped file itself, so keeping them costs no memory of attn's."""
        if l not in self._block_layers:
            prefix = f"layers.{l}."
            layer = {k[len(prefix):]: self.blocks(k) if self.blocks(k) is not None else self.tensor(k) for k in self.layer_keys(l)}
            gate, up = layer.get("mlp.gate.w"), layer.get("mlp.in.w")
            if isinstance(gate, Blocks) and isinstance(up, Blocks) and gate.shape[0] == up.shape[0]:  # both from x: one call
                layer["mlp.gate_in.w"] = Blocks.joined(gate, up)
            self._block_layers[l] = layer
        return self._block_layers[l]

    def head_blocks(self, rows: int):
        """The output projection as Blocks for logits of `rows` rows (products_for()), else None."""
        return self.blocks(self.unembedding_key()) if self.products_for(rows) else None
