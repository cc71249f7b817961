"""attn as a library: the commands' own functions, for a notebook or an engine that splits a corpus.

    from attn_cli import api

    model = api.load_model("./all-MiniLM-L6-v2")          # a folder, a .gguf file, ollama:NAME, a cached name
    trace = api.trace(model, "The cat sat on the mat.")   # every layer's weights: trace.get("attn.pattern", l) [H, n, n]
    part = api.head_stats(model, open("corpus.txt"))       # sums and counts, not means: a Partial
    stats = api.figures(api.merge([part, other_part]))     # what `attn heads stats` prints (.to_dict(), .rows())

Why a model predicts what it does, as TransformerLens asks it, without torch:

    cache = api.run_with_cache(model, "When Mary and John went to the store, John gave a drink to")
    cache["blocks.23.attn.hook_z"]                        # [n, H, d_head]; also cache["attn.z", 23], cache["z", 23]
    logits, cache = api.run_with_edits(model, text, [api.Zero("attn.z", 23, head=3)], names=["resid_pre"])
    parts = api.explain(model, text, target=" Mary", versus=" John")   # what `attn explain` prints
    maps = api.patch(model, clean, corrupt, target=" Mary", versus=" John")   # what `attn patch` prints

A direction from contrast pairs, and steering with it where llama.cpp adds a control vector:

    found = api.direction(model, "the cats", "the cat")    # what `attn direction` prints; found.directions [L, d]
    steer = [api.Add("resid_post", l, 4 * found.directions[l]) for l in range(1, model.n_layers)]
    logits, cache = api.run_with_edits(model, "I saw the", steer)
    moved = api.compare(model, "I saw the", steer=steer)   # what `attn compare` prints: the run beside its steered self

What a head's matrices are, as Elhage et al. read them, and how heads compose (TransformerLens's all_composition_scores):

    head = api.circuit(model, 17, 8, text="the cat sat on the mat")   # what `attn circuit 17.8` prints; head.scores [n, n]
    pairs = api.composition(model)                        # what `attn heads compose` prints; pairs.scores["k"] [L, H, L, H]

`heads stats` is `figures(merge([head_stats(model, lines)]))`, so partials computed anywhere (Dask's
map_partitions, Spark's mapPartitions, Ray Data's map_batches: docs/heads-stats.md) give the very
figures the command prints. Errors are attn_cli.errors.InputError (bad input) and DataError (a
file attn cannot read); a line that fails is counted in the partial, and said to `on_error`.
"""

from collections.abc import Callable, Iterable
from functools import lru_cache

from attn_cli.analysis.stats import Partial, figures, merge  # noqa: F401 (the API: merge, figures)
from attn_cli.models.points import Add, Keep, Mean, Patch, Start, Zero  # noqa: F401 (the API: what a pass keeps and changes)

# TransformerLens's hook names -> attn's points (models/points.py): blocks.{l}.<name>, or the short names
HOOK_NAMES = {
    "hook_resid_pre": "resid_pre", "attn.hook_z": "attn.z", "attn.hook_pattern": "attn.pattern", "attn.hook_attn_scores": "attn.scores",
    "hook_attn_out": "attn.out", "hook_resid_mid": "resid_mid", "hook_mlp_out": "mlp_out", "hook_resid_post": "resid_post",
    "attn.hook_v": "v", "ln_final.hook_normalized": "resid_final",
}
SHORT_NAMES = {"z": "attn.z", "pattern": "attn.pattern", "scores": "attn.scores", "attn_out": "attn.out", **{p: p for p in HOOK_NAMES.values()}}


def point_name(name: str) -> tuple[str, int | None]:
    """("attn.z", 3) for "blocks.3.attn.hook_z"; (point, None) for a short name ("z", "attn.z", "resid_pre")."""
    if name.startswith("blocks."):
        _, layer, rest = name.split(".", 2)
        if rest in HOOK_NAMES:
            return HOOK_NAMES[rest], int(layer)
    elif name in HOOK_NAMES:
        return HOOK_NAMES[name], None
    elif name in SHORT_NAMES:
        return SHORT_NAMES[name], None
    raise KeyError(f"no activation {name!r}: use TransformerLens's names (blocks.3.attn.hook_z) or attn's ({', '.join(sorted(SHORT_NAMES))})")


