"""The lesson's model: GloVe word vectors + sinusoidal positions, then one layer of attn's own heads.

E is the word vector plus its position; the one layer is every chosen head over the same E,
their updates summed (E' = E + sum_h Delta E_h); there is no MLP.
"""

import numpy as np

from attn_cli.core.attention import multi_head
from attn_cli.errors import InputError
from attn_cli.heads.registry import NamedHead
from attn_cli.models.base import LayerTrace, Tokens, Trace
from attn_cli.vectors.store import Vectors


class WordTokens(Tokens):
    """GloVe's tokens, with their word vectors (a plain class, as Tokens)."""

    __slots__ = ("vectors",)

    def __init__(self, ids: list[int], pieces: list[str], special: list[bool], words: list[int | None],
                 offsets: list[tuple[int, int]], text: str = "", unknown: list[str] | None = None, vectors: np.ndarray = None):
        super().__init__(ids, pieces, special, words, offsets, text, unknown)
        self.vectors = vectors  # [n, d] float64 word vectors (zero for a word without one under --oov zero)


class GloveModel:
    """The GloVe vectors and named heads as a one-layer model (attn_cli.models.Model; a plain class: see attention.Head)."""

    kind = "glove"
    n_layers = 1

    def __init__(self, vectors: Vectors, heads: list[NamedHead], settings=None):  # settings: attn_cli.inspection.Settings
        from attn_cli.core.attention import Mask
        from attn_cli.analysis.glove import Settings

        self.vectors = vectors
        self.heads = heads
        self.settings = settings or Settings()
        self.causal = self.settings.mask == Mask.causal

    @property
    def name(self) -> str:
        return self.vectors.source or "GloVe"

    @property
    def n_heads(self) -> int:
        return len(self.heads)

    @property
    def d_model(self) -> int:
        return self.vectors.vector_size

    def tokenize(self, text: str) -> WordTokens:
        """GloVe's own tokenizer (attn_cli.tokens); each token is a word with its vector."""
        from attn_cli.vectors.tokens import embed, sentence_tokens

        embedded = embed(sentence_tokens(text, self.settings.max_tokens), self.vectors, self.settings.oov)
        if not embedded.tokens:
            raise InputError(f"none of the words has a vector: {', '.join(embedded.unknown)}")
        n = len(embedded.tokens)
        return WordTokens(embedded.rows, embedded.tokens, [False] * n, list(range(n)), [(0, 0)] * n, text, embedded.unknown, embedded.vectors)

    def embeddings(self, tokens: WordTokens) -> np.ndarray:  # -> [n, d] E = word vector (+ position)
        from attn_cli.core.blocks import input_embeddings

        return input_embeddings(tokens.vectors, self.settings.position)

    def forward(self, tokens: WordTokens) -> Trace:
        from attn_cli.core.attention import allowed_keys

        e = self.embeddings(tokens)  # [n, d]
        allowed = allowed_keys(self.settings.mask, len(e))
        outs, delta, e_prime = multi_head(e, self.heads, allowed, self.settings.scale, parts=True)[:3]  # list, [n, d], [n, d]
        layer = LayerTrace(
            scores=np.stack([o.masked for o in outs]) if outs else np.zeros((0, len(e), len(e))),  # [H, n, n]
            weights=np.stack([o.weights for o in outs]) if outs else np.zeros((0, len(e), len(e))),  # [H, n, n]
            attn_update=delta, mlp_update=np.zeros_like(delta), heads=outs,
        )
        return Trace(tokens, np.stack([e, e_prime]), [layer], e_prime)

    def run(self, text: str) -> Trace:
        return self.forward(self.tokenize(text))

    def nearest(self, rows: np.ndarray, k: int) -> list[list[str]]:
        from attn_cli.analysis.glove import nearest_keys

        found = nearest_keys(rows, [-1] * len(rows), self.vectors, k)
        return [[self.vectors.key_at(j) for j in row] for row in found]

    def summary(self) -> dict:
        d_k = sorted({h.d_k for h in self.heads})
        return {"name": self.name, "type": self.kind, "layers": 1, "heads": len(self.heads), "d_model": self.d_model,
                "d_k": d_k[0] if len(d_k) == 1 else d_k}
