"""`attn circuit L.H`: one head's QK circuit (what it looks for) and OV circuit (what it writes), read off its weights."""

from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import ThreadsOpt
from attn_cli.errors import InputError


@app.command("circuit", cls=RowsCommand, epilog=examples(
    "attn circuit 4.2 --model ./SmolLM2.Q4_1.gguf",
    'attn circuit 4.2 --model m.gguf --text "the cat sat on the mat" --distance 1',
    "attn circuit 4.2 --model m.gguf --tokens 300 --json",
))
def circuit(
    head: Annotated[str, typer.Argument(metavar="L.H", help="The head: LAYER.HEAD, from 0 (e.g. 4.2).", show_default=False)],
    model: Annotated[str, typer.Option("--model", metavar="PATH|NAME", help="A checkpoint: a Hugging Face folder, a .gguf file, ollama:NAME[:TAG], or a name in the local Hugging Face cache (never downloaded).", show_default=False)] = ...,
    text: Annotated[str | None, typer.Option("--text", metavar="TEXT", help="The token set is this text's tokens (each once, special ones left out). Default: the most frequent English words that are one token.", show_default=False)] = None,
    tokens: Annotated[int, typer.Option("--tokens", metavar="N", help="Without --text: how many of the most frequent words.")] = 100,
    distance: Annotated[int, typer.Option("--distance", metavar="D", help="RoPE: the query D positions after the key (0: no rotation).")] = 0,
    top: Annotated[int, typer.Option("--top", metavar="N", min=1, help="QK pairs and OV sources listed in the terminal (JSON has all).")] = 10,
    seed: Annotated[int, typer.Option("--seed", metavar="N", min=0, help="Seed of the random W_V, W_O of the baselines.")] = 0,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """What one head looks for (QK: W_Q W_K^T) and what it writes (OV: W_V W_O), read off its weights.

    QK: over a token set, the pairs of query token and key token the head scores highest, each
    token's embedding through the layer's input norm, at relative distance 0 or --distance D with
    RoPE's turn. OV: for each source token, the tokens it promotes most through W_V W_O, the final
    norm's weight and W_U; the copying score (the share of tokens that promote themselves first)
    and the eigenvalue positivity sum(λ)/sum(|λ|), each beside random W_V and W_O of the same shapes.
    """
    from attn_cli.analysis.circuit import CircuitSettings, circuit as run
    from attn_cli.analysis.compose import parse_head
    from attn_cli.io.files import check_text
    from attn_cli.io.writers import check_format, write
    from attn_cli.models.loading import load
    from attn_cli.results.circuit import CircuitResult

    check_format(output, CircuitResult)
    if distance < 0:
        raise InputError(f"--distance must be >= 0, not {distance}")
    if "." not in head:
        raise InputError(f"L.H {head!r}: give LAYER.HEAD, such as 3.1")
    if text is not None:
        check_text(text, "--text")
    chosen = load(model)
    layer, h = parse_head(head, chosen.spec, "head")
    write(run(chosen, layer, h, CircuitSettings(text=text, tokens=tokens, distance=distance, top=top, seed=seed)), output, "circuit_view")
