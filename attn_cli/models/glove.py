"""The lesson's model: GloVe word vectors + sinusoidal positions, then one layer of attn's own heads.

E is the word vector plus its position; the one layer is every chosen head over the same E,
their updates summed (E' = E + sum_h Delta E_h); there is no MLP.
"""

from typing import TYPE_CHECKING

import numpy as np

from attn_cli.core.attention import Mask, Stage, multi_head
from attn_cli.errors import InputError
from attn_cli.models.base import MAX_TOKENS, Tokens, Trace  # noqa: F401 (MAX_TOKENS: the default of Settings)
from attn_cli.records import Record
from attn_cli.vectors.tokens import Oov

if TYPE_CHECKING:  # heads and vectors are read only when a command needs them: not on every start
    from attn_cli.heads.registry import NamedHead
    from attn_cli.vectors.store import Vectors




class Settings(Record):
    """How `inspect` runs the heads and what it reports (a plain class: see attention.Head)."""

    __slots__ = ("mask", "position", "oov", "max_tokens", "stage", "embeddings", "scale")

    def __init__(self, mask: Mask = Mask.causal, position: bool = True, oov: Oov = Oov.error, max_tokens: int = MAX_TOKENS,
                 stage: Stage | None = None, embeddings: bool = False, scale: bool = True):
        self.mask = mask
        self.position = position  # add sinusoidal positions to the word vectors
        self.oov = oov
        self.max_tokens = max_tokens
        self.stage = stage  # also report this stage's matrix
        self.embeddings = embeddings  # also report E and E'
        self.scale = scale  # divide the scores by sqrt(d_k) (False: --no-scale)


def stored_matrices(heads: int, settings: Settings) -> int:
    """n x n matrices a sentence keeps per head in its result (weights, and scores with --stage)."""
    return heads * (2 if settings.stage is not None else 1)


class WordTokens(Tokens):
    """GloVe's tokens, with their word vectors (a plain class, as Tokens)."""

    __slots__ = ("vectors",)

    def __init__(self, ids: list[int], pieces: list[str], special: list[bool], words: list[int | None],
                 offsets: list[tuple[int, int]], text: str = "", unknown: list[str] | None = None, vectors: np.ndarray = None):
        super().__init__(ids, pieces, special, words, offsets, text, unknown)
        self.vectors = vectors  # [n, d] float64 word vectors (zero for a word without one under --oov zero)


def per_head(outs: list, name: str, e: np.ndarray) -> np.ndarray:  # -> [H, n, n]
    """One of the heads' [n, n] matrices (attention.HeadResult's scores, masked, weights), stacked."""
    return np.stack([getattr(o, name) for o in outs]) if outs else np.zeros((0, len(e), len(e)))


class WordTrace(Trace):
    """GloVe's pass: its points, and each head's own results (a plain class, as Trace).

    The points are those of models.points for the one layer: resid_pre E; attn.qk, attn.scores,
    attn.pattern [H, n, n]; attn.out Delta E; resid_mid = resid_post = resid_final = E' (no MLP:
    mlp_out is zero, and no final norm); v, when asked for, a list [H][n, d_v] (each head is its own
    key/value head, and the heads' d_v may differ). No attn.z: nothing reads it, and heads of
    different d_v make no [n, H, d_head]. `heads` holds the per-head results (attention.HeadResult),
    which the lesson's views read and no point holds: a head's Delta E split into self and context,
    its sink's weights.
    """

    __slots__ = ("heads",)

    def __init__(self, tokens: Tokens, heads: list, **points):
        super().__init__(tokens, **points)
        self.heads = heads  # per head: attention.HeadResult


