"""`attn inspect` without the terminal: text -> tokens -> E -> heads -> weights, Delta E, E'.

Everything a view or a JSON object shows is computed here and handed over as an
`InspectResult` (attn_cli.results); rendering lives in attn_cli.render.
"""

from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from attn_cli.core.attention import Mask, allowed_keys, attention_weights
from attn_cli.errors import DataError, InputError
from attn_cli.lesson.directions import MAX_NEIGHBORS  # noqa: F401  (--neighbors K, read here by cli/inspect.py)
from attn_cli.records import Record
from attn_cli.results import HeadView, InspectResult
from attn_cli.vectors.tokens import Oov, key_rows, tokenize

if TYPE_CHECKING:  # heads and vectors are read only when a command needs them: not on every start
    from attn_cli.heads.registry import NamedHead
    from attn_cli.vectors.store import Vectors

MAX_TOKENS = 512


class Stage(str, Enum):
    """A step of one head: Q K^T before scaling, scaled and masked, or after softmax."""

    scores = "scores"
    masked = "masked"
    weights = "weights"


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


def inspect_text(text: str, vectors: "Vectors", heads: "list[NamedHead]", settings: Settings) -> InspectResult:
    """Run every head over one sentence (the GloVe model's one layer) and collect what `inspect` reports."""
    from attn_cli.io.memory import check_memory
    from attn_cli.models.glove import GloveModel

    model = GloveModel(vectors, heads, settings)
    tokens = model.tokenize(text)
    check_memory(len(tokens.pieces), stored_matrices(len(heads), settings), f"{len(heads)} head{'s' if len(heads) != 1 else ''}")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # checked below: one message, not NumPy's warnings
        trace = model.forward(tokens)
    layer = trace.layers[0]
    if not (np.isfinite(layer.weights).all() and np.isfinite(trace.hidden).all()):
        raise DataError("the heads' scores or updates overflow float64 on this sentence: the vectors or the head weights are too large")
    e, e_prime = trace.hidden  # [n, d], [n, d]
    n = len(e)
    allowed = allowed_keys(settings.mask, n)
    outs = layer.heads
    own = np.sum([o.delta_self for o in outs], axis=0) if outs else np.zeros_like(e)  # [n, d]
    context = np.sum([o.delta_context for o in outs], axis=0) if outs else np.zeros_like(e)  # [n, d]
    views = [
        HeadView(
            name=head.name, d_k=head.d_k, noise=getattr(head, "noise", False), description=getattr(head, "description", ""),
            scores=out.scores, scaled=out.masked, weights=out.weights, allowed=allowed,
            delta=out.delta, delta_self=out.delta_self, delta_context=out.delta_context,
            top_weight=None if settings.scale else mean_top_weight(out.weights),
            top_weight_scaled=None if settings.scale else mean_top_weight(attention_weights(out.scores, head.d_k, allowed, distance=head.distance, sink=head.sink)[1]),
            distance=None if head.distance is None else [float(x) for x in head.distance],
            sink=head.sink, sink_weights=out.sink,
        )
        for head, out in zip(heads, outs)
    ]
    return InspectResult(
        tokens=trace.tokens.pieces, unknown=trace.tokens.unknown, mask=settings.mask.value, position=settings.position,
        heads=views, e=e, delta=layer.attn_update, e_prime=e_prime, delta_self=own, delta_context=context, scale=settings.scale,
        stage=settings.stage.value if settings.stage else None, with_embeddings=settings.embeddings,
    )


def stored_matrices(heads: int, settings: Settings) -> int:
    """n x n matrices a sentence keeps per head in its result (weights, and scores with --stage)."""
    return heads * (2 if settings.stage is not None else 1)


def mean_top_weight(weights: np.ndarray) -> float:  # [n, n] -> mean over rows of the row's largest weight
    """How peaked a head's rows are: 1 when every query puts all its weight on one key."""
    return float(np.mean(np.max(weights, axis=1)))


def find_query(tokens: list[str], focus: str) -> int:
    """The position `--focus` names: an index (0-based, negative from the end) or a token."""
    n = len(tokens)
    try:
        i = int(focus)
    except ValueError:
        word = tokenize(focus)
        if len(word) == 1 and word[0] in tokens:
            return tokens.index(word[0])
        raise InputError(f"--focus {focus!r} is not one of the tokens: {' '.join(tokens)}") from None
    if not -n <= i < n:
        raise InputError(f"--focus {i} is out of range: the sentence has {n} tokens (0 to {n - 1})")
    return i % n


NEIGHBOR_CHUNK = 64  # rows scored against the whole vocabulary at a time: [64, n_keys] float32


def nearest_keys(rows: np.ndarray, own: list[int], vectors: "Vectors", k: int) -> list[list[int]]:  # [n, d] -> n lists
    """The k keys nearest by cosine to each of `rows`, skipping `own[i]` (-1: skip none).

    A zero row has no direction and gets no neighbours.
    """
    from attn_cli.core.neighbors import key_scores, top_k  # only the terminal view shows neighbours

    found: list[list[int]] = []
    for start in range(0, len(rows), NEIGHBOR_CHUNK):
        chunk = np.asarray(rows[start : start + NEIGHBOR_CHUNK], dtype=np.float64)  # [c, d]
        top = np.max(np.abs(chunk), axis=1, keepdims=True)  # [c, 1]
        usable = (np.isfinite(top) & (top > 0))[:, 0]  # a zero or non-finite row has no direction
        # Scaled by its largest entry, a row keeps its direction (all cosine ranks) and fits in float32.
        scaled = np.divide(chunk, top, out=np.zeros_like(chunk), where=usable[:, None]).astype(np.float32)
        sims = key_scores(vectors, scaled)  # [c, n_keys]; ranks as cosine: the keys are scaled to norm 1
        for i, row_sims in enumerate(sims):
            skip = [own[start + i]] if own[start + i] >= 0 else []  # the token itself says nothing about where it moved
            found.append(top_k(row_sims, k, skip).tolist() if usable[i] else [])
    return found


def add_neighbors(result: InspectResult, vectors: "Vectors", k: int) -> None:
    """The k keys nearest (by cosine) to each token's E and E', the token's own key left out."""
    if k <= 0:
        return
    own = [i if i is not None else -1 for i in key_rows(result.tokens, vectors)]
    n = len(own)
    near = nearest_keys(np.concatenate([result.e, result.e_prime]), own + own, vectors, k)  # one pass over the keys for both
    result.near_input, result.near_output = ([[vectors.key_at(j) for j in row] for row in part] for part in (near[:n], near[n:]))
