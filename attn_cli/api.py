"""attn as a library: the commands' own functions, for a notebook or an engine that splits a corpus.

    from attn_cli import api

    model = api.load_model("./all-MiniLM-L6-v2")          # a folder, a .gguf file, ollama:NAME, a cached name
    trace = api.trace(model, "The cat sat on the mat.")   # every layer's weights: trace.layers[l].weights [H, n, n]
    part = api.head_stats(model, open("corpus.txt"))       # sums and counts, not means: a Partial
    stats = api.figures(api.merge([part, other_part]))     # what `attn heads stats` prints (.to_dict(), .rows())

`heads stats` is `figures(merge([head_stats(model, lines)]))`, so partials computed anywhere (Dask's
map_partitions, Spark's mapPartitions, Ray Data's map_batches: docs/heads-stats.md) give the very
figures the command prints. Errors are attn_cli.errors.InputError (bad input) and DataError (a
file attn cannot read); a line that fails is counted in the partial, and said to `on_error`.
"""

from collections.abc import Callable, Iterable
from functools import lru_cache

from attn_cli.analysis.stats import Partial, figures, merge  # noqa: F401 (the API: merge, figures)


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
