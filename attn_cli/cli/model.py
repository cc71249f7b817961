"""`attn model info`."""

from typing import Annotated

import typer

from attn_cli.cli.app import AttnCommand, Format, FormatOpt, app, examples
from attn_cli.io.writers import write

model_app = typer.Typer(help="Real checkpoints (BERT, GPT-2, Llama, Mistral, Qwen, Phi-3, Gemma): sizes and parameter counts.", no_args_is_help=True)
app.add_typer(model_app, name="model")


@model_app.command("info", cls=AttnCommand, epilog=examples("attn model info bert-base-uncased", "attn model info ./my-gpt2-folder --json"))
def info(
    model: Annotated[str, typer.Argument(metavar="PATH|NAME", help="A Hugging Face model folder, a .gguf file, ollama:NAME[:TAG], or a name in the local Hugging Face cache.", show_default=False)],
    output: FormatOpt = Format.table,
) -> None:
    """Architecture, layers, heads, d_model, d_k, vocabulary and parameters: the lesson's arithmetic on a real model."""
    from attn_cli.analysis.info import model_info
    from attn_cli.models.loading import load

    result = model_info(load(model))
    write(result, output, "model_info")
