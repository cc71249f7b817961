"""`attn inspect` without the terminal, for every model: text -> Tokens -> Trace -> one InspectResult, built whole.

The same steps for the lesson's heads over word vectors and for a checkpoint: tokenize (and check
what the n x n matrices will cost), run the model, choose the units (pieces or words, special
tokens shown or not), the heads shown in full, and add what the model's capabilities and the
options ask for: the residual stream and --focus path through the layers, or the update
E -> E' with its self and context parts, neighbours and the sense meter.
"""

import numpy as np

from attn_cli.analysis.units import aggregate, find_focus, groups, visible_units
from attn_cli.errors import InputError
from attn_cli.models.base import Model, Trace
from attn_cli.records import Record
from attn_cli.results.inspect import HeadView, InspectResult


class InspectSettings(Record):
    """What `inspect` reports for each sentence (how a model runs is the model's own settings). A plain class: see attention.Head."""

    __slots__ = ("heads", "words", "hide_special", "focus", "neighbors", "stage", "embeddings", "senses", "matrices", "weigh", "rollout",
                 "max_memory", "json", "exports", "ablate", "ablate_with", "steer", "steered")

    def __init__(self, heads: list[str] | None = None, words: bool = False, hide_special: bool = False, focus: str | None = None,
                 neighbors: int = 3, stage: str | None = None, embeddings: bool = False, senses=None, matrices: tuple | None = None,
                 weigh: str = "weight", rollout: bool = False, max_memory: int | None = None, json: bool = False, exports: bool = False,
                 ablate: list[str] | None = None, ablate_with: str = "zero"):
        self.exports = exports  # a page or a picture is made too: they show every head (the page, the model view)
        self.max_memory = max_memory  # bytes a checkpoint's run may take (None: most of what is available)
        self.json = json  # the heads shown go out as JSON numbers (else a terminal view)
        self.ablate = ablate  # heads turned off ("3.1") before the run shown (analysis/ablate.py)
        self.ablate_with = ablate_with
        self.steer, self.steered = [], []  # --steer's Add edits of resid_post, and what they came from (io/control_vector.py)
        self.heads = heads  # a checkpoint's "L.H" or "L" (every head of layer L); None: every head
        self.words = words  # merge word pieces into words
        self.hide_special = hide_special  # leave [CLS], [SEP], ... out of the view
        self.focus = focus  # a token (or index) to follow: its path through the layers, or its row in each head
        self.neighbors = neighbors  # nearest vocabulary entries (0: no search)
        self.stage = stage  # also report each head's matrix at this stage ("scores", "masked", "weights")
        self.embeddings = embeddings  # also report E and E'
        self.senses = senses  # (ad-hoc senses, sense set, its name) for the sense meter, or None
        self.matrices = matrices  # (n x n matrices a sentence keeps, what they are for): checked against memory before the forward pass
        self.weigh = weigh  # "norm": also each head's value-weighted attention ||alpha_ij f(x_j)|| (analysis.flow)
        self.rollout = rollout  # also the attention rollout: True through every layer, (A, B) through layers A to B (analysis.flow)


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


def inspect(model: Model, text: str, settings: InspectSettings) -> InspectResult:
    """One sentence through `model`, and everything `inspect` reports for it."""
    tokens = model.tokenize(text)
    if settings.matrices is not None:
        from attn_cli.io.memory import check_memory

        check_memory(len(tokens.ids), *settings.matrices)
    edits, ablation = [], None
    if settings.ablate:
        from attn_cli.analysis.ablate import ablation_edits, parse_ablation

        if "layers" not in model.capabilities:
            raise InputError("--ablate turns off a checkpoint's head (--model): the lesson's heads are chosen with --head instead")
        ablation = parse_ablation(settings.ablate, settings.ablate_with, model)
        edits = ablation_edits(model, tokens.ids, ablation)
    edits = edits + list(settings.steer)
    if "layers" in model.capabilities:
        check_footprint(model, settings, len(tokens.ids))
        if not keeps_everything(settings, len(tokens.ids)):
            result = shown_only(model, tokens, settings, edits)
            result.ablation, result.steered = ablation, settings.steered
            return result
    trace = model.forward(tokens, keep_scores=settings.stage in ("scores", "masked"), keep_values=settings.weigh == "norm", edits=edits)
    if "layers" in model.capabilities:
        result = layered(model, trace, settings)
        result.ablation, result.steered = ablation, settings.steered
        return result
    return one_layer(model, trace, settings)


