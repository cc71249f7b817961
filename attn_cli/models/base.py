"""Where E comes from, and what the layers do to it.

A model turns text into tokens, tokens into E, and runs its layers over E, returning a `Trace`:
what it kept of the named points of models.points (the residual stream before and after every
layer, every head's weights, ...). Two kinds implement it:

- `glove.GloveModel`: GloVe word vectors + sinusoidal positions, one layer of attn's own heads
  (the lesson's single-layer heads; its "update" is Delta E, and there is no MLP).
- `transformer.Transformer`: a checkpoint (BERT, GPT-2, a Llama-family decoder) from a
  Hugging Face folder, a GGUF file or Ollama's store, run in NumPy; its family is data in
  `models/families/`.

Analyses (attn_cli.analysis) read the `Trace`, and views read their results, so neither cares
where E came from.
"""

from typing import Protocol

import numpy as np

from attn_cli.records import Record, ValueRecord

MAX_TOKENS = 512  # the most tokens inspect takes by default (--max-tokens)


class Tokens(ValueRecord):
    """A sentence as the model's tokenizer cut it. A plain class, not a dataclass: it is defined on every
    start of `inspect`, and a dataclass compiles its methods then (~0.3 ms each class)."""

    __slots__ = ("ids", "pieces", "special", "words", "offsets", "text", "unknown", "labels")

    def __init__(self, ids: list[int], pieces: list[str], special: list[bool], words: list[int | None],
                 offsets: list[tuple[int, int]], text: str = "", unknown: list[str] | None = None, labels: list[str] | None = None):
        self.ids = ids  # rows of the embedding matrix (-1: a word with no vector, given a zero vector)
        self.pieces = pieces  # the tokens as the tokenizer wrote them ("##ing", "Ġforest", "[CLS]")
        self.special = special  # [CLS], [SEP], ... added by the tokenizer
        self.words = words  # the word each piece belongs to; None for a special token
        self.offsets = offsets  # each piece's characters in the text ((0, 0) for a special token)
        self.text = text
        self.unknown = [] if unknown is None else unknown  # words left out or zeroed because they have no vector
        self.labels = list(pieces) if labels is None else labels  # each piece as a reader sees it ("cat", not "Ġcat")


class Trace(Record):
    """A forward pass: what it kept of each point (models.points), read with get / has (a plain class).

    `rows`: the positions kept of per-position points (None: all n); `offset`: the position of the
    pass's first row (a cached pass). What several readers derive from the points is a method named
    by them: `stacked` (a point of every layer), `streams` (the stream before and after each layer),
    `between` (what a layer changed in the stream from one point to another).
    """

    __slots__ = ("tokens", "store", "n_layers", "rows", "offset")

    def __init__(self, tokens: Tokens, *, store: dict | None = None, n_layers: int = 0, rows=None, offset: int = 0):
        self.tokens = tokens
        self.store = {} if store is None else store  # (point, layer or None) -> array
        self.n_layers = n_layers
        self.rows, self.offset = rows, offset

    def has(self, point: str, layer: int | None = None) -> bool:
        return (point, layer) in self.store

    def get(self, point: str, layer: int | None = None) -> np.ndarray:
        """What the pass kept of `point` at `layer` (KeyError when it was not kept)."""
        try:
            return self.store[(point, layer)]
        except KeyError:
            where = "" if layer is None else f" of layer {layer}"
            raise KeyError(f"{point}{where} was not kept by this pass (ask for it with keep=Keep(points=...))") from None

    def stacked(self, point: str) -> np.ndarray:  # [L, ...]
        """`point` of every layer, layer 0 first (attn.pattern: [L, H, n, t])."""
        return np.stack([self.get(point, l) for l in range(self.n_layers)])

    def streams(self) -> np.ndarray:  # [L + 1, n, d]
        """The residual stream entering the first layer (resid_pre[0], the embeddings E), then leaving each layer (resid_post[l])."""
        return np.stack([self.get("resid_pre", 0)] + [self.get("resid_post", l) for l in range(self.n_layers)])

    def between(self, before: str, after: str, layer: int) -> np.ndarray:  # [n, d]
        """What layer `layer` changed in the stream from point `before` to point `after` (after - before): resid_pre to
        resid_mid is the attention block's update (a post-norm model's norm included), resid_mid to resid_post the MLP block's."""
        return self.get(after, layer) - self.get(before, layer)


class Model(Protocol):
    """What every model offers the analyses and views: text -> Tokens -> Trace, its output head, and its vocabulary."""

    name: str
    spec: object  # models.spec.Spec: the family's settings as data (None: not a checkpoint, GloVe's heads)
    predicts: str | None  # what its output head predicts: "next" (a decoder), "mask" (a masked LM), or None (no head)
    kind: str  # "glove", or the checkpoint's family ("bert", "gpt2", ...)
    n_layers: int
    n_heads: int  # per layer
    d_model: int
    causal: bool  # a query sees only itself and earlier keys
    capabilities: frozenset  # what it can do beyond the trace: see CAPABILITIES

    def tokenize(self, text: str) -> Tokens: ...

    def forward(self, tokens: Tokens, keep=None, edits=(), cache=None, start=None, keep_scores: bool = False, keep_values: bool = False) -> Trace: ...  # models.points: what to keep and change

    def readout(self, rows: np.ndarray, frozen=None, ids=None, cap: bool = True) -> np.ndarray: ...  # [m, d] streams after the last layer -> [m, V] logits (models.readout)

    def output_maps(self, layer: int) -> list: ...  # per query head: [d_v, d], what its values go through into the stream (None: d_v = d)

    def run(self, text: str) -> Trace: ...

    def nearest(self, rows: np.ndarray, k: int) -> list[list[str]]: ...  # [m, d] -> the k nearest vocabulary entries of each

    def window(self, layer: int) -> int | None: ...  # the layer's sliding window (its queries see their last `window` keys), or None

    def fold(self, text: str) -> str: ...  # a word as the model's tokens are compared with it (--focus)

    def summary(self) -> dict: ...  # name, type, layers, heads, d_model, d_k


CAPABILITIES = {  # what a model may declare, and what asks for it
    "word-vectors": "it reads word vectors (--vectors, --limit, --oov, --trust-pickle)",
    "heads": "its heads are chosen by name or file (--head NAME|FILE, --seed)",
    "settings": "its attention can be changed (--mask, --no-position, --no-scale)",
    "shift": "each token's update splits into its self and context parts (--per-head, --embeddings, the shift table)",
    "probe-senses": "a sense is measured by cosine with probe words' vectors (--sense, --sense-set)",
    "context-senses": "a sense is measured at every layer by cosine with prototypes of the word itself in templates with probe words (--sense, --sense-set)",
    "layers": "it has layers of heads to pick from (--layer, --head LAYER.HEAD)",
    "pieces": "its tokenizer cuts words into pieces and adds special tokens (--words, --hide-special)",
}