class ActivationCache:
    """The activations a run kept, by TransformerLens's names or attn's: cache["blocks.3.attn.hook_z"], cache["attn.z", 3],
    cache["z", 3]. Each value is a NumPy array without a batch axis (models/points.py gives the shapes)."""

    def __init__(self, trace, tokens):
        self.trace, self.tokens = trace, tokens

    def __getitem__(self, key):
        name, layer = key if isinstance(key, tuple) else (key, None)
        point, named_layer = point_name(name)
        return self.trace.get(point, named_layer if layer is None else layer)

    def __contains__(self, key) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True


def _keep(model, names, layers=None) -> Keep:
    points = {point_name(n)[0] for n in (names or ("resid_pre", "attn.z", "attn.pattern", "mlp_out", "resid_post"))}
    return Keep(points=points | {"resid_post"}, layers=layers)


def run_with_cache(model, text: str, names=None, *, layers=None) -> ActivationCache:
    """One pass over `text` keeping the named activations (default: resid_pre, attn.z, pattern, mlp_out, resid_post) of
    every layer, or of `layers`; nothing else is stored."""
    tokens = model.tokenize(text)
    return ActivationCache(model.forward(tokens, keep=_keep(model, names, layers)), tokens)


def run_with_edits(model, text: str, edits, names=None, *, layers=None):
    """One pass with edits (api.Zero, api.Mean, api.Patch, api.Add; models/points.py), made where each point is computed:
    (logits [n, V] at every position, ActivationCache of what `names` asks)."""
    tokens = model.tokenize(text)
    keep = _keep(model, names, None if layers is None else set(layers) | {model.n_layers - 1})
    trace = model.forward(tokens, keep=keep, edits=list(edits))
    return model.readout(trace.get("resid_post", model.n_layers - 1)), ActivationCache(trace, tokens)


def explain(model, text: str, *, target: str | None = None, versus: str | None = None, focus: str | None = None,
            ablate: list[str] | None = None, ablate_with: str = "zero"):
    """`attn explain`'s result (results.explain.ExplainResult): the logit of target (less versus) split into its parts."""
    from attn_cli.analysis.explain import ExplainSettings, explain as run

    return run(model, text, ExplainSettings(target=target, versus=versus, focus=focus, ablate=ablate, ablate_with=ablate_with))


def patch(model, clean: str, corrupt: str, *, target: str, versus: str):
    """`attn patch`'s result (results.patch.PatchResult): both patching maps, raw (.resid_pre [L, n], .heads [L, H]) and
    normalised (.normalised(...))."""
    from attn_cli.analysis.patch import PatchSettings, patch as run

    return run(model, clean, corrupt, PatchSettings(target, versus))


def direction(model, positive: str | None = None, negative: str | None = None, *, pairs=(), method: str = "mean", holdout: int = 0,
              seed: int = 0, probe=()):
    """`attn direction`'s result (results.direction.DirectionResult): the pairs' direction at every layer's resid_post
    (.directions [L, d]), its separation of the last `holdout` pairs beside a random direction's, the probe's projections.
    `pairs`: (positive, negative) tuples, after POSITIVE, NEGATIVE when both are given."""
    from attn_cli.analysis.direction import DirectionSettings, direction as run
    from attn_cli.errors import InputError

    texts = ([(positive, negative)] if positive is not None and negative is not None else []) + [tuple(p) for p in pairs]
    if not texts:
        raise InputError("give POSITIVE and NEGATIVE, or pairs")
    return run(model, texts, DirectionSettings(method=method, holdout=holdout, seed=seed, probe=list(probe)))


def compare(model, a: str, b: str | None = None, *, steer=(), head: tuple[int, int] | None = None, generate: int = 0, top: int = 5,
            chat: bool = False):
    """`attn compare`'s result (results.compare.CompareResult): run A (`a`) beside run B (`b`, or `a` again) with the edits
    `steer` (api.Add, ...) made in B only: .cosine [L, m] at aligned positions, .baseline [L] (A's neighbouring positions),
    .kl, .top_a/.top_b/.rose/.fell, with `head` its maps (.maps), with `generate` N the continuations."""
    from attn_cli.analysis.compare import CompareSettings, compare as run

    steered = [{"file": f"{len(steer)} edits", "scale": 1.0, "layers": sorted({e.layer for e in steer if e.layer is not None})}] if steer else []
    settings = CompareSettings(top=top, head=head, steps=generate, chat=chat, steer=list(steer), steered=steered)
    return run(model, a, a if b is None else b, settings)