def check_footprint(model: Model, settings: InspectSettings, n: int) -> None:
    """Refuse, before the pass, a run of a checkpoint that would not fit in memory (models.footprint), naming what would."""
    from attn_cli.models import footprint

    heads = len(parse_heads(settings.heads, model.n_layers, model.n_heads)) if settings.heads else 0
    every = model.n_layers * model.n_heads
    planes = 1 + (settings.stage in ("scores", "masked")) + (settings.stage == "scores")

    def need(n: int):
        if keeps_everything(settings, n):  # every head's scores and weights, every layer's streams; JSON shows every head
            shown = (heads or every) if settings.json or settings.heads else 0
            return footprint.estimate(model, n, cells=(footprint.EVERY_HEAD_PLANES + (settings.stage == "scores")) * every * n * n,
                                      shown=shown * n * n, streams=True, logits_rows=0)
        if not heads:  # JSON of every head, one at a time, remade from every layer's kept input
            return footprint.estimate(model, n, cells=n * n + model.n_layers * n * model.d_model, shown=n * n, logits_rows=0)
        return footprint.estimate(model, n, cells=planes * heads * n * n, shown=heads * n * n, logits_rows=0)

    options = "--head L.H or --layer L" if (not heads or heads > 1) and not settings.exports else ""  # a page, a picture: every head
    footprint.check(model, n, need, f"inspect of {heads or every} head{'s' if (heads or every) != 1 else ''}", settings.max_memory, options)


def keeps_everything(settings: InspectSettings, n: int) -> bool:
    """Whether a checkpoint's view needs every head's weights kept: the model view of a text of up to MAX_TOKENS, and
    what reads every head (a page or a picture, --words, --hide-special, --weigh norm, --rollout, the sense meter)."""
    from attn_cli.models.base import MAX_TOKENS

    overview = not settings.heads
    staged = settings.stage in ("scores", "masked")
    return ((overview or settings.exports) and (n <= MAX_TOKENS or settings.exports or staged)) or settings.words or settings.hide_special or settings.weigh == "norm" or settings.rollout \
        or settings.senses is not None


def shown_only(model: Model, tokens, settings: InspectSettings, edits=()) -> InspectResult:
    """A checkpoint's pass keeping only the heads shown in full (the model view of a long text: every head pooled into
    blocks of tokens), the rest of the figures made by watchers as the pass runs (analysis.kept)."""
    from attn_cli.analysis.kept import FirstToken, LazyWeights, OneHeadAtATime, Pooled, StreamNumbers, watchers
    from attn_cli.analysis.residual import residual
    from attn_cli.analysis.units import groups, visible_units
    from attn_cli.models.points import Keep

    n = len(tokens.ids)
    selected = parse_heads(settings.heads, model.n_layers, model.n_heads) if settings.heads else []
    members, labels, special = groups(tokens, False)
    focus = None if settings.focus is None else find_focus(labels, tokens.pieces, settings.focus, model.fold)
    stream, first = StreamNumbers(model.n_layers, n, focus), FirstToken(model.n_layers, model.n_heads, n)
    every = not selected and settings.json  # JSON of every head: each made again from its layer's input as it is written
    pooled = None if selected or every else Pooled(model.n_layers, model.n_heads, n)
    staged = settings.stage in ("scores", "masked")
    points = ("attn.pattern",) + (("attn.scores",) if staged else ()) + (("attn.qk",) if settings.stage == "scores" else ())
    heads = sorted({h for _, h in selected})
    keep = Keep(points if selected else ("resid_pre",) if every else (), layers=None if every else {l for l, _ in selected}, heads=heads,
                watch={"attn.pattern": watchers(first.watch, None if pooled is None else pooled.watch), **stream.watch()})
    trace = model.forward(tokens, keep=keep, edits=list(edits))
    allowed = visible_units(model.causal, members)  # [n, n] or None
    kept = lambda point, l, h: trace.get(point, l)[heads.index(h)] if trace.has(point, l) else None  # noqa: E731
    views = [HeadView(f"{l}.{h}", model.d_k, kept("attn.pattern", l, h), windowed(model, l, members, list(range(n)), allowed), layer=l,
                      index=h, window=model.window(l), scores=kept("attn.qk", l, h), masked=kept("attn.scores", l, h)) for l, h in selected]
    if every:
        one = OneHeadAtATime(model, trace)
        views = [HeadView(f"{l}.{h}", model.d_k, LazyWeights(one, l, h, n), windowed(model, l, members, list(range(n)), allowed), layer=l,
                          index=h, window=model.window(l)) for l in range(model.n_layers) for h in range(model.n_heads)]
    path = None if focus is None else stream.focus_trace(tokens, model.n_layers)
    weights = None if pooled is None else pooled.means()
    return InspectResult(
        labels, "causal" if model.causal else "none", views, settings.stage, model=model.summary(), caption=model.spec.update_caption,
        first_token=first.means(), pieces=list(tokens.pieces), special=special, words=False, hide_special=False, weights=weights,
        allowed=None if weights is None else np.tri(weights.shape[-1], dtype=bool) if model.causal else None, **stream.numbers(),
        focus=focus, focus_piece=focus, residual=None if path is None else residual(model, path, 0, settings.neighbors),
        focus_path=None if path is None else path.streams()[:, 0],
    )


