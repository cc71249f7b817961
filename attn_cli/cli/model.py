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
    verify: Annotated[bool, typer.Option("--verify", help="For ollama:NAME, also check the blob's sha256 against the manifest's digest (reads the whole file; its size is always checked).")] = False,
    output: FormatOpt = Format.table,
) -> None:
    """Architecture, layers, heads, d_model, d_k, vocabulary and parameters: the lesson's arithmetic on a real model."""
    import dataclasses

    from attn_cli.analysis.info import model_info
    from attn_cli.models.loading import load
    from attn_cli.models.sources import ollama

    checked = None
    if ollama.is_ollama(model):
        ollama.resolve(model, verify=verify)
        checked = ollama.CHECKED[verify]
    elif verify:
        from attn_cli.errors import InputError

        raise InputError("--verify checks an Ollama blob against its manifest: give --model ollama:NAME[:TAG]")
    result = dataclasses.replace(model_info(load(model)), checked=checked)
    write(result, output, "model_info")
