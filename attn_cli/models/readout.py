"""The output head, written once: what predict, the lens, explain, ablate, patch and generate read a stream through.

    decoder:     logits = cap tanh(norm_f(x) W_U^T / cap)     (the soft-cap only where the family has one: Gemma 2)
    masked LM:   logits = norm(act(x W_dense + b_dense)) W_U^T + b      (BERT's MLM head)

`frozen` makes the decoder's head the linear map it is at one position (TransformerLens's apply_ln_to_stack): the final
norm's scale is given (the point final_norm.scale of a pass), and the norm's bias and the soft-cap are left
out, so the parts of a stream give logits that sum to the model's own before its soft-cap; `bias` is what those
leave out, the constant part.
"""

import numpy as np

from attn_cli.core.blocks import ACTIVATIONS, F32, apply_linear, soft_cap
from attn_cli.errors import InputError

LOGIT_ROWS = 8192  # vocabulary rows multiplied at a time for the logits: [8192, d] float32


class Readout:
    """The output head of a Transformer (mixed into it: it reads self.spec, self.weights, self.norm, self.frozen_norm)."""

    @property
    def predicts(self) -> str | None:
        """What its output head predicts: "next" (a decoder: the next token), "mask" (a masked-LM head: a [MASK]), or None."""
        if self.spec.causal:
            return "next"
        return "mask" if self.weights.has("mlm.dense.w") else None

    def readout(self, rows: np.ndarray, frozen=None, ids: list[int] | None = None, cap: bool = True) -> np.ndarray:
        """Streams after the last layer through the output head: [m, d] -> [m, V] float32, or [m, len(ids)] with only those
        tokens' columns. frozen: the final norm's scale ([1] or [m, 1]): the linear map of the module's docstring, in
        float64, read at `ids` (a few tokens: explain's target and versus). cap: False leaves out the soft-cap (a decoder's logits before it)."""
        if self.predicts is None:
            raise InputError(f"{self.name} has no output head to predict with (an encoder without a masked-LM head)")
        w = self.weights
        with np.errstate(over="ignore", invalid="ignore"):
            if frozen is not None:
                if self.predicts != "next":
                    raise InputError(f"{self.name}'s output head is not linear: its stream does not split into parts")
                x = self.frozen_norm(rows, "final_norm", None, frozen) if self.spec.final_norm else np.asarray(rows, np.float64)
                return x @ self.output_rows(ids).T.astype(np.float64)  # [m, d] x [d, k] -> [m, k]
            if self.predicts == "mask":
                h = ACTIVATIONS[self.spec.activation](rows @ w.get("mlm.dense.w") + w.get("mlm.dense.b"))  # [m, d] x [d, d] -> [m, d]
                return self.logits(self.norm(h, w, "mlm.norm", None), ids) + (w.get("mlm.bias") if ids is None else w.get("mlm.bias")[ids])
            x = self.norm(rows, w, "final_norm", None) if self.spec.final_norm else rows
            logits = self.logits(x, ids)
            return logits if self.spec.final_softcap is None or not cap else soft_cap(logits, self.spec.final_softcap)

    def readout_bias(self, ids: list[int]) -> np.ndarray:  # -> [len(ids)] float64
        """What a frozen readout leaves out of every part, once: the final norm's bias through W_U (LayerNorm's; 0 for RMSNorm)."""
        b = self.weights.get("final_norm.b") if self.spec.final_norm else None
        return np.zeros(len(ids)) if b is None else self.output_rows(ids).astype(np.float64) @ b.astype(np.float64)

    def output_rows(self, ids: list[int]) -> np.ndarray:  # -> [len(ids), d] float32: W_U's rows of these tokens
        w = self.weights
        return w.rows(ids) if not w.has("unembed") else w.unembedding()[ids]

    def logits(self, rows: np.ndarray, ids: list[int] | None = None) -> np.ndarray:  # [m, d] -> [m, V] (or [m, len(ids)])
        """rows @ W_U^T, the output projection, a block of the vocabulary at a time (only the rows of `ids` when given)."""
        if ids is not None:
            return apply_linear(rows, self.output_rows(ids).T)  # [m, d] x [d, k] -> [m, k]
        head = self.weights.head_blocks(len(rows))
        if head is not None:  # a few rows: straight from the quantized table's blocks, nothing dequantized
            from attn_cli.io.blas import product_threads

            return head.product(np.asarray(rows, F32), product_threads())  # [m, d] x [d, V]
        out = np.empty((len(rows), self.spec.vocab_size), F32)
        for start, block in self.weights.each_unembedding_block(LOGIT_ROWS):  # [c, d] float32
            out[:, start : start + len(block)] = apply_linear(rows, block.T)  # [m, d] x [d, c] -> [m, c]
        return out
