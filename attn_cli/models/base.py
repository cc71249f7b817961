"""Where E comes from, and what the layers do to it.

A model turns text into tokens, tokens into E, and runs its layers over E, returning a `Trace`:
the residual stream before and after every layer and every head's weights. Two kinds implement it:

- `glove.GloveModel`: GloVe word vectors + sinusoidal positions, one layer of attn's own heads
  (the lesson's single-layer heads; its "update" is Delta E, and there is no MLP).
- `transformer.Transformer`: a BERT or GPT-2 checkpoint read from safetensors, run in NumPy.

Views and JSON read a `Trace` (through attn_cli.inspection or attn_cli.models.inspection), so
they do not care where E came from.
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


class LayerTrace(Record):
    """One layer over one sentence (a plain class: see attention.Head).

    The names of the [H, n, n] matrices are the stages `--stage` shows: `scores` is Q K^T as
    computed, `masked` is what softmax reads (scores / sqrt(d_k), less any distance cost, -inf
    where the mask hides a key), `weights` what it gives.
    """

    __slots__ = ("masked", "weights", "attn_update", "mlp_update", "heads", "scores")

    def __init__(self, masked: np.ndarray, weights: np.ndarray, attn_update: np.ndarray, mlp_update: np.ndarray, heads: list | None = None,
                 scores: np.ndarray | None = None):
        self.masked = masked  # [H, n, n] Q K^T / sqrt(d_k) (- distance), -inf where the mask hides a key
        self.weights = weights  # [H, n, n] softmax over keys; rows sum to 1 (less a sink's weight)
        self.attn_update = attn_update  # [n, d] what the attention block changed in the residual stream
        self.mlp_update = mlp_update  # [n, d] what the MLP block changed (zero where there is none)
        self.heads = [] if heads is None else heads  # per head, when the model keeps them: attention.HeadResult (the lesson's heads)
        self.scores = scores  # [H, n, n] Q K^T before scaling, when kept (None: not kept)


class Trace(Record):
    """A forward pass: the residual stream before and after every layer, and every head's weights (a plain class)."""

    __slots__ = ("tokens", "hidden", "layers", "output")

    def __init__(self, tokens: Tokens, hidden: np.ndarray, layers: list[LayerTrace], output: np.ndarray):
        self.tokens = tokens
        self.hidden = hidden  # [L + 1, n, d]: E (the embeddings), then each layer's output
        self.layers = layers
        self.output = output  # [n, d] the model's last hidden state (GPT-2: after ln_f)


class Model(Protocol):
    """What every model offers the analyses and views: text -> Tokens -> Trace, and its vocabulary."""

    name: str
    kind: str  # "glove", or the checkpoint's family ("bert", "gpt2", ...)
    n_layers: int
    n_heads: int  # per layer
    d_model: int
    causal: bool  # a query sees only itself and earlier keys
    capabilities: frozenset  # what it can do beyond the trace: see CAPABILITIES

    def tokenize(self, text: str) -> Tokens: ...

    def forward(self, tokens: Tokens) -> Trace: ...

    def run(self, text: str) -> Trace: ...

    def nearest(self, rows: np.ndarray, k: int) -> list[list[str]]: ...  # [m, d] -> the k nearest vocabulary entries of each

    def fold(self, text: str) -> str: ...  # a word as the model's tokens are compared with it (--focus)

    def summary(self) -> dict: ...  # name, type, layers, heads, d_model, d_k


CAPABILITIES = {  # what a model may declare, and what asks for it
    "word-vectors": "it reads word vectors (--vectors, --limit, --oov, --trust-pickle)",
    "heads": "its heads are chosen by name or file (--head NAME|FILE, --seed)",
    "settings": "its attention can be changed (--mask, --no-position, --no-scale)",
    "shift": "each token's update splits into its self and context parts (--per-head, --embeddings, the shift table)",
    "probe-senses": "a sense is measured by cosine with probe words' vectors (--sense, --sense-set)",
    "layers": "it has layers of heads to pick from (--layer, --head LAYER.HEAD)",
    "pieces": "its tokenizer cuts words into pieces and adds special tokens (--words, --hide-special)",
}
