"""The Typer app, the options every command shares, and the one place errors become exit codes."""

import os
import sys
from typing import Annotated

import typer
from typer._click.exceptions import NoArgsIsHelpError, NoSuchOption, UsageError

from attn_cli import __version__
from attn_cli.io import writers
from attn_cli.errors import AttnError
from attn_cli.io.writers import Format

DEBUG_VAR = "ATTN_DEBUG"  # set it to see the traceback behind an "internal error"


def say(message: str) -> None:
    """One line on stderr, whatever the message holds (control characters are escaped)."""
    from attn_cli.io.files import printable

    sys.stderr.write(f"attn: {printable(message)}\n")


def notices(warnings) -> None:
    """Inside warnings.catch_warnings(): each attn_cli.errors.Notice said in one line, every time it is warned."""
    from attn_cli.errors import Notice

    shown = warnings.showwarning
    warnings.simplefilter("always", Notice)
    warnings.showwarning = lambda message, category, *rest: say(str(message)) if issubclass(category, Notice) else shown(message, category, *rest)


def usage_error(e: UsageError) -> None:
    """Click's usage error in the house style: the usage line, then one `attn: ...` line."""
    if e.ctx is not None:
        sys.stderr.write(e.ctx.get_usage().rstrip("\n") + "\n")
    message = e.format_message()
    if message[:2].istitle():  # "No such option" -> "no such option", but not "TEXT"
        message = message[0].lower() + message[1:]
    say(message.rstrip("."))


def examples(*lines: str) -> str:
    """An epilog of example commands, kept line by line (Click's \\b stops it re-wrapping them)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


START = """\
attn shows how a transformer's attention works, over real word vectors.

Three commands to start with:
  attn softmax 2 1 0.1                   scores become weights that sum to 1
  attn similarity cat dog                dot product and cosine of two words
  attn inspect "A fluffy blue creature roamed the verdant forest."
                                         attention heads over a sentence

