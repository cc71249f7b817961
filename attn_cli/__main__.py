"""`python -m attn_cli`, and the `attn` script (pyproject.toml: attn_cli.__main__:run)."""

import gc

START_GC_THRESHOLD = 50_000  # new objects between two collections of the youngest generation (Python's default: 700)


def run() -> None:
    """The command line: attn_cli.cli.main, with the cyclic garbage collector set for a short process.

    Starting a command is mostly imports (Typer, NumPy, Rich, attn's own modules): tens of thousands
    of objects that live as long as the process, which the collector would go over some fifty times
    at its default threshold before the command does anything (5-10 ms of every start). At this
    threshold it does not run during start-up, and a long run (`inspect -` over a large file,
    `heads train`) is still collected. Set here, before Typer is imported, and not on `import
    attn_cli`: a program that uses attn as a library keeps its own setting.
    """
    gc.set_threshold(START_GC_THRESHOLD, *gc.get_threshold()[1:])
    from attn_cli.cli import main

    main()


if __name__ == "__main__":
    run()