def layered(model: Model, trace: Trace, settings: InspectSettings) -> InspectResult:
    """A checkpoint: every head's weights over the units shown, the heads picked shown in full, the residual stream."""
    from attn_cli.analysis.flow import piece_flows, rollout_span
    from attn_cli.analysis.residual import layer_numbers, residual

    selected = parse_heads(settings.heads, model.n_layers, model.n_heads)
    weights = trace.stacked("attn.pattern")  # [L, H, n, n]
    members, labels, special = groups(trace.tokens, settings.words)
    if settings.words:
        weights = aggregate(weights, members)  # [L, H, g, g]
    allowed = visible_units(model.causal, members)  # [g, g] or None
    flows, shares = piece_flows(model, trace, settings.weigh == "norm", settings.rollout)  # value_norms [L, H, n, n], rollout [n, n], over pieces
    special_weight, shown = None, list(range(len(members)))
    if settings.hide_special:
        shown = [u for u, s in enumerate(special) if not s]
        if not shown:
            raise InputError("every token is a special token; drop --hide-special")
        hidden = [u for u, s in enumerate(special) if s]
        special_weight = weights[..., hidden].sum(axis=-1)[..., shown]  # [L, H, g']: what each query put on them
        weights = weights[..., shown, :][..., shown]
        allowed = None if allowed is None else allowed[np.ix_(shown, shown)]
    flows = {name: (aggregate(m, members) if settings.words else m)[..., shown, :][..., shown] for name, m in flows.items()}
    focus = None
    if settings.focus is not None:
        u = find_focus([labels[s] for s in shown], [trace.tokens.pieces[members[s][-1]] for s in shown], settings.focus, model.fold)
        piece = members[shown[u]][-1]  # a word's last piece: under a causal mask the one that has seen the whole word
        focus = (piece, residual(model, trace, piece, settings.neighbors))
    sense_meter = note = None
    if settings.senses is not None:
        from attn_cli.analysis.meter import inspect_meter

        sense_meter, note = inspect_meter(model, trace, None if focus is None else focus[0], settings.senses)
    staged = settings.stage in ("scores", "masked")
    if staged and (settings.words or settings.hide_special):
        raise InputError("--stage shows the raw scores of word pieces; drop --words and --hide-special")
    heads = [HeadView(f"{l}.{h}", model.d_k, weights[l, h], windowed(model, l, members, shown, allowed), layer=l, index=h, window=model.window(l),
                      scores=trace.get("attn.qk", l)[h] if staged and trace.has("attn.qk", l) else None,
                      masked=trace.get("attn.scores", l)[h] if staged else None,
                      special_weight=None if special_weight is None else special_weight[l, h],
                      value_norms=flows["value_norms"][l, h] if "value_norms" in flows else None) for l, h in selected]
    first = np.stack([trace.get("attn.pattern", l)[:, 1:, 0].mean(axis=-1) for l in range(model.n_layers)]) \
        if trace.get("attn.pattern", 0).shape[-1] > 1 else None  # [L, H]: weight on the first token, over the later queries
    # (read layer by layer: no second copy of every head's weights)
    return InspectResult(
        [labels[s] for s in shown], "causal" if model.causal else "none", heads, settings.stage,
        model=model.summary(), caption=model.spec.update_caption, first_token=first, pieces=list(trace.tokens.pieces), special=[special[s] for s in shown], words=settings.words,
        hide_special=settings.hide_special, weights=weights, allowed=allowed, special_weight=special_weight, **layer_numbers(trace),
        focus=None if focus is None else u, focus_piece=None if focus is None else focus[0], residual=None if focus is None else focus[1],
        focus_path=None if focus is None else trace.streams()[:, focus[0]], special_shares=shares, sense_meter=sense_meter, senses_note=note, **flows,
        layer_allowed=None if all(model.window(l) is None for l in range(model.n_layers)) else np.stack(
            [windowed(model, l, members, shown, allowed) for l in range(model.n_layers)]),
        rollout_layers=rollout_span(settings.rollout, model.n_layers),
    )


