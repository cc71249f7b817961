"""`attn inspect --model`, `attn model info` and `attn heads find` without the terminal.

A checkpoint's forward pass (attn_cli.models.transformer) becomes one `ModelResult`: every
head's weights, the residual stream's updates per layer, and the views' choices (word pieces
or words, special tokens shown or hidden). Rendering lives in attn_cli.render.
"""

from dataclasses import dataclass

import numpy as np

from attn_cli.errors import InputError
from attn_cli.models.base import Model, Trace
from attn_cli.models.transformer import Transformer
from attn_cli.results.models import HeadsFound, ModelInfo, ModelResult, ResidualRow
from attn_cli.results import row_cosines

@dataclass
class ModelSettings:
    heads: list[str] | None = None  # "L.H" or "L" (every head of layer L); None: all heads
    words: bool = False  # aggregate word pieces to words
    hide_special: bool = False  # leave [CLS], [SEP], ... out of the view
    focus: str | None = None  # a token whose residual stream to follow
    neighbors: int = 3  # nearest vocabulary tokens per layer for the focus token
    stage: str | None = None  # also report each selected head's scores


def parse_heads(specs: list[str] | None, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """"L.H" picks one head, "L" every head of layer L (0-based); none given: every head of every layer."""
    if not specs:
        return [(l, h) for l in range(n_layers) for h in range(n_heads)]
    chosen: list[tuple[int, int]] = []
    for spec in specs:
        layer, _, head = spec.partition(".")
        try:
            l = int(layer)
            hs = [int(head)] if head else list(range(n_heads))
        except ValueError:
            raise InputError(f"--head {spec!r}: with --model, a head is LAYER.HEAD (e.g. 2.11) or a LAYER (all its heads)") from None
        if not 0 <= l < n_layers:
            raise InputError(f"--head {spec}: layer {l} does not exist; the model has layers 0 to {n_layers - 1}")
        for h in hs:
            if not 0 <= h < n_heads:
                raise InputError(f"--head {spec}: head {h} does not exist; each layer has heads 0 to {n_heads - 1}")
            if (l, h) not in chosen:
                chosen.append((l, h))
    return chosen


# --- pieces, words and special tokens ----------------------------------------------------------


def groups(trace: Trace, words: bool) -> tuple[list[list[int]], list[str], list[bool]]:
    """The units the view shows: (pieces of each unit, labels, special flags).

    Without `words` every piece is its own unit. With `words` the pieces of one word merge and
    are labelled with the word as written; special tokens stay units of their own.
    """
    t = trace.tokens
    if not words:
        return [[i] for i in range(len(t.ids))], list(t.pieces), list(t.special)
    members: list[list[int]] = []
    seen: dict[int, int] = {}
    for i, (word, special) in enumerate(zip(t.words, t.special)):
        if special or word is None:
            members.append([i])
        elif word in seen:
            members[seen[word]].append(i)
        else:
            seen[word] = len(members)
            members.append([i])
    labels = []
    for unit in members:
        if t.special[unit[0]] or t.words[unit[0]] is None:
            labels.append(t.pieces[unit[0]])
        else:
            start, end = t.offsets[unit[0]][0], t.offsets[unit[-1]][1]
            labels.append(t.text[start:end].strip() or t.pieces[unit[0]])
    return members, labels, [t.special[u[0]] for u in members]


def aggregate(weights: np.ndarray, members: list[list[int]]) -> np.ndarray:  # [..., n, n] -> [..., g, g]
    """A unit's weight on a unit: the mean over its query pieces of the sum over the key pieces.

    Rows still sum to 1. A cell is NaN where every piece pair was masked.
    """
    n, g = weights.shape[-1], len(members)
    mean_rows = np.zeros((g, n), np.float32)  # [g, n]
    sum_cols = np.zeros((n, g), np.float32)  # [n, g]
    for u, pieces in enumerate(members):
        mean_rows[u, pieces] = 1.0 / len(pieces)
        sum_cols[pieces, u] = 1.0
    return mean_rows @ weights @ sum_cols  # [g, n] x [..., n, n] x [n, g] -> [..., g, g]


def visible_units(n: int, causal: bool, members: list[list[int]]) -> np.ndarray | None:  # -> [g, g] bool or None
    """Where a unit's query may see some piece of the key unit."""
    if not causal:
        return None
    first = np.array([u[0] for u in members])
    last = np.array([u[-1] for u in members])
    return first[None, :] <= last[:, None]


# --- the residual stream -------------------------------------------------------------------------


def residual(model: Model, trace: Trace, i: int, k: int) -> list[ResidualRow]:
    """Token i's vector through the layers: E, then each layer's attention and MLP updates."""
    x = trace.hidden[:, i]  # [L + 1, d]
    near = model.nearest(x, k) if k > 0 else [[] for _ in x]
    rows = [ResidualRow(0, float(np.linalg.norm(x[0])), None, None, None, float(row_cosines(x[0], x[0])), near[0])]
    for l, layer in enumerate(trace.layers, 1):
        rows.append(ResidualRow(
            l, float(np.linalg.norm(x[l])), float(np.linalg.norm(layer.attn_update[i])), float(np.linalg.norm(layer.mlp_update[i])),
            float(row_cosines(x[l], x[l - 1])), float(row_cosines(x[l], x[0])), near[l],
        ))
    return rows


def find_token(labels: list[str], pieces: list[str], focus: str) -> int:
    n = len(labels)
    try:
        i = int(focus)
    except ValueError:
        wanted = focus.strip().lower()
        for names in (labels, pieces):
            for j, name in enumerate(names):
                if name.lower() == wanted or name.lstrip("Ġ▁#").lower() == wanted:
                    return j
        raise InputError(f"--focus {focus!r} is not one of the tokens: {' '.join(labels)}") from None
    if not -n <= i < n:
        raise InputError(f"--focus {i} is out of range: {n} tokens (0 to {n - 1})")
    return i % n


# --- one sentence ------------------------------------------------------------------------------


def inspect_model(model: Model, text: str, settings: ModelSettings) -> ModelResult:
    trace = model.run(text)
    selected = parse_heads(settings.heads, model.n_layers, model.n_heads)
    n = len(trace.tokens.ids)
    weights = np.stack([layer.weights for layer in trace.layers])  # [L, H, n, n]
    members, labels, special = groups(trace, settings.words)
    if settings.words:
        weights = aggregate(weights, members)  # [L, H, g, g]
    allowed = visible_units(n, model.causal, members)  # [g, g] or None
    special_weight = None
    shown = list(range(len(members)))
    if settings.hide_special:
        shown = [u for u, s in enumerate(special) if not s]
        if not shown:
            raise InputError("every token is a special token; drop --hide-special")
        hidden = [u for u, s in enumerate(special) if s]
        special_weight = weights[..., hidden].sum(axis=-1)[..., shown]  # [L, H, g']: what each query put on them
        weights = weights[..., shown, :][..., shown]
        allowed = None if allowed is None else allowed[np.ix_(shown, shown)]
    focus = None
    if settings.focus is not None:
        u = find_token([labels[s] for s in shown], [trace.tokens.pieces[members[s][-1]] for s in shown], settings.focus)
        piece = members[shown[u]][-1]  # a word's last piece: under a causal mask the one that has seen the whole word
        focus = (piece, residual(model, trace, piece, settings.neighbors))
    scores = None
    if settings.stage in ("scores", "masked"):
        if settings.words or settings.hide_special:
            raise InputError("--stage shows the raw scores of word pieces; drop --words and --hide-special")
        scores = np.stack([layer.scores for layer in trace.layers])  # [L, H, n, n]
    attn = np.stack([layer.attn_update for layer in trace.layers])  # [L, n, d]
    mlp = np.stack([layer.mlp_update for layer in trace.layers])  # [L, n, d]
    return ModelResult(
        model=model.summary(), tokens=[labels[s] for s in shown], pieces=list(trace.tokens.pieces),
        special=[special[s] for s in shown], words=settings.words, hide_special=settings.hide_special,
        mask="causal" if model.causal else "none", weights=weights, allowed=allowed, selected=selected,
        special_weight=special_weight, scores=scores, stage=settings.stage,
        attn_norms=np.linalg.norm(attn, axis=-1), mlp_norms=np.linalg.norm(mlp, axis=-1),
        norms=np.linalg.norm(trace.hidden, axis=-1), layer_cosines=row_cosines(trace.hidden[1:], trace.hidden[:-1]),
        focus_piece=None if focus is None else focus[0], residual=None if focus is None else focus[1],
        focus_path=None if focus is None else trace.hidden[:, focus[0]],
    )


def model_info(model: Transformer) -> ModelInfo:
    """Sizes and parameter counts, from the loaded weights (not from the config's claims)."""
    d, d_k, h = model.d_model, model.d_k, model.n_heads
    attention = sum(layer[k].size for layer in model.layers for k in ("qkv", "qkv_b", "o", "o_b"))
    mlp = sum(layer[k].size for layer in model.layers for k in ("fc", "fc_b", "proj", "proj_b"))
    norms = sum(layer[k].size for layer in model.layers for k in ("ln1_g", "ln1_b", "ln2_g", "ln2_b"))
    embeddings = sum(v.size for k, v in model.embed.items() if k in ("word", "position", "type"))
    norms += sum(v.size for k, v in model.embed.items() if k.startswith("ln"))
    return ModelInfo(
        name=model.name, path=str(model.folder), type=model.kind, mask="causal" if model.causal else "none",
        layers=model.n_layers, heads=h, d_model=d, d_k=d_k, d_ff=model.d_ff, vocabulary=model.vocab_size,
        max_positions=model.max_positions, activation=model.activation,
        per_head={"w_q": [d, d_k], "w_k": [d, d_k], "w_v": [d, d_k], "w_o": [d_k, d], "weights": 4 * d * d_k, "biases": 3 * d_k},
        parameters={"embeddings": int(embeddings), "attention": int(attention), "mlp": int(mlp), "layer_norms": int(norms),
                    "total": int(embeddings + attention + mlp + norms)},
    )


def pool(weights: np.ndarray, size: int) -> np.ndarray:  # [..., g, g] -> [..., s, s], s = min(g, size)
    """Weights on a coarser grid of token blocks: the mean over a block's queries of the sum over a block's keys.

    Rows still sum to 1, so a pooled cell reads on the same 0-1 scale. NaN (masked) entries count as 0.
    """
    g = weights.shape[-1]
    if g <= size:
        return weights
    edges = np.linspace(0, g, size + 1).round().astype(int)
    blocks = [list(range(a, b)) for a, b in zip(edges[:-1], edges[1:])]
    return aggregate(np.nan_to_num(weights), blocks)


# --- which head does X ---------------------------------------------------------------------------


def find_unit(labels: list[str], word: str, near: int | None = None) -> int | None:
    """The unit whose label is `word` (case-insensitive): the first, or the one nearest to `near` (earlier wins a tie)."""
    places = [i for i, label in enumerate(labels) if label.lower() == word.lower()]
    if not places:
        return None
    return places[0] if near is None else min(places, key=lambda i: (abs(i - near), i > near))


def link_scores(weights: np.ndarray, q: int, keys: list[int], ignore: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one linked query, per head: (largest other weight on a key, keys exactly on top, weight on the keys).

    weights [..., g, g]. The query itself and `ignore` (special tokens) take no part in the ranking.
    """
    row = weights[..., q, :].astype(np.float64)  # [..., g]
    ranked = row.copy()
    ranked[..., [q, *ignore]] = -np.inf
    rest = np.delete(ranked, keys, axis=-1)  # [..., g - |keys|]
    best_rest = rest.max(axis=-1, initial=-np.inf)
    on_key = ranked[..., keys]
    return on_key.max(axis=-1) > best_rest, on_key.min(axis=-1) > best_rest, row[..., keys].sum(axis=-1)


def previous_unit(g: int, ignore: list[int]) -> np.ndarray:  # -> [g, g]: all weight on the nearest earlier unit that counts
    w = np.zeros((g, g))
    for i in range(g):
        earlier = [j for j in range(i) if j not in ignore]
        w[i, earlier[-1] if earlier else i] = 1.0
    return w


def even_units(g: int, ignore: list[int], causal: bool) -> np.ndarray:  # -> [g, g]: even over the visible units that count
    seen = np.tri(g) if causal else np.ones((g, g))
    seen[:, ignore] = 0.0
    seen[np.arange(g), np.arange(g)] += seen.sum(axis=1) == 0  # nothing to see but itself
    return seen / seen.sum(axis=1, keepdims=True)


SORT_KEYS = {"top": "top_on_key", "exact": "exact_top", "weight": "key_weight", "beyond": "top_beyond_previous"}


def find_heads(model: Model, links: list, source: str = "<links>", sort: str = "top") -> "HeadsFound":
    """Rank every (layer, head) on labelled links: how often a query's largest non-self weight lands on its labelled key.

    Word pieces are merged into words (as --words); special tokens are left out of the ranking
    (BERT's heads park weight on [CLS] and [SEP] when they have nothing to do). Baselines on the
    same words: all weight on the previous word, and even attention over the visible words.
    """

    by_sentence: dict[str, list] = {}
    for link in links:
        by_sentence.setdefault(link.sentence, []).append(link)
    shape = (model.n_layers, model.n_heads)
    names = ("head", "previous", "even")
    top = {k: [] for k in names}
    exact = {k: [] for k in names}
    weight = {k: [] for k in names}
    beyond = {k: [] for k in names}  # top on a key when the previous word is out of the running
    dropped = 0
    for sentence, group in by_sentence.items():
        trace = model.run(sentence)
        members, labels, special = groups(trace, words=True)
        w = aggregate(np.stack([layer.weights for layer in trace.layers]), members)  # [L, H, g, g]
        g, ignore = len(members), [u for u, s in enumerate(special) if s]
        patterns = {"head": w, "previous": previous_unit(g, ignore), "even": even_units(g, ignore, model.causal)}
        pairs: dict[int, list[int]] = {}
        for link in group:
            q = find_unit(labels, link.query)
            if q is None:
                raise InputError(f"{source} line {link.line}: query word {link.query!r} is not a word of the sentence as {model.name} splits it")
            k = find_unit(labels, link.key, near=q)
            if k is None:
                raise InputError(f"{source} line {link.line}: key word {link.key!r} is not a word of the sentence as {model.name} splits it")
            if k == q or (model.causal and k > q):
                dropped += 1
                continue
            if k not in pairs.setdefault(q, []):
                pairs[q].append(k)
        previous = previous_unit(g, ignore).argmax(axis=1)  # [g] each unit's previous word
        for q, keys in pairs.items():
            far = [k for k in keys if k != previous[q]]
            for name, pattern in patterns.items():
                t, e, kw = link_scores(pattern, q, keys, ignore)
                top[name].append(t)
                exact[name].append(e)
                weight[name].append(kw)
                if far and previous[q] != q:
                    beyond[name].append(link_scores(pattern, q, far, ignore + [int(previous[q])])[0])
    queries = len(top["head"])
    if not queries:
        raise InputError(f"{source}: no link left to score" + (" (a causal model cannot see a key after its query)" if dropped else ""))

    def measures(name: str, at=()) -> dict:
        mean = lambda xs: np.mean(np.array(xs, dtype=np.float64), axis=0)[at] if xs else np.nan  # noqa: E731
        return {"top_on_key": float(mean(top[name])), "exact_top": float(mean(exact[name])), "key_weight": float(mean(weight[name])),
                "top_beyond_previous": float(mean(beyond[name]))}

    heads = [{"layer": l, "head": h, "name": f"{l}.{h}", **measures("head", (l, h))} for l in range(shape[0]) for h in range(shape[1])]
    first = SORT_KEYS[sort]
    heads.sort(key=lambda r: (-np.nan_to_num(r[first], nan=-1.0), -r["key_weight"], r["layer"], r["head"]))
    baselines = [{"name": name, **measures(name)} for name in ("previous", "even")]
    return HeadsFound(file=source, model=model.name, mask="causal" if model.causal else "none", sort=first, sentences=len(by_sentence),
                      queries=queries, beyond_previous=len(beyond["head"]), dropped=dropped, heads=heads, baselines=baselines)


def link_set(name: str):
    """A shipped link set by name (data/links/NAME.tsv; adjective: the held-out noun -> adjective set), else a path."""
    from pathlib import Path

    from attn_cli.vectors.store import DATA_DIR

    shipped = {"adjective": DATA_DIR / "heads" / "eval" / "adjectives_natural.tsv"}
    if name in shipped:
        return shipped[name]
    if (DATA_DIR / "links" / f"{name}.tsv").is_file() and "/" not in name:
        return DATA_DIR / "links" / f"{name}.tsv"
    return Path(name)
