"""Typer wiring: each module below adds its commands to `app`; the work is done elsewhere."""

import errno
import io
import os
import sys

from attn_cli.cli import heads, inspect, lesson, model, vectors  # noqa: F401  (each registers its commands)
from attn_cli.cli.app import app

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
    try:
        try:
            app(prog_name="attn")
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
