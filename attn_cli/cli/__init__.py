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
    "model": "model", "vectors": "vectors", "senses": "senses", "tokens": "tokens", "explain": "explain", "generate": "generate",
    "patch": "patch", "direction": "direction", "compare": "compare", "circuit": "circuit",
}  # fmt: skip
ALL_MODULES = ("heads", "inspect", "senses", "predict", "explain", "patch", "direction", "compare", "circuit", "generate", "tokens", "softmax", "analogy", "similarity", "model",
               "vectors")  # the order `attn --help` lists them in
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


class ClosedStdout(io.TextIOBase):
    """Standard output when attn was started with it closed: writing fails as into a closed file descriptor."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


def discard_stdout() -> None:
    """Point standard output at /dev/null, so that what is left in its buffer does not fail a second
    time when Python flushes it at exit ("Exception ignored in: <stdout>", exit 120)."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # no descriptor (ClosedStdout, a test's buffer): nothing can fail at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def write_failure(e: OSError) -> str:
    """Why the command stopped on an OSError, as one line: the file it names, else standard output."""
    from attn_cli.io.files import shown_path

    why = e.strerror or (os.strerror(e.errno) if e.errno else str(e))
    if e.filename is None:
        return f"cannot write to standard output ({why})"
    return f"{shown_path(e.filename)}: {why}"


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
            sys.stdout.flush()  # so a full disk or a closed pipe shows up here, not at interpreter exit
    except OSError as e:
        from attn_cli.cli.app import interruption, say

        if (stop := interruption(e)) is not None:  # a write that failed as Ctrl-C stopped the command
            raise stop from None
        # A reader that went away (`| head`) stops the command quietly, as Click does. Anything else (a
        # closed stdout, a full disk, a file name too long) says why, on one line, as coreutils do.
        if e.errno != errno.EPIPE:
            say(write_failure(e))
        discard_stdout()
        sys.exit(1)
