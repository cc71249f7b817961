"""`attn compare`: two runs of a decoder side by side, two texts or one text with and without --steer."""

from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import SteerLayerOpt, SteerLayersOpt, SteerOpt, ThreadsOpt, page_file, parse_head, steer_span
from attn_cli.errors import InputError

MAX_TOP = 100


@app.command("compare", cls=RowsCommand, epilog=examples(
    'attn compare "The cat sat" "The cats sat" --model m.gguf',
    'attn compare "I saw a" --steer plural.gguf:0.05 --model m.gguf -n 16',
    'attn compare "a cat sat" "a dog sat" --model m.gguf --head 3.1 --page c.html',
))
def compare(
    a: Annotated[str, typer.Argument(metavar="A", help="The first run's text.", show_default=False)],
    b: Annotated[str | None, typer.Argument(metavar="B", help="The second run's text (default: A again, which --steer then steers).", show_default=False)] = None,
    model: Annotated[str, typer.Option("--model", metavar="PATH|NAME", help="A decoder: a Hugging Face folder, a .gguf file, ollama:NAME[:TAG], or a name in the local Hugging Face cache (never downloaded).", show_default=False)] = ...,
    steer: SteerOpt = None,
    steer_layer: SteerLayerOpt = None,
    steer_layers: SteerLayersOpt = None,
    head: Annotated[str | None, typer.Option("--head", metavar="L.H", help="Also this head's attention map in both runs, and their difference.", show_default=False)] = None,
    generate: Annotated[int, typer.Option("--generate", "-n", metavar="N", min=0, help="Also each run's greedy continuation of N tokens, side by side, and where they part.")] = 0,
    top: Annotated[int, typer.Option("--top", metavar="K", min=1, max=MAX_TOP, help="Tokens listed: each run's most probable, and those that rose and fell most.")] = 5,
    chat: Annotated[bool, typer.Option("--chat", help="Wrap both texts in the model's own chat template first.")] = False,
    page: Annotated[Path | None, typer.Option("--page", metavar="FILE", parser=page_file, help="Also write an offline page: both texts, the cosines layer by layer, the tokens that moved, the head's maps (hover a cell to see what it is).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE of --page if it exists (a regular file only).")] = False,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Two runs side by side: two texts, or one text with and without --steer (which steers run B).

    Per layer, the cosine of the two residual streams at aligned positions (by token, or by word when
    the token counts differ), beside the cosine of A's stream with its own next position: how alike
    two different tokens are. Then the next-token distributions: KL divergence, each run's top tokens,
    and those that rose and fell most.
    """
    from attn_cli.analysis.compare import CompareSettings, compare as run
    from attn_cli.io import writers
    from attn_cli.io.control_vector import steer_edits, steering_blamed
    from attn_cli.io.files import check_text
    from attn_cli.models.loading import load

    a = check_text(a, "A")
    span = steer_span(steer, steer_layer, steer_layers)
    b = a if b is None else check_text(b, "B")
    if b == a and not steer:
        raise InputError('give a second text B, or --steer FILE[:SCALE] (or "POS|NEG") to compare A with itself steered')
    layer_head = parse_head(head) if head is not None else None
    if page is not None:
        from attn_cli.io.atomic import check_writable

        check_writable(page, force)
    chosen = load(model)
    edits, steered = steer_edits(chosen, steer or [], span)
    with steering_blamed(steered):
        result = run(chosen, a, b, CompareSettings(top=top, head=layer_head, steps=generate, chat=chat, steer=edits, steered=steered))
    writers.write(result, output, "compare_view")
    if page is not None:
        from attn_cli.cli.app import say
        from attn_cli.io.grid_page import compare_page, write_page

        say(write_page(page, compare_page(result), force=force))
