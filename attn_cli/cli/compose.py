"""`attn heads compose`: how every head composes with the heads of later layers (Q, K, V), from the weights alone."""

from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, examples
from attn_cli.cli.heads_group import heads_app
from attn_cli.cli.options import ModelOpt, ThreadsOpt
from attn_cli.errors import InputError


@heads_app.command("compose", cls=RowsCommand, epilog=examples(
    "attn heads compose --model SmolLM2.gguf",
    "attn heads compose --model SmolLM2.gguf --to 4.2 --mode k",
    "attn heads compose --model SmolLM2.gguf --json",
))
def compose(
    model: ModelOpt = None,
    to: Annotated[str | None, typer.Option("--to", metavar="L.H", help="The later head whose map of earlier heads is shown. Default: the later head of the pair with the highest score of --mode.", show_default=False)] = None,
    mode: Annotated[str, typer.Option("--mode", metavar="q|k|v", help="The map's mode: q (W_OV then W_QK), k (W_OV then W_QK^T, what an induction head does with a previous-token head), v (W_OV then W_OV).")] = "k",
    top: Annotated[int, typer.Option("--top", metavar="N", min=1, help="Pairs listed per mode in the terminal (JSON and CSV have all).")] = 10,
    seed: Annotated[int, typer.Option("--seed", metavar="N", min=0, help="Seed of the random heads of the baseline.")] = 0,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Q-, K- and V-composition of every head with every head of a later layer, as TransformerLens scores them.

    A score is ||W_OV M||_F / (||W_OV||_F ||M||_F): the earlier head's OV circuit followed by the
    later head's W_QK (Q), W_QK^T (K) or W_OV (V), with the norms' weights folded in as fold_ln
    does. Computed from factored matrices, never a d × d product per pair. Beside the scores: the
    same scores of random Gaussian heads of the model's shapes, their mean and spread.
    """
    from attn_cli.analysis.compose import composition
    from attn_cli.io.writers import write
    from attn_cli.models.loading import load
    from attn_cli.results.compose import CompositionResult
    from attn_cli.io.writers import check_format

    if model is None:
        raise InputError("heads compose needs --model PATH|NAME (a checkpoint: a Hugging Face folder, a .gguf file or ollama:NAME)")
    check_format(output, CompositionResult)
    result = composition(load(model), to=to, mode=mode, seed=seed, top=top)
    write(result, output, "compose_view")
