"""Progress of long work (the layers of a forward pass, the patches of `attn patch`), told to whoever listens: the
CLI draws it on stderr (io.console.reporting), on a terminal only. Only the outermost piece of work is told: the
passes inside a patch run advance its patches, not bars of their own."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

listener: Callable | None = None  # (what, total) -> a context manager of advance(k): set by the CLI while a command runs
_open = 0  # pieces of work under way: only the outermost is told


def _nothing(k: int = 1) -> None:
    pass


@contextmanager
def steps(what: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """advance(k=1) over `total` steps of `what`: told to the listener when this is the outermost work, else nothing."""
    global _open
    tell = listener if _open == 0 else None
    _open += 1
    try:
        if tell is None:
            yield _nothing
        else:
            with tell(what, total) as advance:
                yield advance
    finally:
        _open -= 1
