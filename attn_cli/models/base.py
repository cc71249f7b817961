"""Where E comes from, and what the layers do to it.

A model turns text into tokens, tokens into E, and runs its layers over E, returning a `Trace`:
the residual stream before and after every layer and every head's weights. Two kinds implement it:

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


class LayerTrace(Record):
    """One layer over one sentence (a plain class: see attention.Head).

    The names of the [H, n, n] matrices are the stages `--stage` shows: `scores` is Q K^T as
    computed, `masked` is what softmax reads (scores / sqrt(d_k), less any distance cost, -inf
    where the mask hides a key), `weights` what it gives.
    """

    __slots__ = ("masked", "weights", "attn_update", "mlp_update", "heads", "scores", "values")

    def __init__(self, masked: np.ndarray, weights: np.ndarray, attn_update: np.ndarray, mlp_update: np.ndarray, heads: list | None = None,
                 scores: np.ndarray | None = None, values=None):
        self.masked = masked  # [H, n, n] Q K^T / sqrt(d_k) (- distance), -inf where the mask hides a key
        self.weights = weights  # [H, n, n] softmax over keys; rows sum to 1 (less a sink's weight)
        self.attn_update = attn_update  # [n, d] what the attention block changed in the residual stream
        self.mlp_update = mlp_update  # [n, d] what the MLP block changed (zero where there is none)
        self.heads = [] if heads is None else heads  # per head, when the model keeps them: attention.HeadResult (the lesson's heads)
        self.scores = scores  # [H, n, n] Q K^T before scaling, when kept (None: not kept)
        self.values = values  # [h_kv][n, d_v] each key/value head's V, when kept (None: not kept); query head h reads values[h // (H / h_kv)]


class Trace(Record):
    """A forward pass: what it kept of each point (models.points), read with get / has (a plain class).

    Compat, for the analyses and views that read a pass whole: `hidden` [L + 1, n, d] (E, then each
    layer's output), `layers[l]` (masked, weights, attn_update, mlp_update, scores, values) and `output`
    [n, d], each made from what was kept and a KeyError naming the point when it was not. A model that
    builds its trace whole (GloVe's one layer of heads) passes hidden, layers and output instead.
    `rows`: the positions kept of per-position points (None: all n); `offset`: the position of the
    pass's first row (a cached pass).
    """

    __slots__ = ("tokens", "store", "n_layers", "rows", "offset", "_hidden", "_layers", "_output")

    def __init__(self, tokens: Tokens, hidden: np.ndarray | None = None, layers: list | None = None, output: np.ndarray | None = None, *,
                 store: dict | None = None, n_layers: int | None = None, rows=None, offset: int = 0):
        self.tokens = tokens
        self.store = {} if store is None else store  # (point, layer or None) -> array
        self.n_layers = n_layers if n_layers is not None else (len(layers) if layers is not None else 0)
        self.rows, self.offset = rows, offset
        self._hidden, self._layers, self._output = hidden, layers, output
        if hidden is not None:  # a trace built whole: its streams under the points' names too
            self.store.setdefault(("resid_pre", 0), hidden[0])
            for l in range(len(hidden) - 1):
                self.store.setdefault(("resid_post", l), hidden[l + 1])
                if l + 1 < len(hidden) - 1:
                    self.store.setdefault(("resid_pre", l + 1), hidden[l + 1])
        for l, layer in enumerate(layers or []):
            for point, name in (("attn.scores", "masked"), ("attn.pattern", "weights"), ("attn.qk", "scores")):
                if getattr(layer, name, None) is not None:
                    self.store.setdefault((point, l), getattr(layer, name))
        if output is not None:
            self.store.setdefault(("resid_final", None), output)

    def has(self, point: str, layer: int | None = None) -> bool:
        return (point, layer) in self.store

    def get(self, point: str, layer: int | None = None) -> np.ndarray:
        """What the pass kept of `point` at `layer` (KeyError when it was not kept)."""
        try:
            return self.store[(point, layer)]
        except KeyError:
            where = "" if layer is None else f" of layer {layer}"
            raise KeyError(f"{point}{where} was not kept by this pass (ask for it with keep=Keep(points=...))") from None

    @property
    def hidden(self) -> np.ndarray:  # [L + 1, n, d]
        if self._hidden is None:
            self._hidden = np.stack([self.get("resid_pre", 0)] + [self.get("resid_post", l) for l in range(self.n_layers)])
        return self._hidden

    @property
    def output(self) -> np.ndarray:  # [n, d]
        return self._output if self._output is not None else self.get("resid_final")

    @property
    def layers(self) -> list:
        if self._layers is None:
            self._layers = [LayerView(self, l) for l in range(self.n_layers)]
        return self._layers


class LayerView:
    """One layer of a kept trace under LayerTrace's names (read from the trace's points when asked)."""

    __slots__ = ("trace", "layer")
    heads: list = []

    def __init__(self, trace: "Trace", layer: int):
        self.trace, self.layer = trace, layer

    @property
    def masked(self) -> np.ndarray:  # [H, n, t]
        return self.trace.get("attn.scores", self.layer)

    @property
    def weights(self) -> np.ndarray:  # [H, n, t]
        return self.trace.get("attn.pattern", self.layer)

    @property
    def attn_update(self) -> np.ndarray:  # [n, d] resid_mid - resid_pre (post-norm models: the norm's change included)
        return self.trace.get("resid_mid", self.layer) - self.trace.get("resid_pre", self.layer)

    @property
    def mlp_update(self) -> np.ndarray:  # [n, d]
        return self.trace.get("resid_post", self.layer) - self.trace.get("resid_mid", self.layer)

    @property
    def scores(self) -> np.ndarray | None:  # [H, n, t] Q K^T before scaling, when kept
        return self.trace.store.get(("attn.qk", self.layer))

    @property
    def values(self) -> np.ndarray | None:  # [h_kv, t, d_head], when kept
        return self.trace.store.get(("v", self.layer))


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
