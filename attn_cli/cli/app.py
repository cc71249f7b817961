"""The Typer app, the options every command shares, and the one place errors become exit codes."""

from pathlib import Path
from typing import Annotated

import typer

from attn_cli import __version__
from attn_cli.errors import AttnError
from attn_cli.output import warn
from attn_cli.tokens import Oov


class AttnGroup(typer.core.TyperGroup):
    """Turns the library's exceptions into one line on stderr and the exception's exit code."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except AttnError as e:
            warn(str(e))
            raise typer.Exit(e.exit_code) from None


app = typer.Typer(
    cls=AttnGroup,
    name="attn",
    help="See how a transformer's attention works, over real word vectors.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"attn {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """See how a transformer's attention works, over real word vectors."""


# Options shared by every command that uses word vectors or prints data.
VectorsOpt = Annotated[
    str | None,
    typer.Option(
        "--vectors",
        envvar="ATTN_VECTORS",
        help="Word vectors: word2vec/GloVe text or binary, fastText .vec/.bin, or an attn folder. Default: the shipped GloVe 6B 50d.",
        show_default=False,
    ),
]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="Read only the first N keys.")]
TrustOpt = Annotated[
    bool, typer.Option("--trust-pickle", help="Allow gensim's .kv/.model files, which are pickles: only for files you trust.")
]
OovOpt = Annotated[Oov, typer.Option("--oov", help="Unknown words: error, skip them, or give them a zero vector.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]
JsonlOpt = Annotated[bool, typer.Option("--jsonl", help="Print one JSON object per line, as each input is done.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")]
HeadsOpt = Annotated[
    list[str] | None,
    typer.Option("--head", metavar="NAME|FILE", help="identity, random (random:D_K for another d_k), a shipped head's name, or a .npz file; repeat for several heads. Default: the shipped learned heads.", show_default=False),
]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", metavar="PATH|NAME", help="A BERT or GPT-2 checkpoint: a Hugging Face model folder, or a name in the local Hugging Face cache (never downloaded).", show_default=False),
]
SeedOpt = Annotated[int, typer.Option("--seed", metavar="N", help="Seed of the random head's weights.")]


def load_vectors(path: str | None, limit: int | None = None, trust: bool = False):
    from attn_cli.vectors import load

    return load(path, limit=limit, trust=trust)


def check_new_file(path: Path, force: bool) -> None:
    """Refuse to overwrite what the user owns unless asked to."""
    from attn_cli.errors import InputError

    if path.exists() and not force:
        raise InputError(f"{path} exists; pass --force to overwrite it")
