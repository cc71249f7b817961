"""`attn softmax`: scores become weights, on numbers given as arguments or on stdin.

A module of its own: `attn softmax` reads only this one of the command modules, and nothing
about word vectors.
"""

import math
import re
from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.errors import MAX_NAMED, InputError, short
from attn_cli.io.writers import write

SEPARATORS = re.compile(r"\s*,\s*|\s+")  # a comma (spaces around it allowed), or a run of spaces and new lines
INFINITY = re.compile(r"[+-]?inf(inity)?", re.IGNORECASE)


def split_numbers(text: str) -> list[str]:
    """The fields of a list of numbers; every comma separates two fields, so ",," holds an empty one."""
    text = text.strip()
    return SEPARATORS.split(text) if text else []


def is_numbers(text: str) -> bool:
    """Whether the text is one or more numbers (as in "-1", "-inf" or "-1,2")."""
    try:
        parts = [float(t) for t in split_numbers(text)]
    except ValueError:
        return False
    return bool(parts)


class NumbersCommand(RowsCommand):
    """Lets negative numbers stand as arguments (`attn softmax -1 2`) while options such as -t still work.

    Before Click parses, every argument that reads as a number (and is not the value of an
    option) is moved after a `--`, in order, so Click never takes "-1" or "-inf" for an option.
    (`--json` and the other format flags are then read as --format, as in every command.)
    """

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        takes_value = {
            name
            for p in self.params
            if p.param_type_name == "option" and not getattr(p, "is_flag", False)
            for name in p.opts + p.secondary_opts
        }
        options, positional = [], []
        rest = iter(args)
        for arg in rest:
            if arg == "--":
                positional.extend(rest)
            elif arg == "-" or not arg.startswith("-") or is_numbers(arg):
                positional.append(arg)
            else:
                options.append(arg)
                value = next(rest, None) if arg in takes_value else None
                if value is not None:
                    options.append(value)
        return super().parse_args(ctx, [*options, "--", *positional])


def parse_number(text: str, where: str) -> float:
    """One value: a float64, or +-inf spelled out. NaN, a blank, or a finite number too large for
    float64 (which float() would quietly turn into inf) are errors naming the input."""
    if not text:
        raise InputError(f"an empty value ({where}): numbers are separated by spaces, new lines or single commas")
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"not a number: {short(text)} ({where})") from None
    if math.isnan(value):
        raise InputError(f"NaN has no place in a distribution: {text!r} ({where})")
    if math.isinf(value) and not INFINITY.fullmatch(text.strip()):
        raise InputError(f"{short(text)} is beyond float64's range (|x| <= 1.8e308) ({where}); write inf for infinity")
    return value


def read_numbers(args: list[str]) -> list[float]:
    """Numbers from the arguments; `-` reads stdin. Both may separate numbers by spaces or commas."""
    if args.count("-") > 1:
        raise InputError("'-' is given twice; standard input can be read only once")
    items: list[tuple[str, str]] = []  # (text, where it came from)
    for i, arg in enumerate(args, 1):
        where = "stdin" if arg == "-" else f"argument {i}"
        text = arg if arg.isascii() and arg != "-" else text_of(arg, where)
        if arg != "-" and not text.strip():
            raise InputError(f"argument {i} is blank: {text!r}; give a number")
        items += [(t, where) for t in split_numbers(text)]
    if not items:
        raise InputError("no numbers given: pass them as arguments, or '-' to read them from stdin")
    values = [parse_number(text, where) for text, where in items]
    if all(v == -math.inf for v in values):
        listed = ", ".join(t for t, _ in items[:MAX_NAMED]) + (", ..." if len(items) > MAX_NAMED else "")
        raise InputError(f"every value is -inf ({listed}): exp sums to 0, there is no distribution")
    return values


def text_of(arg: str, where: str) -> str:
    """stdin's text for '-', else the argument, checked for bytes that were not UTF-8 (ASCII needs no check)."""
    from attn_cli.io.files import check_text, stdin_text

    return stdin_text(where) if arg == "-" else check_text(arg, where)


@app.command("softmax", cls=NumbersCommand, epilog=examples("attn softmax 2 1 0.1", "attn softmax 2 1 0.1 -t 0.5 --log", "echo 3,1,-inf | attn softmax -"))
def softmax_command(
    numbers: Annotated[
        list[str] | None,
        typer.Argument(metavar="NUMBER", help="Numbers (negative ones too: -1, -inf), or '-' to read them from stdin.", show_default=False),
    ] = None,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature", "-t", help="Divide the values by T first: low T sharper, high T flatter. T = 0 is the limit: argmax (ties share)."
        ),
    ] = 1.0,
    log: Annotated[bool, typer.Option("--log", help="Also show log-softmax, computed stably (not log of a rounded probability).")] = False,
    output: FormatOpt = Format.table,
) -> None:
    """Softmax: exponentiate each value (after subtracting the max), divide by the sum."""
    if not math.isfinite(temperature) or temperature < 0:
        raise InputError(f"--temperature must be a finite number >= 0, not {temperature:g}")
    from attn_cli.lesson import softmax as lesson

    result = lesson.softmax_result(read_numbers(numbers or []), temperature, log)
    write(result, output, "softmax_view")
