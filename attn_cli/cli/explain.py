"""`attn explain`: why a decoder predicts a token, as the parts of the residual stream that wrote its logit."""

from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import AblateOpt, AblateWith, AblateWithOpt, ThreadsOpt, ablate_with_value, page_file


@app.command("explain", cls=RowsCommand, epilog=examples(
    'attn explain "The capital of France is" --model ./SmolLM2.Q4_1.gguf',
    'attn explain "Bob gave it to" --model m.gguf --target " Ann" --versus " Bob"',
    'attn explain "The capital of France is" --model ./m.gguf --json',
))
def explain(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The text whose next token is explained; - reads one per line from stdin.", show_default=False)],
    model: Annotated[str, typer.Option("--model", metavar="PATH|NAME", help="A decoder: a Hugging Face folder, a .gguf file, ollama:NAME[:TAG], a name in the local Hugging Face cache, or an installed Python package that ships a .gguf file (never downloaded).", show_default=False)],
    target: Annotated[str | None, typer.Option("--target", metavar="TOKEN", help="The token whose logit is split: a text that is one token, its leading space included (' Mary'), or id:N. Default: the top prediction.", show_default=False)] = None,
    versus: Annotated[str | None, typer.Option("--versus", metavar="TOKEN", help="Split the logit difference target − this token instead (one token, or id:N).", show_default=False)] = None,
    focus: Annotated[str | None, typer.Option("--focus", metavar="WORD|INDEX", help="Explain the prediction after this token instead of the last one (a word of several tokens: its last).", show_default=False)] = None,
    chat: Annotated[bool, typer.Option("--chat", help="Wrap the text in the model's own chat template as a user's message first.")] = False,
    ablate: AblateOpt = None,
    ablate_with: AblateWithOpt = AblateWith.zero,
    page: Annotated[Path | None, typer.Option("--page", metavar="FILE", parser=page_file, help="Also write an offline page: the text read, the largest parts, and the map of every head and MLP (hover a cell to see what it is).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE of --page if it exists (a regular file only).")] = False,
    max_memory: Annotated[str | None, typer.Option("--max-memory", metavar="SIZE", help="The memory the run may take (4G, 512M); default: most of what is available. A text that needs more is refused before its pass.", show_default=False)] = None,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Direct logit attribution: the target's logit split exactly into the embeddings, every head, every MLP and the biases.

    The residual stream after the last layer is a sum of what each part wrote into it; with the
    final norm's scale frozen there, each part's share of the logit is its own dot product with
    the token's row of the output matrix, and the shares add up to the model's logit. The lesson's
    "dot products as alignment", read backwards from the answer.
    """
    from attn_cli.analysis.explain import ExplainSettings, explain as run
    from attn_cli.cli.emit import emit, line_text, stdin_lines
    from attn_cli.io.files import check_text
    from attn_cli.models.loading import load

    if page is not None:
        from attn_cli.errors import InputError
        from attn_cli.io.atomic import check_writable

        if text == "-":
            raise InputError("--page shows one text; give it as TEXT, not -")
        check_writable(page, force)
    ablate_with = ablate_with_value(ablate, ablate_with)  # a str from here
    from attn_cli.models.footprint import parse_size

    limit = None if max_memory is None else parse_size(max_memory)
    lines = stdin_lines() if text == "-" else iter([(1, check_text(text, "TEXT"))])
    chosen = load(model)
    settings = ExplainSettings(target=target, versus=versus, focus=focus, chat=chat, ablate=ablate, ablate_with=ablate_with)

    def view(result, line: int) -> list:
        from attn_cli.views.explain import explain_view

        return explain_view(result)

    results = []

    def compute(line):
        check_footprint(chosen, line_text(line), chat, limit, page is not None)
        results.append(run(chosen, line_text(line), settings))
        return results[-1]

    emit(lines, compute, view, single=text != "-", output=output, exports=None, options=None)
    if page is not None:
        from attn_cli.io.grid_page import explain_page, write_page

        from attn_cli.cli.app import say

        say(write_page(page, explain_page(results[0]), force=force))


def check_footprint(model, text: str, chat: bool, max_memory: int | None, page: bool) -> None:
    """Refuse, before the pass, a text whose explanation would not fit (models.footprint): one pass keeping one position,
    one row of logits read block by block, and the page's map (a cell a head and an MLP of each layer)."""
    from attn_cli.models import footprint

    cells = model.n_layers * (model.n_heads + 1) if page else 0

    def need(n: int):
        estimate = footprint.estimate(model, n, logits_rows=0)
        estimate.parts["page"] = footprint.PAGE_MAP_CELL * cells
        return estimate

    footprint.check(model, len(model.tokenize(text, chat=chat).ids), need, "explain", max_memory)