def circuit(model, layer: int, head: int, *, text: str | None = None, tokens: int = 100, distance: int = 0, top: int = 10, seed: int = 0):
    """`attn circuit`'s result (results.circuit.CircuitResult): the head's QK scores over a token set (.scores [n, n], .ids,
    .labels) and, for a decoder, its OV circuit (.ov: promoted tokens, copying, positivity and their random baselines)."""
    from attn_cli.analysis.circuit import CircuitSettings, circuit as run

    return run(model, layer, head, CircuitSettings(text=text, tokens=tokens, distance=distance, top=top, seed=seed))


def composition(model, *, to: str | None = None, mode: str = "k", seed: int = 0, top: int = 10):
    """`attn heads compose`'s result (results.compose.CompositionResult): .scores["q"|"k"|"v"] [L, H, L, H] ([l1, h1, l2, h2],
    NaN unless l1 < l2), .baseline (mean, sd) per mode of random heads, .to_dict() as --json writes it."""
    from attn_cli.analysis.compose import composition as run

    return run(model, to=to, mode=mode, seed=seed, top=top)


@lru_cache(maxsize=4)
def load_model(spec: str):
    """The checkpoint `--model` would open (attn_cli.models.transformer.Transformer), loaded once per process and spec."""
    from attn_cli.models.loading import load

    return load(spec)


def trace(model, text: str, *, values: bool = False):
    """One sentence through the model: its Tokens, the residual stream and every layer's weights (models.base.Trace).
    `values`: also each layer's V (the value-weighted view reads them)."""
    return model.forward(model.tokenize(text), keep_values=values)


def numbered(sentences: Iterable) -> Iterable[tuple[int, str | bytes]]:
    """(line number, text) of each sentence: strings or bytes (line endings are dropped), or (number, text) pairs as they are."""
    for i, item in enumerate(sentences, 1):
        yield item if isinstance(item, tuple) else (i, item)


def sentence_text(line: str | bytes) -> str:
    from attn_cli.io.files import decode_utf8

    text = decode_utf8(line, "") if isinstance(line, bytes) else line
    return text.rstrip("\r\n")


def head_stats(model, sentences: Iterable, *, error: str = "mul", exclude_bos: bool = False, exclude_current: bool = False,
               on_error: Callable[[int, str], None] | None = None, progress: Callable[[int], None] | None = None) -> Partial:
    """`heads stats`'s sums over some sentences (one a line, as a file gives them; blank ones skipped), streamed: a Partial.

    error, exclude_bos, exclude_current: the head detector's form and exclusions (analysis.detect).
    A sentence the model cannot take (InputError) is counted as failed and said to on_error(line, message);
    progress(lines done) is called after each line.
    """
    from attn_cli.io.lines import Lines
    from attn_cli.models.points import Keep

    partial = Partial({"name": model.name, "layers": model.n_layers, "heads": model.n_heads, "causal": bool(model.causal)},
                      {"error": error, "exclude_bos": exclude_bos, "exclude_current": exclude_current})

    def compute(line):  # the heads' sums, a block of query rows at a time as the pass makes them: no [L, H, n, n] is kept
        tokens = model.tokenize(sentence_text(line))
        sums = partial.sums_for(model.n_layers, model.n_heads, tokens.ids, tokens.special)
        model.forward(tokens, keep=Keep((), watch={"attn.pattern": sums.watch}))
        return tokens, sums

    source = Lines(numbered(sentences))
    for done, item in enumerate(source.results(compute), 1):
        if item.error is not None:
            partial.add_failure(item.number, item.error)
            if on_error is not None:
                on_error(item.number, item.error)
        else:
            tokens, sums = item.result
            partial.add_sums(sums, tokens.ids, tokens.special)
        if progress is not None:
            progress(done)
    partial.blank = source.blank
    return partial


def detect(model, sentences: Iterable, patterns=None, **options):
    """`heads detect`'s result (results.detect.HeadsDetected) on some sentences; options as analysis.detect.detect_heads takes them."""
    from attn_cli.analysis.detect import PATTERNS, detect_heads

    lines = [(n, sentence_text(t)) for n, t in numbered(sentences) if sentence_text(t).strip()]
    return detect_heads(model, lines, "<sentences>", list(patterns or PATTERNS), **options)
