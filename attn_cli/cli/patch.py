"""`attn patch`: activation patching, which part of a prompt made the difference between two prompts."""

from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import ThreadsOpt, page_file


@app.command("patch", cls=RowsCommand, epilog=examples(
    'attn patch "Jo met" "Al met" --model m.gguf --target " Al" --versus " Jo"',
    'attn patch CLEAN CORRUPT --model m.gguf --target " A" --versus " B" --json',
))
def patch(
    clean: Annotated[str, typer.Argument(metavar="CLEAN", help="The text whose activations are put back.", show_default=False)],
    corrupt: Annotated[str, typer.Argument(metavar="CORRUPT", help="The text they are put into: as many tokens as CLEAN, a word or two different.", show_default=False)],
    model: Annotated[str, typer.Option("--model", metavar="PATH|NAME", help="A decoder (or a masked LM, with [MASK] in both texts): a folder, a .gguf file, ollama:NAME[:TAG], or a name in the local Hugging Face cache.", show_default=False)],
    target: Annotated[str, typer.Option("--target", metavar="TOKEN", help="The metric is the logit of this token (one token, its leading space included, or id:N) ...", show_default=False)],
    versus: Annotated[str, typer.Option("--versus", metavar="TOKEN", help="... less the logit of this one, at the last position.", show_default=False)],
    chat: Annotated[bool, typer.Option("--chat", help="Wrap both texts in the model's own chat template first.")] = False,
    page: Annotated[Path | None, typer.Option("--page", metavar="FILE", parser=page_file, help="Also write an offline page: the two texts and the maps (hover a cell to see what it is).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE of --page if it exists (a regular file only).")] = False,
    max_memory: Annotated[str | None, typer.Option("--max-memory", metavar="SIZE", help="The memory the run may take (4G, 512M); default: most of what is available. A run that needs more is refused before it starts.", show_default=False)] = None,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Activation patching: run CORRUPT with one activation put back from CLEAN, for every layer and position and every head.

    The metric is the logit difference TARGET − VERSUS at the last position. (a) The residual
    stream entering each layer at each position, and (b) each head's output at every position, are
    put back one at a time; the maps show how much of the clean difference each gives back.
    """
    from attn_cli.analysis.patch import PatchSettings, patch as run
    from attn_cli.io import writers
    from attn_cli.io.files import check_text
    from attn_cli.models.loading import load

    clean, corrupt = check_text(clean, "CLEAN"), check_text(corrupt, "CORRUPT")
    if page is not None:
        from attn_cli.io.atomic import check_writable

        check_writable(page, force)
    from attn_cli.models.footprint import parse_size

    limit = None if max_memory is None else parse_size(max_memory)
    chosen = load(model)
    check_footprint(chosen, len(chosen.tokenize(clean, chat=chat).ids), limit, page is not None)
    result = run(chosen, clean, corrupt, PatchSettings(target, versus, chat))
    writers.write(result, output, "patch_view")
    if page is not None:
        from attn_cli.io.grid_page import patch_page, write_page

        from attn_cli.cli.app import say

        say(write_page(page, patch_page(result), force=force))


def check_footprint(model, n: int, max_memory: int | None, page: bool) -> None:
    """Refuse, before the first pass, a patching run that would not fit (models.footprint.patching)."""
    from attn_cli.analysis.patch import BATCH_BUDGET, HOLD_BYTES
    from attn_cli.models import footprint

    need = lambda k: footprint.patching(model, k, HOLD_BYTES, BATCH_BUDGET, page)  # noqa: E731
    footprint.check(model, n, need, "patch", max_memory)
