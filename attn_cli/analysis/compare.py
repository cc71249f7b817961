"""`attn compare`: two runs of a decoder side by side, two texts or one text with and without --steer.

Each run is one pass keeping resid_post[l] of every layer at every position ([L, n, d]). The positions are aligned by
token when both texts have as many tokens, else by word (a word's stream is its last piece's: in a decoder, the
first position that has read the whole word); texts of different word counts are refused. Per layer:

    cos[l, p]   = cos(a[l, p], b[l, p]) at each aligned position p
    last[l]     = cos[l, -1]: the position the next token is read from
    mean[l]     = the mean of cos[l, p] from the first position whose inputs differ (before it a decoder reads the same
                  tokens in both runs: cos 1, left out); with --steer every position differs (the vector is added to all)
    baseline[l] = the mean cosine of run A's stream at p with its own stream at p + 1, for p >= 1 (position 0, the
                  first token, holds the attention sink's outsized stream and is left out). A stream at a layer shares
                  a large part with every other position's, so a cosine of 0.9 may be as far apart as two different
                  tokens of one text are; this is that figure: B below it is further from A than A's neighbours are.

The next token: softmax of each run's logits at its last position (float64); KL(A‖B) and KL(B‖A) in nats, beside
the scale of KL(A's last ‖ A's one position before), how far a prediction moves from one token to the next. The tokens
whose probability rose and fell most (p_B − p_A). With a head (L, H): its attention map in both runs and B − A, over
the aligned units (by word: a word's row the mean of its pieces' rows, its column their sum, as --words). With
steps: both runs' greedy continuations (analysis/generate.py), and the step where they part.
"""

import numpy as np

from attn_cli.analysis.direction import cosines
from attn_cli.core.neighbors import top_k
from attn_cli.core.softmax import log_softmax, softmax
from attn_cli.errors import InputError
from attn_cli.records import Record


class CompareSettings(Record):
    __slots__ = ("top", "head", "steps", "chat", "steer", "steered")

    def __init__(self, top: int = 5, head: tuple[int, int] | None = None, steps: int = 0, chat: bool = False,
                 steer: list | None = None, steered: list | None = None):
        self.top = top  # tokens listed: A's and B's most probable, and those that rose and fell most
        self.head = head  # (layer, head) whose attention maps are compared; None: none
        self.steps = steps  # greedy tokens generated from each run (0: none)
        self.chat = chat  # wrap both texts in the model's chat template first
        self.steer = steer or []  # edits of run B only (--steer: Add("resid_post", l, scale * v))
        self.steered = steered or []  # what they came from: [{"file", "scale", "layers"}]


class Run(Record):
    """One pass: its tokens, every layer's stream at every position, the last two positions' logits, one head's map."""

    __slots__ = ("tokens", "streams", "logits", "pattern")

    def __init__(self, tokens, streams: np.ndarray, logits: np.ndarray, pattern: np.ndarray | None):
        self.tokens = tokens
        self.streams = streams  # [L, n, d] float32: resid_post
        self.logits = logits  # [min(n, 2), V] float64: the position before the last, and the last
        self.pattern = pattern  # [n, n] float32: the head's attention (None: no head asked)


def pattern_watch(layer: int, head: int, n: int):
    """(the [n, n] map to be filled, a watcher of attn.pattern that fills it from layer `layer`'s blocks of rows)."""
    out = np.zeros((n, n), np.float32)

    def watch(l, block):  # block: core.blocked.RowBlock, values [H, b, k]
        if l == layer:
            b, k = block.values.shape[1:]
            out[block.first : block.first + b, block.lo : block.lo + k] = block.values[head]

    return out, watch


def run(model, text: str, edits: list, settings: CompareSettings) -> Run:
    from attn_cli.models.points import Keep

    tokens = model.tokenize(text, chat=settings.chat)
    n = len(tokens.ids)
    pattern, watch = pattern_watch(*settings.head, n) if settings.head is not None else (None, None)
    keep = Keep(("resid_post",), watch={"attn.pattern": watch} if watch else None)
    trace = model.forward(tokens, keep=keep, edits=list(edits))
    streams = np.stack([trace.get("resid_post", l) for l in range(model.n_layers)])  # [L, n, d]
    logits = model.readout(streams[-1, -2:]).astype(np.float64)  # [<= 2, V]
    return Run(tokens, streams, logits, pattern)


def alignment(a, b) -> tuple[str, list[list[int]], list[list[int]], list[str], list[str]]:
    """("token" or "word", A's units, B's units, A's labels, B's labels): units are lists of piece indices, one per aligned
    position. By token when the counts agree; else by word; else an InputError."""
    from attn_cli.analysis.units import groups

    if len(a.ids) == len(b.ids):
        return "token", [[i] for i in range(len(a.ids))], [[i] for i in range(len(b.ids))], list(a.labels), list(b.labels)
    units_a, labels_a, _ = groups(a, words=True)
    units_b, labels_b, _ = groups(b, words=True)
    if len(units_a) != len(units_b):
        raise InputError(f"A is {len(a.ids)} tokens in {len(units_a)} words, B {len(b.ids)} tokens in {len(units_b)} words: "
                         "compare aligns the two texts by token or by word; give texts of as many tokens, or as many words")
    return "word", units_a, units_b, labels_a, labels_b


def first_difference(a, b, units_a, units_b, steered: bool) -> int | None:
    """The first aligned position whose inputs differ (0 when B is steered: the vector is added at every position); None:
    the same tokens and no edit, two identical runs."""
    if steered:
        return 0
    for p, (ua, ub) in enumerate(zip(units_a, units_b)):
        if [a.ids[i] for i in ua] != [b.ids[i] for i in ub]:
            return p
    return None


