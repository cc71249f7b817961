"""Options shared by the commands that read word vectors, heads or files, and the helpers behind
them: a module apart from attn_cli.cli.app, so `attn softmax` reads none of it."""

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import say

VectorsOpt = Annotated[
    str | None,
    typer.Option(
        "--vectors",
        metavar="PATH",
        envvar="ATTN_VECTORS",
        help="Word vectors: word2vec/GloVe text or binary, fastText .vec/.bin, or an attn folder. Default: the shipped GloVe 6B 50d.",
        show_default=False,
    ),
]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="Read only the first N keys.")]
class AblateWith(str, Enum):
    """What takes an ablated head's output's place (analysis/ablate.py)."""

    zero = "zero"  # nothing: the head writes no update
    mean = "mean"  # its mean over the text's positions: what does not depend on the position stays


AblateOpt = Annotated[
    list[str] | None,
    typer.Option("--ablate", metavar="L.H", help="Turn off head H of layer L (repeat for more): its output before W_O replaced, and the run that follows shown.",
                 show_default=False),
]
AblateWithOpt = Annotated[AblateWith, typer.Option("--ablate-with", help="What replaces an ablated head's output: zeros, or its mean over the text's positions.")]


def ablate_with_value(ablate: list[str] | None, ablate_with: AblateWith) -> str:
    """--ablate-with's value; typed without --ablate it is refused, as it says what replaces the heads --ablate turns off."""
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context

    from attn_cli.errors import InputError

    ctx = get_current_context(silent=True)
    if not ablate and ctx is not None and ctx.get_parameter_source("ablate_with") == ParameterSource.COMMANDLINE:
        raise InputError(f"--ablate-with {ablate_with.value} says what replaces the heads --ablate turns off; give --ablate L.H too, or drop --ablate-with")
    return ablate_with.value
SteerOpt = Annotated[
    list[str] | None,
    typer.Option("--steer", metavar="FILE:SCALE", help="FILE.gguf[:SCALE]: add SCALE (default 1) × a llama.cpp control vector's direction.l to the stream leaving layer l, "
                 "at every position, where llama.cpp adds it (attn direction -o writes one); or \"POS|NEG\"[:SCALE], the direction of one "
                 "contrast pair found on the spot (as attn direction POS NEG). Repeat to add several.", show_default=False),
]
SteerLayerOpt = Annotated[
    int | None, typer.Option("--steer-layer", metavar="L", help="Add the --steer directions at layer L only (1 to the last: llama.cpp never steers layer 0).", show_default=False),
]
SteerLayersOpt = Annotated[
    str | None, typer.Option("--steer-layers", metavar="A:B", help="Add them at layers A to B only, both included, as llama.cpp's --control-vector-layer-range (A: to the last, :B from 1).", show_default=False),
]


def steer_span(steer: list[str] | None, layer: int | None, layers: str | None):
    """--steer-layer / --steer-layers, read before the model (io.control_vector.parse_layers); without --steer they are refused,
    and each --steer's scale is checked too."""
    from attn_cli.errors import InputError
    from attn_cli.io.control_vector import inline_pair, parse_layers, parse_steer

    if not steer and (layer is not None or layers is not None):
        raise InputError(f"{'--steer-layer' if layer is not None else '--steer-layers'} says where --steer adds its directions; give --steer too")
    for given in steer or []:
        inline_pair(parse_steer(given)[0])  # a bad scale or pair is refused before the model is read
    return parse_layers(layer, layers)


TrustOpt = Annotated[
    bool, typer.Option("--trust-pickle", help="Allow gensim's .kv/.model files, which are pickles: only for files you trust.")
]


def __getattr__(name: str):
    """OovOpt, made when a command that reads words first imports it: attn_cli.vectors.tokens (and the
    regular expressions it compiles) stays out of the start of commands that read no words."""
    if name == "OovOpt":
        from attn_cli.vectors.tokens import Oov

        opt = globals()[name] = Annotated[Oov, typer.Option("--oov", help="Unknown words: error, skip them, or give them a zero vector.")]
        return opt
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def completer(kind: str):
    """The shell completion of `kind` (heads, sense_sets, link_sets): attn_cli.cli.completion, read only when the shell asks."""

    def complete(incomplete: str) -> list[str]:
        from attn_cli.cli import completion

        return getattr(completion, kind)(incomplete)

    return complete


complete_heads, complete_sense_sets, complete_link_sets = completer("heads"), completer("sense_sets"), completer("link_sets")


ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")]
HeadsOpt = Annotated[
    list[str] | None,
    typer.Option("--head", metavar="NAME|FILE", autocompletion=complete_heads, help="identity, random (random:D_K for another d_k), a shipped head's name, or a .npz file; repeat for several heads. Default: the shipped learned heads.", show_default=False),
]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", metavar="PATH|NAME", help="A real checkpoint (BERT, GPT-2, Llama, Mistral, Qwen, Phi-3, Gemma): a Hugging Face folder, a .gguf file, ollama:NAME[:TAG], a name in the local Hugging Face cache, or an installed Python package that ships a .gguf file (never downloaded).", show_default=False),
]
SeedOpt = Annotated[int, typer.Option("--seed", metavar="N", min=0, help="Seed of the random head's weights.")]


def use_threads(ctx: typer.Context, param, value: str | None) -> int | None:
    """--threads N (or ATTN_THREADS): a whole number of BLAS threads, 1 or more, set for every forward pass (io.blas)."""
    from typer._click.core import ParameterSource
    from typer._click.exceptions import UsageError

    if value is None:
        return None
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        where = f"ATTN_THREADS={value}" if ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT else f"--threads {value}"
        raise UsageError(f"{where}: give a whole number of BLAS threads, 1 or more", ctx)
    from attn_cli.io import blas

    blas.choose(int(text))
    return int(text)


ThreadsOpt = Annotated[
    str | None,
    typer.Option("--threads", metavar="N", envvar="ATTN_THREADS", callback=use_threads,
                 help="BLAS threads for the model's passes. Default: 1 for a short text; for a long one, the cores idle when attn starts (on busy cores, more threads wait on each other and run several times slower).",
                 show_default=False),
]


def load_vectors(path: str | None, limit: int | None = None, trust: bool = False):
    from attn_cli.vectors.loading import load

    vectors = load(path, limit=limit, trust=trust)
    for note in vectors.notes:
        say(note)
    return vectors


def page_file(text: str) -> Path:
    """--page FILE (every command that writes a page: inspect, generate, explain, patch), read as given, before it
    is a Path: Path("") would be the current folder, and "-" a file named "-". A page is a file, never stdout."""
    from attn_cli.errors import InputError

    if text == "":
        raise InputError("--page '': give the page a file name, such as page.html")
    if text == "-":
        raise InputError("--page -: a page is written to a file, not to stdout; give it a file name, such as page.html")
    return Path(text)


def parse_head(text: str) -> tuple[int, int]:
    """--head L.H of generate and compare: (layer, head); the model checks they exist."""
    from attn_cli.errors import InputError

    try:
        layer, head = (int(x) for x in text.split("."))
    except ValueError:
        raise InputError(f"--head {text!r}: give LAYER.HEAD, such as 3.1") from None
    return layer, head


def check_new_file(path: Path, force: bool) -> Path:
    """Refuse to overwrite what the user owns unless asked to, and then only a regular file."""
    from attn_cli.io.atomic import check_writable

    return check_writable(path, force)