def windowed(model, l: int, members: list, shown: list, allowed):  # -> [g, g] bool or None
    """Layer l's visible keys: the model's mask, and a local layer's sliding window too (its keys outside look masked)."""
    window = model.window(l)
    if window is None or allowed is None:
        return allowed
    return visible_units(model.causal, members, window)[np.ix_(shown, shown)]


def one_layer(model: Model, trace: Trace, settings: InspectSettings) -> InspectResult:
    """The lesson's heads: one layer over E, every head shown, the update E -> E' split into its self and context parts."""
    from attn_cli.core.attention import allowed_keys, attention_weights

    run = model.settings
    e, e_prime = trace.get("resid_pre", 0), trace.get("resid_post", 0)  # [n, d], [n, d]
    if not (np.isfinite(trace.get("attn.pattern", 0)).all() and np.isfinite(e).all() and np.isfinite(e_prime).all()):
        from attn_cli.errors import DataError

        raise DataError("the heads' scores or updates overflow float64 on this sentence: the vectors or the head weights are too large")
    tokens = trace.tokens.pieces
    allowed = allowed_keys(run.mask, len(e))
    outs = trace.heads  # models.glove.WordTrace: each head's own results
    if settings.weigh == "norm":
        from attn_cli.analysis.flow import layer_value_norms

        value_norms = layer_value_norms(model, trace)[0]  # [H, n, n]
    views = [
        HeadView(
            head.name, head.d_k, out.weights, allowed, noise=getattr(head, "noise", False), description=getattr(head, "description", ""),
            scores=out.scores, masked=out.masked, delta=out.delta, delta_self=out.delta_self, delta_context=out.delta_context,
            top_weight=None if run.scale else float(np.mean(np.max(out.weights, axis=1))),
            top_weight_scaled=None if run.scale else float(np.mean(np.max(attention_weights(out.scores, head.d_k, allowed, distance=head.distance, sink=head.sink)[1], axis=1))),
            distance=None if head.distance is None else [float(x) for x in head.distance], sink=head.sink, sink_weights=out.sink,
            value_norms=value_norms[h] if settings.weigh == "norm" else None,
        )
        for h, (head, out) in enumerate(zip(model.heads, outs))
    ]
    focus = None if settings.focus is None else find_focus(tokens, tokens, settings.focus, model.fold)
    senses = note = sense_meter = None
    if settings.senses is not None:
        from attn_cli.analysis.senses import measure_senses, word_meter

        adhoc, table, table_name = settings.senses
        senses, note = measure_senses(tokens, e, e_prime, model.vectors, adhoc=adhoc, sense_set=table, set_name=table_name, focus=focus)
        sense_meter = word_meter(model, senses, adhoc, table, focus)
    near = model.nearest(np.concatenate([e, e_prime]), settings.neighbors, skip=2 * model.own_rows(tokens)) if settings.neighbors > 0 else None
    n = len(e)
    return InspectResult(
        tokens, run.mask.value, views, settings.stage,
        unknown=trace.tokens.unknown, position=run.position, scale=run.scale, e=e, delta=trace.get("attn.out", 0), e_prime=e_prime,
        delta_self=sum_parts([o.delta_self for o in outs], e), delta_context=sum_parts([o.delta_context for o in outs], e),
        with_embeddings=settings.embeddings, near_input=None if near is None else near[:n], near_output=None if near is None else near[n:],
        senses=senses, senses_note=note, focus=focus, sense_meter=sense_meter,
    )


def sum_parts(parts: list, like: np.ndarray) -> np.ndarray:  # [h][n, d] -> [n, d]
    return np.sum(parts, axis=0) if parts else np.zeros_like(like)


def inspect_text(text: str, vectors, heads: list, settings) -> InspectResult:
    """The lesson's heads (models.glove.Settings says how they run) over one sentence, as `inspect` reports it, without neighbours."""
    from attn_cli.models.glove import GloveModel, stored_matrices

    what = f"{len(heads)} head{'s' if len(heads) != 1 else ''}"
    stage = settings.stage.value if settings.stage else None
    return inspect(GloveModel(vectors, heads, settings), text, InspectSettings(neighbors=0, stage=stage, embeddings=settings.embeddings,
                                                                            matrices=(stored_matrices(len(heads), settings), what)))
