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

    When the command is done, every object is frozen (gc.freeze): Python's exit would otherwise go
    over all of them once more looking for cycles (~18 ms after `inspect`), for memory the process
    is about to give back whole. attn's files are closed by then (each with its own `with`), and
    objects no longer referenced are still freed as modules are cleared; only reference cycles are
    left to the end of the process.
    """
    gc.set_threshold(START_GC_THRESHOLD, *gc.get_threshold()[1:])
    from attn_cli.cli import main

    try:
        main()
    finally:
        gc.freeze()


if __name__ == "__main__":
    run()
