"""Typer wiring: each module below adds its commands to `app`; the work is done elsewhere."""

import os
import sys

from attn_cli.cli import heads, inspect, lesson, model, vectors  # noqa: F401  (each registers its commands)
from attn_cli.cli.app import app


def main() -> None:
    try:
        try:
            app(prog_name="attn")
        finally:
            sys.stdout.flush()  # so a closed pipe shows up here, not at interpreter exit
    except BrokenPipeError:
        # The reader went away (`attn ... | head -1`): stop quietly with exit 1, as Click does
        # when the pipe closes mid-command.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except OSError as e:  # a full disk, a closed terminal: say so, without a traceback
        sys.stderr.write(f"attn: cannot write the output: {e.strerror or e}\n")
        sys.exit(1)
