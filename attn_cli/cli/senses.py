"""`attn senses eval`: the sense meter of a real model over a file of cases."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import ModelOpt, ThreadsOpt
from attn_cli.errors import InputError
from attn_cli.io.writers import check_format, write

senses_app = typer.Typer(help="Measure how a real model's layers tell the senses of ambiguous words apart: the sense meter over a file of cases.",
                         no_args_is_help=True)
app.add_typer(senses_app, name="senses")


class Templates(str, Enum):
    full = "full"  # 3 short templates and 4 carrier sentences: the method
    short = "short"  # the 3 short templates alone: its baseline


@contextmanager
def pass_progress() -> Iterator[Callable[[int, int | None], None] | None]:
    """A bar over the forward passes on stderr, drawn only on a terminal."""
    from attn_cli.io.console import progress_bars

    with progress_bars() as bars:
        if bars is None:
            yield None
            return
        task = bars.add_task("forward passes", total=None)

        def advance(k: int, total: int | None) -> None:
            if total is not None:
                bars.update(task, total=total)
            bars.advance(task, k)

        yield advance


@senses_app.command("eval", cls=RowsCommand, epilog=examples(
    "attn senses eval cases.tsv --model ./all-MiniLM-L6-v2",
    "attn senses eval senses.tsv --sense-set words.tsv --model M --json",
    "attn senses eval cases.tsv --model SmolLM2.Q4_1.gguf --csv",
))
def evaluate(
    cases: Annotated[
        Path,
        typer.Argument(metavar="CASES", help="Sense cases (sentence<TAB>word<TAB>sense[<TAB>before|after], with --sense-set), or sentence<TAB>word<TAB>intended sense's probe words<TAB>other sense's probe words; - reads stdin.", show_default=False),
    ],
    model: ModelOpt = None,
    sense_set: Annotated[
        str | None,
        typer.Option("--sense-set", metavar="NAME|FILE", help="Each word's senses and probe words for sense cases: a shipped set (lesson) or a TSV word<TAB>sense<TAB>probe words.", show_default=False),
    ] = None,
    templates: Annotated[Templates, typer.Option("--templates", help="full: 3 short templates and 4 carrier sentences (the method); short: the 3 short ones (its baseline).")] = Templates.full,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Resolution per layer: the share of cases whose word is nearest its intended sense, beside the word alone and the context masked.

    Each share has a Wilson 95% interval. A decoder scores only the cases whose context comes
    before the word (it does not see what follows).
    """
    from attn_cli.analysis import meter_eval
    from attn_cli.analysis.senses import resolve_sense_set
    from attn_cli.io.files import input_name
    from attn_cli.models.loading import load
    from attn_cli.results import SensesEval

    if model is None:
        raise InputError("senses eval needs --model PATH|NAME (the lesson's heads over word vectors: attn heads eval)")
    check_format(output, SensesEval)
    table, table_name = resolve_sense_set(sense_set) if sense_set else (None, None)
    read = meter_eval.read_cases(cases, table, table_name or "the sense set")
    chosen = load(model)
    if "context-senses" not in chosen.capabilities:
        raise InputError(f"{chosen.name} cannot run the sense meter: it has no layers to read a word through")
    with pass_progress() as progress:
        result = meter_eval.evaluate(chosen, read, input_name(cases), templates.value, table_name, progress)
    write(result, output, "senses_eval")