class GloveModel:
    """The GloVe vectors and named heads as a one-layer model (attn_cli.models.Model; a plain class: see attention.Head)."""

    kind = "glove"
    n_layers = 1
    capabilities = frozenset({"word-vectors", "heads", "settings", "shift", "probe-senses"})
    predicts = None  # no output head: predict, explain, patch and generate say so
    spec = None  # no checkpoint's Spec: one layer of the lesson's heads over word vectors

    def readout(self, rows, frozen=None, ids=None, cap=True):
        from attn_cli.errors import InputError

        raise InputError(f"{self.name} has no output head to predict with (word vectors and the lesson's heads)")

    def __init__(self, vectors: "Vectors", heads: "list[NamedHead]", settings: Settings | None = None):
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
        """GloVe's own tokenizer (attn_cli.vectors.tokens); each token is a word with its vector."""
        from attn_cli.vectors.tokens import embed, sentence_tokens

        embedded = embed(sentence_tokens(text, self.settings.max_tokens), self.vectors, self.settings.oov)
        if not embedded.tokens:
            raise InputError(f"none of the words has a vector: {', '.join(embedded.unknown)}")
        n = len(embedded.tokens)
        return WordTokens(embedded.rows, embedded.tokens, [False] * n, list(range(n)), [(0, 0)] * n, text, embedded.unknown, embedded.vectors)

    def embeddings(self, tokens: WordTokens) -> np.ndarray:  # -> [n, d] E = word vector (+ position)
        from attn_cli.core.blocks import input_embeddings

        return input_embeddings(tokens.vectors, self.settings.position)

    def forward(self, tokens: WordTokens, keep=None, edits=(), cache=None, start=None, keep_scores: bool = True, keep_values: bool = False) -> WordTrace:
        """The one layer: every head over E, their updates summed (each head's scores are always kept: they are small).
        `keep_values`: each head's V [n, d_v] in the trace too (each head is its own key/value head). The trace is built
        whole whatever `keep` asks (one layer of a sentence is small); edits, a cache and a start are a checkpoint's."""
        from attn_cli.core.attention import allowed_keys

        if edits or cache is not None or start is not None:
            raise InputError("the lesson's heads run whole: edits, a cache and a start are for a checkpoint (--model)")

        e = self.embeddings(tokens)  # [n, d]
        allowed = allowed_keys(self.settings.mask, len(e))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # checked by the analyses: one message, not NumPy's warnings
            outs, delta, e_prime = multi_head(e, self.heads, allowed, self.settings.scale, parts=True)[:3]  # list, [n, d], [n, d]
        store = {
            ("resid_pre", 0): e, ("attn.qk", 0): per_head(outs, "scores", e), ("attn.scores", 0): per_head(outs, "masked", e),
            ("attn.pattern", 0): per_head(outs, "weights", e),
            ("attn.out", 0): delta, ("resid_mid", 0): e_prime, ("mlp_out", 0): np.zeros_like(delta), ("resid_post", 0): e_prime,
            ("resid_final", None): e_prime,
        }
        if keep_values:  # a list, [H][n, d_v]: the heads' d_v may differ
            store[("v", 0)] = [o.values for o in outs]
        return WordTrace(tokens, outs, store=store, n_layers=1)

    def run(self, text: str) -> Trace:
        return self.forward(self.tokenize(text))

    def output_maps(self, l: int = 0) -> list:  # -> per head [d_v, d], or None where V is already in E's space
        """What each head's values go through into E' (its W_O; none for a head whose W_V is [d, d])."""
        return [head.w_o for head in self.heads]

    def nearest(self, rows: np.ndarray, k: int, skip: list[int] | None = None) -> list[list[str]]:
        """The k keys nearest by cosine to each row, skipping row skip[i]'s own key (-1: none)."""
        from attn_cli.core.neighbors import nearest_rows

        return [[self.vectors.key_at(j) for j in row] for row in nearest_rows(self.vectors, rows, k, skip)]

    def own_rows(self, tokens: list[str]) -> list[int]:
        """Each token's row among the keys (-1: it has none)."""
        from attn_cli.vectors.tokens import key_rows

        return [-1 if i is None else i for i in key_rows(tokens, self.vectors)]

    def window(self, layer: int) -> None:  # the lesson's heads see every key their mask allows: no sliding window
        return None

    def fold(self, text: str) -> str:
        """A word as GloVe's tokens are: lower case, its quotes straightened, one token (or several, joined)."""
        from attn_cli.vectors.tokens import tokenize

        return " ".join(tokenize(text))

    @property
    def d_k(self):
        return self.summary()["d_k"]

    def summary(self) -> dict:
        d_k = sorted({h.d_k for h in self.heads})
        return {"name": self.name, "type": self.kind, "layers": 1, "heads": len(self.heads), "d_model": self.d_model,
                "d_k": d_k[0] if len(d_k) == 1 else d_k}
