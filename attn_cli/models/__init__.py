"""Where E comes from, and what the layers do to it.

A model turns text into tokens, tokens into E, and runs its layers over E, returning a `Trace`:
the residual stream before and after every layer and every head's weights. Two kinds implement it:

- `glove.GloveModel`: GloVe word vectors + sinusoidal positions, one layer of attn's own heads
  (the lesson's single-layer heads; its "update" is Delta E, and there is no MLP).
- `transformer.Transformer`: a BERT or GPT-2 checkpoint read from safetensors, run in NumPy.

Views and JSON read a `Trace` (through attn_cli.inspection or attn_cli.models.inspection), so
they do not care where E came from.
"""

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


@dataclass
class Tokens:
    """A sentence as the model's tokenizer cut it."""

    ids: list[int]  # rows of the embedding matrix (-1: a word with no vector, given a zero vector)
    pieces: list[str]  # the tokens as the tokenizer wrote them ("##ing", "Ġforest", "[CLS]")
    special: list[bool]  # [CLS], [SEP], ... added by the tokenizer
    words: list[int | None]  # the word each piece belongs to; None for a special token
    offsets: list[tuple[int, int]]  # each piece's characters in the text ((0, 0) for a special token)
    text: str = ""
    unknown: list[str] = field(default_factory=list)  # words left out or zeroed because they have no vector


class LayerTrace:
    """One layer over one sentence (a plain class: see attention.Head)."""

    __slots__ = ("scores", "weights", "attn_update", "mlp_update", "heads")

    def __init__(self, scores: np.ndarray, weights: np.ndarray, attn_update: np.ndarray, mlp_update: np.ndarray, heads: list | None = None):
        self.scores = scores  # [H, n, n] Q K^T / sqrt(d_k), -inf where the mask hides a key
        self.weights = weights  # [H, n, n] softmax over keys; rows sum to 1
        self.attn_update = attn_update  # [n, d] what the attention block changed in the residual stream
        self.mlp_update = mlp_update  # [n, d] what the MLP block changed (zero where there is none)
        self.heads = [] if heads is None else heads  # per head, when the model keeps them: attention.HeadResult

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self.__slots__)})"


class Trace:
    """A forward pass: the residual stream before and after every layer, and every head's weights (a plain class)."""

    __slots__ = ("tokens", "hidden", "layers", "output")

    def __init__(self, tokens: Tokens, hidden: np.ndarray, layers: list[LayerTrace], output: np.ndarray):
        self.tokens = tokens
        self.hidden = hidden  # [L + 1, n, d]: E (the embeddings), then each layer's output
        self.layers = layers
        self.output = output  # [n, d] the model's last hidden state (GPT-2: after ln_f)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self.__slots__)})"


class Model(Protocol):
    name: str
    kind: str  # "glove" | "bert" | "gpt2"
    n_layers: int
    n_heads: int  # per layer
    d_model: int
    causal: bool  # a query sees only itself and earlier keys

    def tokenize(self, text: str) -> Tokens: ...

    def forward(self, tokens: Tokens) -> Trace: ...

    def run(self, text: str) -> Trace: ...

    def nearest(self, rows: np.ndarray, k: int) -> list[list[str]]: ...  # [m, d] -> the k nearest vocabulary entries of each

    def summary(self) -> dict: ...  # name, type, layers, heads, d_model, d_k
