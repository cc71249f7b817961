"""Typer wiring: each module below adds its commands to the app; the work is done elsewhere.

`attn COMMAND` imports only the module of COMMAND (the others cost start-up time for nothing);
`from attn_cli.cli import app` gives the app with every command.
"""

import errno
import importlib
import io
import os
import sys

from attn_cli.cli.app import app as typer_app

COMMAND_MODULES = {
    "heads": "heads", "inspect": "inspect", "predict": "predict", "softmax": "softmax", "analogy": "analogy", "similarity": "similarity",
    "model": "model", "vectors": "vectors", "senses": "senses",
}  # fmt: skip
ALL_MODULES = ("heads", "inspect", "senses", "predict", "softmax", "analogy", "similarity", "model", "vectors")  # the order `attn --help` lists them in
globals().pop("app")  # the submodule, bound here by its import: `app` is the Typer app, from __getattr__ below


def import_commands(argv: list[str]) -> None:
    """Register the command argv names (its module alone), or every command (help, a misspelt command)."""
    name = argv[0] if argv else ""
    for module in [COMMAND_MODULES[name]] if name in COMMAND_MODULES else ALL_MODULES:
        importlib.import_module(f"attn_cli.cli.{module}")


def __getattr__(name: str):
    if name == "app":
        import_commands([])
        return typer_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

QUIET = (errno.EPIPE, errno.EBADF)  # the reader went away, or there never was one (`attn ... >&-`)


class ClosedStdout(io.TextIOBase):
    """Standard output when attn was started with it closed: writing fails as into a closed pipe."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def main() -> None:
    if sys.stdout is None:
        sys.stdout = ClosedStdout()
    elif isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.encoding.lower().replace("-", "") != "utf8":
        sys.stdout.reconfigure(encoding="utf-8")  # JSON is UTF-8, and so is every view, whatever the locale
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    import_commands(sys.argv[1:2])
    try:
        try:
            typer_app(prog_name="attn")
        finally:
            sys.stdout.flush()  # so a closed pipe shows up here, not at interpreter exit
    except OSError as e:
        if e.errno in QUIET:
            # Stop quietly with exit 1, as Click does when the pipe closes mid-command.
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError):
                sys.stdout = open(os.devnull, "w")
            sys.exit(1)
        # A full disk, a closed terminal, a file that vanished: say so, without a traceback.
        where = f"{e.filename}: " if e.filename else "cannot write the output: "
        sys.stderr.write(f"attn: {where}{e.strerror or e}\n")
        sys.exit(1)