def layer_cosines(sa: np.ndarray, sb: np.ndarray) -> np.ndarray:  # [L, m, d], [L, m, d] -> [L, m], within [-1, 1]
    """Cosines at each layer and position, clipped to [-1, 1]: two equal streams round to 1 + 1e-16 now and then."""
    L, m, d = sa.shape
    return np.clip(cosines(sa.reshape(L * m, d).astype(np.float64), sb.reshape(L * m, d).astype(np.float64)), -1, 1).reshape(L, m)


def neighbour_baseline(sa: np.ndarray) -> np.ndarray | None:  # [L, m, d] -> [L]
    """The mean cosine of a stream at p with the same run's at p + 1, for p >= 1 (from p = 0 when there are only two
    positions; None for one)."""
    m = sa.shape[1]
    if m < 2:
        return None
    start = 1 if m > 2 else 0
    return layer_cosines(sa[:, start:-1], sa[:, start + 1 :]).mean(axis=1)


def kl(logits_p: np.ndarray, logits_q: np.ndarray) -> float:  # [V], [V] -> KL(p‖q) in nats
    return float(np.sum(softmax(logits_p) * (log_softmax(logits_p) - log_softmax(logits_q))))


def moved(pa: np.ndarray, pb: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:  # [V], [V] -> the ids that rose, fell most
    change = pb - pa
    order = np.lexsort((np.arange(len(change)), -change))  # largest rise first; the lower id first on a tie
    rose = [j for j in order[:top] if change[j] > 0]
    fell = [j for j in order[::-1][:top] if change[j] < 0]
    return np.array(rose, dtype=np.int64), np.array(fell, dtype=np.int64)


def check(model, settings: CompareSettings) -> None:
    if model.predicts != "next":
        raise InputError(f"{model.name} is not a decoder: compare reads two runs' next-token predictions")
    if settings.head is not None:
        l, h = settings.head
        if not (0 <= l < model.n_layers and 0 <= h < model.n_heads):
            raise InputError(f"--head {l}.{h}: {model.name} has layers 0 to {model.n_layers - 1} and heads 0 to {model.n_heads - 1}")
    if settings.steps < 0:
        raise InputError(f"--generate must be >= 0, not {settings.steps}")


def compare(model, text_a: str, text_b: str, settings: CompareSettings):
    """Run A (text_a) and run B (text_b with settings.steer), and what differs between them (results.compare.CompareResult)."""
    from attn_cli.analysis.units import aggregate, visible_units
    from attn_cli.results.compare import CompareResult

    check(model, settings)
    a, b = run(model, text_a, [], settings), run(model, text_b, settings.steer, settings)
    kind, units_a, units_b, labels_a, labels_b = alignment(a.tokens, b.tokens)
    sa = a.streams[:, [u[-1] for u in units_a]]  # [L, m, d]: a unit's stream is its last piece's
    sb = b.streams[:, [u[-1] for u in units_b]]
    pa, pb = softmax(a.logits[-1]), softmax(b.logits[-1])
    rose, fell = moved(pa, pb, settings.top)
    maps = None
    if settings.head is not None:  # NaN where a query cannot see the key (a decoder's later positions)
        hidden = ~visible_units(True, units_a)
        maps = tuple(np.where(hidden, np.nan, aggregate(x.pattern, u)) for x, u in ((a, units_a), (b, units_b)))
    rows = lambda ids: [token_row(model, int(j), pa, pb) for j in ids]  # noqa: E731
    return CompareResult(
        model=model.summary(), texts=(text_a, text_b), tokens=(list(a.tokens.labels), list(b.tokens.labels)), aligned=kind,
        labels=(labels_a, labels_b), first=first_difference(a.tokens, b.tokens, units_a, units_b, bool(settings.steer)),
        cosine=layer_cosines(sa, sb), baseline=neighbour_baseline(sa), steered=settings.steered,
        kl=(kl(a.logits[-1], b.logits[-1]), kl(b.logits[-1], a.logits[-1])), kl_scale=kl(a.logits[-1], a.logits[0]) if len(a.logits) > 1 else None,
        top_a=rows(top_k(pa, settings.top)), top_b=rows(top_k(pb, settings.top)), rose=rows(rose), fell=rows(fell),
        head=settings.head, maps=maps, continuations=continuations(model, text_a, text_b, settings) if settings.steps else None)


def token_row(model, j: int, pa: np.ndarray, pb: np.ndarray) -> dict:
    """A token as the tables list it: its id, label, the text it adds, and its probability in A and in B."""
    from attn_cli.analysis.generate import label
    from attn_cli.analysis.predict import token_text

    return {"id": j, "token": label(model, j), "text": token_text(model.tokenizer, j), "a": float(pa[j]), "b": float(pb[j])}


def continuations(model, text_a: str, text_b: str, settings: CompareSettings) -> dict:
    """Each run's greedy continuation of `settings.steps` tokens (fewer where it ends its turn), token by token, and the
    step where they part (None: they never do)."""
    from attn_cli.analysis.generate import GenerateSettings, generate, label, texts_of

    ids = []
    for text, edits in ((text_a, []), (text_b, settings.steer)):
        steps = generate(model, text, GenerateSettings(steps=settings.steps, chat=settings.chat, attention=False, steer=edits))
        next(steps)  # the prompt's tokens
        ids.append([step.id for step in steps])
    part = next((k for k, (x, y) in enumerate(zip(*ids)) if x != y), None if len(ids[0]) == len(ids[1]) else min(map(len, ids)))
    side = lambda i: {"ids": i, "tokens": [label(model, j) for j in i], "texts": texts_of(model, i)}  # noqa: E731
    return {"a": side(ids[0]), "b": side(ids[1]), "part": part}