attn --help lists every command; attn COMMAND --help shows its options and
examples. attn --install-completion adds tab completion to your shell.
"""

PLACEHOLDERS = {"int": "N", "integer": "N", "int range": "N", "integer range": "N", "float": "X", "float range": "X",
                "path": "FILE", "str": "TEXT", "string": "TEXT", "text": "TEXT"}


def click_metavar(self, ctx, *, usage: bool = False) -> str:
    """An argument's placeholder as Click writes it: NAME, [NAME] when optional, NAME... when repeated
    (Typer's own form, {NAME}, reads like a set)."""
    var = self.metavar or (self.name or "").upper()
    if self.nargs != 1 and not var.endswith("..."):
        var += "..."
    return f"[{var}]" if usage and not self.required and not var.startswith("[") else var


def tidy_help(command) -> None:
    """One look for every command's help: the whole first paragraph as its summary in the list of
    commands (Click would cut it at 45 characters), and placeholders in capitals (N, X, TEXT, FILE)
    or the choices themselves (causal|none) where a parameter names none of its own."""
    import types

    for sub in getattr(command, "commands", {}).values():
        if sub.help and not sub.short_help:
            sub.short_help = " ".join(sub.help.strip().split("\n\n")[0].split())
        tidy_help(sub)
    for param in command.params:
        if isinstance(param, typer.core.TyperArgument):
            param.make_metavar = types.MethodType(click_metavar, param)
        elif param.metavar is None and not getattr(param, "is_flag", False):
            choices = getattr(param.type, "choices", None)
            kind = getattr(param.type, "name", "text").lower()
            param.metavar = "|".join(str(getattr(c, "value", c)) for c in choices) if choices else PLACEHOLDERS.get(kind, "TEXT")


def interruption(e: BaseException | None) -> BaseException | None:
    """The Ctrl-C behind the exception `e`, if there is one (attn_cli.__main__.Interrupted, or a
    KeyboardInterrupt: what is neither an Exception nor an exit). Python wraps one raised as a class
    is made (on an import, in __set_name__) in a RuntimeError, and a reader may turn that into a
    message of its own: such an error is the interruption, not a failure to report."""
    for _ in range(100):  # a chain of causes is short; never loop on a cyclic one
        if e is None or not isinstance(e, (Exception, SystemExit, GeneratorExit)):
            return None if type(e).__name__ == "PanicException" else e  # a Rust panic (errors.is_panic) reported as an error
        e = e.__cause__ or e.__context__
    return None


def out_of_memory(e: OSError) -> bool:
    """An OSError that is memory running out while computing (an anonymous mapping refused: ENOMEM, no file named),
    not a failed write."""
    import errno

    return e.errno == errno.ENOMEM and e.filename is None


class AttnGroup(typer.core.TyperGroup):
    """Turns the library's exceptions into one line on stderr and the exception's exit code."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        tidy_help(self)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NoArgsIsHelpError as e:  # `attn` or `attn vectors` alone: the help, then what is missing
            e.show()
            say("missing command: pick one of the commands above")
            code = 2
        except UsageError as e:
            usage_error(e)
            code = 2
        except typer.TyperException as e:  # Click's other errors (a file it could not open)
            say(e.format_message())
            code = e.exit_code
        except typer.Abort:
            say("aborted")
            code = 1
        code = code if isinstance(code, int) else 0
        if not standalone_mode:
            return code
        sys.exit(code)

    def invoke(self, ctx):
        import warnings

        from attn_cli.io.console import reporting

        try:
            with warnings.catch_warnings(), reporting():  # NumPy's floating-point warnings: attn checks what it computes and says so in one line
                warnings.filterwarnings("ignore", r".*(overflow|invalid value|divide by zero|underflow) encountered", RuntimeWarning)
                notices(warnings)
                return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except Exception as e:
            if (stop := interruption(e)) is not None:
                raise stop from None  # Ctrl-C, wrapped on the way: attn_cli.__main__ says it
            if isinstance(e, AttnError):
                say(str(e))
                raise typer.Exit(e.exit_code) from None
            if isinstance(e, OSError) and not out_of_memory(e):
                raise  # attn_cli.cli.main says it, as it says a write that fails after the command
            if isinstance(e, (MemoryError, OSError)):
                say("not enough memory for this input; give it less (fewer tokens, a smaller --limit)")
                raise typer.Exit(1) from None
            if os.environ.get(DEBUG_VAR):  # a bug: one line, not a traceback
                raise
            say(f"internal error ({type(e).__name__}: {e}); please report it with the command that caused it ({DEBUG_VAR}=1 shows where)")
            raise typer.Exit(1) from None
        except BaseException as e:
            from attn_cli.errors import is_panic, reason

            if not is_panic(e):
                raise
            say(f"a compiled library failed on this input ({reason(e)}); the model's files are probably damaged")  # a Rust panic
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=AttnGroup,
    name="attn",
    help="See how a transformer's attention works, over real word vectors.",
    no_args_is_help=False,  # `attn` alone shows START
    invoke_without_command=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish (Typer's)
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"attn {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """See how a transformer's attention works, over real word vectors."""
    if ctx.invoked_subcommand is None:
        sys.stdout.write(START)


FORMAT_FLAGS = {f"--{f.value}": f for f in Format if f is not Format.table}  # --json is short for --format json
OUTPUT = "Output format"  # the help panel of --format and its shorthands
FormatOpt = Annotated[
    Format,
    typer.Option("--format", metavar="FORMAT", rich_help_panel=OUTPUT,
                 help=f"table (the view, for a person), {', '.join(f.value for f in Format if f is not Format.table)}; or one of the options below."),
]
HELP_PANELS: dict[str, dict[str, str]] = {}  # command name -> {parameter name: panel}, in the order the panels are shown

class AttnCommand(typer.core.TyperCommand):
    """A command whose output format is one option: `--json` (and `--jsonl`, `--csv`, `--tsv`) is
    read as `--format json` before Click parses."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        takes_value = {name for p in self.params if p.param_type_name == "option" and not getattr(p, "is_flag", False)
                       for name in p.opts + p.secondary_opts}
        out, picked, rest = [], [], iter(args)
        for arg in rest:
            if arg == "--":
                out += [arg, *rest]
            elif arg in FORMAT_FLAGS:
                picked.append(arg)
                out += ["--format", FORMAT_FLAGS[arg].value]
            else:
                out.append(arg)
                if arg in takes_value and (value := next(rest, None)) is not None:
                    out.append(value)
                if arg == "--format" or arg.startswith("--format="):
                    picked.append("--format")
        if len(set(picked)) > 1:
            raise UsageError(f"{' and '.join(dict.fromkeys(picked))} exclude each other: pick one output format", ctx)
        try:
            return super().parse_args(ctx, out)
        except NoSuchOption as e:
            from attn_cli.cli.help import suggestion  # read only when an option is mistyped

            raise NoSuchOption(e.option_name, message=suggestion(e.option_name, self.option_names()), ctx=ctx) from None

    def option_names(self) -> list[str]:
        """Every name an option answers to, the format shorthands (--json, ...) included."""
        return [name for p in self.params if p.param_type_name == "option" for name in p.opts + p.secondary_opts] + list(FORMAT_FLAGS)

    def format_options(self, ctx, formatter) -> None:
        from attn_cli.cli.help import format_options  # read only when help is shown

        format_options(self, ctx, formatter, HELP_PANELS.get(self.name, {}), FORMAT_FLAGS)


def _remember_spreadsheet(ctx, param, value: bool) -> None:
    ctx.meta["spreadsheet"] = value  # an option of no parameter of the command's function: RowsCommand.invoke reads it


class RowsCommand(AttnCommand):
    """A command whose output has a CSV/TSV form: it also takes --spreadsheet (attn_cli.io.writers)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.params.append(typer.core.TyperOption(
            param_decls=["--spreadsheet"], is_flag=True, default=False, expose_value=False,
            callback=_remember_spreadsheet,
            help="With --csv/--tsv: write a text cell that begins with =, +, -, @ or a tab after a ' so that a spreadsheet "
                 "shows it as text instead of running it as a formula (numbers are left as they are).",
        ))  # fmt: skip

    def invoke(self, ctx):
        asked = bool(ctx.meta.get("spreadsheet"))
        if asked and ctx.params.get("output") not in writers.DELIMITERS:
            raise UsageError("--spreadsheet applies to --csv and --tsv output", ctx)
        writers.formulas_as_text = asked
        try:
            return super().invoke(ctx)
        finally:
            writers.formulas_as_text = False
