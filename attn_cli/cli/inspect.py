"""`attn inspect`: attention heads over a sentence, as heatmaps or as JSON."""

import os
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import HELP_PANELS, Format, FormatOpt, RowsCommand, app, examples, say
from attn_cli.cli.emit import emit, line_text, stdin_lines
from attn_cli.cli.options import AblateOpt, AblateWith, AblateWithOpt, ForceOpt, HeadsOpt, LimitOpt, ModelOpt, OovOpt, SeedOpt, SteerLayerOpt, SteerLayersOpt, SteerOpt, ThreadsOpt, TrustOpt, VectorsOpt, ablate_with_value, complete_sense_sets, load_vectors, page_file
from attn_cli.core.attention import Mask, Stage
from attn_cli.errors import InputError
from attn_cli.lesson.directions import MAX_NEIGHBORS
from attn_cli.models.base import MAX_TOKENS
from attn_cli.vectors.tokens import Oov

DEFAULT_NEIGHBORS = 3  # in JSON, and in the view with --neighbors


class Colors(str, Enum):
    """The colours of an export, whatever the terminal's."""

    truecolor = "truecolor"
    c256 = "256"
    c16 = "16"


def check_export_view(value: str | None) -> str | None:
    """--export-view's VIEW, one of views.inspect.EXPORTS (read when the option is given, not on every start)."""
    from attn_cli.views.inspect import EXPORTS

    if value is not None and value not in EXPORTS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(EXPORTS)}")
    return value


def complete_export_view(incomplete: str) -> list[str]:
    from attn_cli.views.inspect import EXPORTS

    return [name for name in EXPORTS if name.startswith(incomplete)]


class Weigh(str, Enum):
    weight = "weight"  # the attention weights alpha_ij
    norm = "norm"  # ||alpha_ij f(x_j)||: each weight times the length of the key's value through W_V and W_O


HELP_PANELS["inspect"] = {name: panel for panel, names in {  # inspect --help, option by option
    "Sentence and word vectors": ("mask", "position", "scale", "max_tokens", "vectors_path", "limit", "trust_pickle", "oov"),
    "Heads": ("head", "seed"),
    "Model (--model: a real checkpoint instead of the word vectors)": ("model", "layer", "words", "hide_special", "rollout", "rollout_layers",
                                                                       "max_memory", "threads", "ablate", "ablate_with", "steer",
                                                                       "steer_layer", "steer_layers"),
    "Views": ("stage", "weigh", "transpose", "focus", "neighbors", "per_head", "picture", "sense", "sense_set"),
    "Output format": ("output", "spreadsheet", "embeddings"),
    "Output files (besides stdout)": ("svg", "html", "export_view", "width", "colors", "page", "force"),
}.items() for name in names}


@app.command("inspect", cls=RowsCommand, epilog=examples(
    'attn inspect "A fluffy blue creature roamed the verdant forest."',
    'attn inspect "the cat sat on the mat" --focus cat --stage masked',
    'attn inspect "the big red dog" --head adjective --svg dog.svg --width 100',
))
def inspect(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="A sentence, or - to read one sentence per line from stdin.", show_default=False)],
    head: HeadsOpt = None,
    model: ModelOpt = None,
    layer: Annotated[int | None, typer.Option("--layer", metavar="L", min=0, help="With --model: show every head of layer L in full.", show_default=False)] = None,
    words: Annotated[bool, typer.Option("--words", help="With --model: merge word pieces into words (a word's row: mean over its pieces; its column: the sum).")] = False,
    hide_special: Annotated[bool, typer.Option("--hide-special", help="With --model: leave [CLS], [SEP], ... out of the view, saying how much weight they held.")] = False,
    mask: Annotated[Mask | None, typer.Option("--mask", help="causal: a token sees only itself and earlier tokens; none: every token. Default causal (a --model uses its own).", show_default=False)] = None,
    position: Annotated[bool, typer.Option("--position/--no-position", help="Add sinusoidal positions to the word vectors.")] = True,
    seed: SeedOpt = 0,
    stage: Annotated[
        Stage | None,
        typer.Option("--stage", help="Show the matrix before scaling (scores), after scaling and masking (masked), or after softmax (weights); with --json, add each head's scores. Default: weights.", show_default=False),
    ] = None,
    transpose: Annotated[bool, typer.Option("--transpose", help="Queries as columns, as in the lesson (default: queries as rows).")] = False,
    weigh: Annotated[Weigh, typer.Option("--weigh", help="Show the weights, or norm: ||alpha_ij f(x_j)||, each weight times the length of what the key writes through W_V and W_O (Kobayashi et al. 2020; also in JSON: value_norms).")] = Weigh.weight,
    rollout: Annotated[bool, typer.Option("--rollout", help="With --model: also the attention rollout through the layers (heads averaged, 0.5 A + 0.5 I, multiplied up), as a heatmap and in JSON.")] = False,
    rollout_layers: Annotated[str | None, typer.Option("--rollout-layers", metavar="A:B", help="With --model: the rollout through layers A to B only (0-based, both included; A: runs to the last, :B from the first). Implies --rollout.", show_default=False)] = None,
    focus: Annotated[str | None, typer.Option("--focus", metavar="WORD|INDEX", help="A token (its first occurrence; a word of several tokens: its last) or a 0-based index (-1 = last): show that query's softmax distribution.", show_default=False)] = None,
    neighbors: Annotated[
        int | None,
        typer.Option("--neighbors", metavar="K", min=0, max=MAX_NEIGHBORS, help="Nearest keys to E and E' (0 to skip the search over every key), in the shift table and in JSON (neighbors). Default: 3 in JSON; the view shows them when asked.", show_default=False),
    ] = None,
    per_head: Annotated[bool, typer.Option("--per-head", help="Also show each head's own shift: |Delta E|, its context and self parts, and their cosines.")] = False,
    picture: Annotated[bool, typer.Option("--picture", help="Also draw E -> E' as arrows in a 2-D projection (with --model: the --focus token through the layers).")] = False,
    scale: Annotated[bool, typer.Option("--scale/--no-scale", help="Divide the scores by sqrt(d_k) before softmax (--no-scale skips it, to see what it does).")] = True,
    sense: Annotated[
        list[str] | None,
        typer.Option("--sense", metavar="NAME=W1,W2,...", help="A sense given by probe words; measure every token (or --focus) against it before and after the heads (with --model: the --focus word at every layer, against prototypes of the word itself). Repeat for several senses.", show_default=False),
    ] = None,
    sense_set: Annotated[
        str | None,
        typer.Option("--sense-set", metavar="NAME|FILE", autocompletion=complete_sense_sets, help="Measure the tokens this sense set has senses for (with --model: the --focus word, else the first word it has); a shipped set such as lesson, or a TSV word<TAB>sense<TAB>probe words.", show_default=False),
    ] = None,
    embeddings: Annotated[bool, typer.Option("--embeddings", help="With --json, add the input embeddings E and the output E'.")] = False,
    max_tokens: Annotated[int, typer.Option("--max-tokens", metavar="N", min=1, help="Refuse sentences with more tokens than this.")] = MAX_TOKENS,
    max_memory: Annotated[str | None, typer.Option("--max-memory", metavar="SIZE", help="With --model: the memory the run may take (4G, 512M); default: most of what is available. A run that needs more is refused before it starts, naming what would fit.", show_default=False)] = None,
    svg: Annotated[Path | None, typer.Option("--svg", metavar="FILE", help="Also save the view as an SVG picture (FILE ends in .svg; no network needed to show it).", show_default=False)] = None,
    html: Annotated[Path | None, typer.Option("--html", metavar="FILE", help="Also save the view as an HTML page (FILE ends in .html), dark like the SVG.", show_default=False)] = None,
    width: Annotated[int | None, typer.Option("--width", metavar="N", min=40, max=4096, help="Columns of the --svg/--html picture, whatever the terminal. Default: 100, or what --export-view's figure needs.", show_default=False)] = None,
    colors: Annotated[Colors, typer.Option("--colors", help="Colours of the --svg/--html picture: truecolor, or 256 or 16 as xterm shows them (never the terminal's own).")] = Colors.truecolor,
    export_view: Annotated[str | None, typer.Option("--export-view", metavar="VIEW", callback=check_export_view, autocompletion=complete_export_view, help="Save one view alone in --svg/--html, as a figure: titled, with its legend, as wide as it needs. VIEW: heatmap (the heads in full, side by side), overview (--model), shift, layers, residual, senses or picture.", show_default=False)] = None,
    page: Annotated[Path | None, typer.Option("--page", metavar="FILE", parser=page_file, help="Also write an interactive page, one .html file that loads nothing: hover a token to see its attention, pick a layer and a head.", show_default=False)] = None,
    ablate: AblateOpt = None,
    ablate_with: AblateWithOpt = AblateWith.zero,
    steer: SteerOpt = None,
    steer_layer: SteerLayerOpt = None,
    steer_layers: SteerLayersOpt = None,
    force: ForceOpt = False,
    vectors_path: VectorsOpt = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    oov: OovOpt = Oov.error,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Run attention heads over a sentence: Q/K/V, scaling, the causal mask, softmax and E' = E + Delta E.

    With --model, run a real checkpoint instead (BERT, GPT-2, a Llama-family decoder): every
    layer and head, as an overview, in full with --head LAYER.HEAD or --layer L, and --focus
    TOKEN's path through the layers.

    Exit codes: 0 ok; 2 bad usage or input; 1 an unreadable or damaged file; 130 Ctrl-C. With -,
    a failed line's output is {"line": n, "error": ...} and the other lines are still done; the
    exit code is then 1 if a line met damaged data (a NaN vector, say), else 2.
    """
    from attn_cli.io.files import check_text

    ablate_with, exports = ablate_with_value(ablate, ablate_with), check_exports(svg, html, width, output, force, colors=colors.value, view=export_view, page=page, text=text)
    lines = stdin_lines() if text == "-" else iter([(1, check_text(text, "TEXT"))])
    focus, sense = check_text(focus, "--focus") if focus is not None else None, [check_text(spec, "--sense") for spec in sense] if sense else sense
    given = {"--vectors": vectors_path, "--sense": sense, "--sense-set": sense_set, "--mask": mask, "--per-head": per_head or None,
             "--embeddings": embeddings or None, "--no-position": None if position else True, "--no-scale": None if scale else True,
             "--limit": limit, "--oov": None if oov == Oov.error else oov, "--neighbors": neighbors if neighbors and focus is None else None,
             "--layer": layer, "--max-memory": max_memory, "--words": words or None, "--hide-special": hide_special or None, "--rollout": rollout or None,
             "--rollout-layers": rollout_layers, "--ablate": ablate or None, "--steer": steer or None, "--steer-layer": steer_layer, "--steer-layers": steer_layers}
    if weigh is Weigh.norm and stage not in (None, Stage.weights):
        raise InputError("--weigh norm weighs the weights; drop --stage")
    if model is not None:
        from attn_cli.models.transformer import Transformer as kind
    else:
        from attn_cli.models.glove import GloveModel as kind
    check_options(kind.capabilities, given)
    if model is not None:
        if (picture or export_view == "picture") and focus is None:
            raise InputError(f"{'--picture' if picture else '--export-view picture'} with --model draws the --focus token through the layers; name it with --focus")
        chosen, settings = open_checkpoint(model, head, layer, words=words, hide_special=hide_special, focus=focus, neighbors=neighbors,
                                           stage=stage, output=output, weigh=weigh.value, rollout=rollout if rollout_layers is None else rollout_layers,
                                           senses=checkpoint_senses(sense, sense_set, focus), max_memory=max_memory, exports=exports is not None, ablate=(ablate, ablate_with), steer=(steer or [], steer_layer, steer_layers))
        overview = not (head or layer is not None)
    else:
        from attn_cli.models.glove import Settings

        run = Settings(mask=mask or Mask.causal, position=position, oov=oov, max_tokens=max_tokens, stage=stage, embeddings=embeddings, scale=scale)
        chosen, settings = open_glove(run, head, seed, vectors_path, limit, trust_pickle, sense, sense_set, focus=focus, neighbors=neighbors,
                                      output=output, stream=text == "-", page=page is not None)
        settings.weigh = weigh.value
        overview = False
    view_options = dict(stage=(stage or Stage.weights).value, transpose=transpose, per_head=per_head, picture=picture, overview=overview,
                        weigh=weigh.value, neighbors=neighbors, lead=text != "-")  # the views are read only when a view is drawn

    def compute(line: str | bytes):
        from attn_cli.analysis.inspect import inspect

        return inspect(chosen, line_text(line), settings)

    def view(result, line: int) -> list:
        from attn_cli.views.inspect import ViewOptions, inspect_view

        if result.senses_note:
            say(result.senses_note if text != "-" else f"line {line}: {result.senses_note}")
        return inspect_view(result, ViewOptions(**view_options))

    if export_view == "heatmap" and overview:
        raise InputError("--export-view heatmap saves the heads picked with --head LAYER.HEAD (or --layer L); the model view is --export-view overview")
    emit(lines, compute, view, single=text != "-", output=output, exports=exports, options=view_options)


ABSENT = {  # a model without this capability refuses the options that need it, saying so in one line
    "word-vectors": "to word vectors, not to --model", "settings": "to word vectors, not to --model", "shift": "to word vectors, not to --model",
    "probe-senses": "to word vectors, not to --model", "layers": "--model", "pieces": "--model", "context-senses": "--model",
}
SENSES = ("probe-senses", "context-senses")  # the sense meter: by probe words' vectors, or by prototypes of the word at every layer
OPTION_NEEDS = {
    "--vectors": "word-vectors", "--limit": "word-vectors", "--oov": "word-vectors", "--sense": SENSES, "--sense-set": SENSES,
    "--mask": "settings", "--no-position": "settings", "--no-scale": "settings", "--per-head": "shift", "--embeddings": "shift",
    "--neighbors": "shift", "--layer": "layers", "--max-memory": "layers", "--words": "pieces", "--hide-special": "pieces", "--rollout": "layers",
    "--rollout-layers": "layers", "--ablate": "layers", "--steer": "layers", "--steer-layer": "layers", "--steer-layers": "layers",
}  # --neighbors: the keys nearest E and E'; with --focus, a checkpoint's token path takes it too


def check_options(capabilities: frozenset, given: dict) -> None:
    """One usage error for the options given that the model cannot honour, by the capabilities it declares."""
    missing: dict[str, list[str]] = {}
    for name, value in given.items():
        needs = (OPTION_NEEDS[name],) if isinstance(OPTION_NEEDS[name], str) else OPTION_NEEDS[name]  # any one of them will do
        if value is not None and not capabilities.intersection(needs):
            missing.setdefault(ABSENT[needs[0]], []).append(name)
    for where, names in missing.items():
        if where == "--model":
            raise InputError(f"{', '.join(names)} {'needs' if len(names) == 1 else 'need'} --model")
        raise InputError(f"{', '.join(names)} {'applies' if len(names) == 1 else 'apply'} {where}")


def check_exports(svg, html, width, output, force, *, colors: str, view: str | None, page, text: str):
    """The exports asked for, checked before any work (a file's suffix, its folder, --force): io.export.Exports,
    or None when none is (io.export is then never read)."""
    pictures = [p for p in (svg, html) if p is not None]
    if pictures and output is not Format.table:
        raise InputError(f"--svg and --html save the terminal view; they do not combine with --{output.value}")
    chosen = [os.path.abspath(p) for p in (svg, html, page) if p is not None]
    if len(set(chosen)) < len(chosen):
        raise InputError("--svg, --html and --page name the same file")
    if width is not None and not pictures:
        raise InputError("--width sets the width of --svg and --html pictures; give one of them")
    for option, given in (("--export-view", view), ("--colors", None if colors == "truecolor" else colors)):
        if given is not None and not pictures:
            raise InputError(f"{option} is for the --svg and --html pictures; give one of them")
    if text == "-" and (view is not None or page is not None):
        raise InputError(f"{'--export-view' if view is not None else '--page'} shows one sentence; give it as TEXT, not -")
    if not pictures and page is None:
        return None
    from attn_cli.io.export import Exports, check_export

    check_export(svg, "svg", force)  # before any work, so nothing is computed in vain
    check_export(html, "html", force)
    check_export(page, "page", force)
    return Exports(svg, html, width, colors, view, page, sentence=text, force=force, colors_typed=typed("colors"))


def typed(parameter: str) -> bool:
    """The option was given on the command line (not left to its default)."""
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    return ctx is not None and ctx.get_parameter_source(parameter) == ParameterSource.COMMANDLINE


def open_glove(run, head, seed, vectors_path, limit, trust_pickle, sense, sense_set, *, focus, neighbors, output, stream: bool, page: bool = False):
    """The lesson's model: the word vectors and the heads, and what each sentence reports (checked before any sentence)."""
    from attn_cli.analysis.inspect import InspectSettings
    from attn_cli.heads.registry import resolve_heads
    from attn_cli.io.memory import check_max_tokens
    from attn_cli.models.glove import GloveModel, stored_matrices

    if sense and sense_set:
        raise InputError("--sense and --sense-set exclude each other")
    adhoc, table, table_name = None, None, ""
    if sense or sense_set:
        from attn_cli.analysis import senses

        adhoc = senses.parse_sense_options(sense) if sense else None
    vectors = load_vectors(vectors_path, limit, trust_pickle)
    if adhoc:
        senses.check_probes(adhoc, vectors, "--sense")
    if sense_set:
        table, table_name = senses.resolve_sense_set(sense_set)
    if table is not None:
        senses.check_sense_set(table, vectors, table_name)
    heads, note = resolve_heads(head, vectors.vector_size, seed)
    if note:
        say(note)
    noise = [h.name for h in heads if h.noise]
    if output is not Format.table and noise:
        say(f"untrained random weights in {', '.join(noise)}: their pattern is noise")
    what = f"{len(heads)} head{'s' if len(heads) != 1 else ''}"
    check_max_tokens(run.max_tokens, stored_matrices(len(heads), run), what)
    if stream:
        vectors.key_to_index  # many sentences: build the key index once, not a scan per sentence
    # Nearest keys: 3 by default in JSON and the page, in the view when --neighbors asks for them; --neighbors 0 skips the search.
    # The tidy CSV/TSV rows hold the attention only (one row per query and key), so there the search is not made.
    k = 0 if (output in (Format.csv, Format.tsv) or (output is Format.table and neighbors is None)) and not page else DEFAULT_NEIGHBORS if neighbors is None else neighbors
    settings = InspectSettings(focus=focus, neighbors=k, stage=run.stage.value if run.stage else None, embeddings=run.embeddings,
                               senses=(adhoc, table, table_name) if adhoc or table is not None else None,
                               matrices=(stored_matrices(len(heads), run), what))
    return GloveModel(vectors, heads, run), settings


def checkpoint_senses(sense, sense_set, focus) -> tuple | None:
    """(ad-hoc senses, sense set, its name) for a checkpoint's meter, checked before the model is read; None without one."""
    if not (sense or sense_set):
        return None
    from attn_cli.analysis import senses

    if sense and sense_set:
        raise InputError("--sense and --sense-set exclude each other")
    if sense and focus is None:
        raise InputError("--sense with --model measures one word: name it with --focus WORD")
    if sense:
        return senses.parse_sense_options(sense), None, ""
    return (None, *senses.resolve_sense_set(sense_set))


def open_checkpoint(spec: str, heads, layer, *, words, hide_special, focus, neighbors, stage, output, weigh="weight", rollout=False, senses=None,
                    max_memory: str | None = None, exports: bool = False, ablate=(None, "zero"), steer=((), None, None)):
    """`inspect --model`: the checkpoint, and what each sentence reports (a bad --head is an error before any sentence)."""
    from attn_cli.analysis.flow import layer_range
    from attn_cli.analysis.inspect import InspectSettings, parse_heads
    from attn_cli.cli.options import steer_span
    from attn_cli.io.control_vector import steer_edits
    from attn_cli.models.loading import load

    steers, steer_layer, steer_layers = steer  # --steer's values, --steer-layer, --steer-layers
    span = steer_span(steers, steer_layer, steer_layers)  # a bad scale or span is refused before the model is read
    model = load(spec)
    rollout = layer_range(rollout, model.n_layers) if isinstance(rollout, str) else rollout  # --rollout-layers A:B: (A, B)
    chosen = list(heads or [])
    if layer is not None:
        chosen.append(str(layer))
    selected = parse_heads(chosen, model.n_layers, model.n_heads)
    from attn_cli.models.footprint import parse_size

    settings = InspectSettings(heads=chosen or None, words=words, hide_special=hide_special, focus=focus, weigh=weigh, rollout=rollout,
                               neighbors=DEFAULT_NEIGHBORS if neighbors is None else neighbors, stage=stage.value if stage else None, senses=senses,
                               max_memory=None if max_memory is None else parse_size(max_memory), json=output is not Format.table,
                               exports=exports)
    if ablate[0]:
        from attn_cli.analysis.ablate import parse_ablation

        parse_ablation(*ablate, model)  # a head that does not exist: an error before any sentence
        settings.ablate, settings.ablate_with = ablate
    settings.steer, settings.steered = steer_edits(model, list(steers), span)
    return model, settings
