"""`attn vectors info|convert`."""

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from typer._click.core import ParameterSource

from attn_cli.cli.app import AttnCommand, Format, FormatOpt, app, examples, say
from attn_cli.cli.options import ForceOpt, LimitOpt, TrustOpt, VectorsOpt, load_vectors
from attn_cli.io.writers import check_format, write
from attn_cli.results import VectorsConverted, VectorsInfo

vectors_app = typer.Typer(help="Inspect and convert word-vector files.", no_args_is_help=True)
app.add_typer(vectors_app, name="vectors")


def file_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size


def note_duplicates(vectors) -> None:
    """A fast folder's keys found more than once (other formats' readers say so as they load)."""
    from attn_cli.vectors.formats import duplicates_note

    if vectors.format == "attn" and (repeated := vectors.duplicate_keys()):
        say(duplicates_note(vectors.source, repeated))


@vectors_app.command("info", cls=AttnCommand, epilog=examples("attn vectors info", "attn vectors info glove.6B.50d.txt --limit 20000", "attn vectors info words.kv --trust-pickle --json"))
def info(
    ctx: typer.Context,
    path: Annotated[
        str | None,
        typer.Argument(help="Vectors file or folder (or give it as --vectors; default: $ATTN_VECTORS, else the shipped GloVe).", show_default=False),
    ] = None,
    vectors_path: VectorsOpt = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    output: FormatOpt = Format.table,
) -> None:
    """Format, number of keys, dimension, dtype, file size and load time of a vectors file."""
    from attn_cli.io.files import display_path
    from attn_cli.vectors.store import resolve_path

    typed = ctx.get_parameter_source("vectors_path") == ParameterSource.COMMANDLINE  # not from $ATTN_VECTORS
    if path is not None and typed and path != vectors_path:
        raise typer.BadParameter(f"two files given, {path!r} and --vectors {vectors_path!r}; give one", param_hint="PATH")
    path = path if path is not None else vectors_path  # --vectors (or $ATTN_VECTORS) as every other command takes it
    start = time.perf_counter()
    vectors = load_vectors(path, limit, trust_pickle)
    seconds = time.perf_counter() - start
    note_duplicates(vectors)
    where = resolve_path(path)
    result = VectorsInfo(
        path=display_path(where),
        format=vectors.format,
        keys=len(vectors),
        dimension=vectors.vector_size,
        dtype=str(vectors.vectors.dtype),
        file_bytes=file_bytes(where),
        load_seconds=seconds,
    )
    write(result, output, "vectors_info")


class ConversionProgress:
    """Reading and writing progress as transient bars on stderr (drawn only on a terminal)."""

    def __init__(self, bars, source: Path):
        from attn_cli.io.files import printable

        self.bars = bars
        self.size = source.stat().st_size if source.is_file() else None
        # No total until bytes are reported: formats gensim reads in one go show a pulsing bar.
        self.reading = bars.add_task(f"reading {printable(source.name)}", total=None)
        self.writing = None

    def on_bytes(self, done: int) -> None:
        self.bars.update(self.reading, total=self.size, completed=done)

    def on_rows(self, done: int, total: int) -> None:
        if self.writing is None:
            self.bars.update(self.reading, total=1, completed=1)
            self.writing = self.bars.add_task("writing rows", total=total)
        self.bars.update(self.writing, completed=done)


@contextmanager
def progress(source: Path) -> Iterator[ConversionProgress | None]:
    from attn_cli.io.console import progress_bars

    with progress_bars(speed=True) as bars:
        yield None if bars is None else ConversionProgress(bars, source)


@vectors_app.command("convert", cls=AttnCommand, epilog=examples("attn vectors convert glove.6B.50d.txt glove50", "attn vectors convert glove.6B.50d.txt glove50-20k --limit 20000 --json"))
def convert(
    src: Annotated[str, typer.Argument(metavar="PATH", help="Vectors in any supported format (see `attn vectors info`).", show_default=False)],
    dst: Annotated[Path, typer.Argument(metavar="FOLDER", help="The attn folder to write (vectors.npy + keys.txt).", show_default=False)],
    limit: LimitOpt = None,
    force: ForceOpt = False,
    trust_pickle: TrustOpt = False,
    output: FormatOpt = Format.table,
) -> None:
    """Write vectors as an attn folder, which later loads in milliseconds (memory-mapped)."""
    from attn_cli.vectors import fast as fast_format
    from attn_cli.io.files import display_path, printable, user_path

    check_format(output, VectorsConverted)
    source, destination = user_path(src, "PATH"), user_path(dst, "FOLDER")
    fast_format.check_destination(destination, force)  # before a long read, not after it
    start = time.perf_counter()
    with progress(source) as bars:
        done = fast_format.convert(
            source, destination, limit=limit, trust=trust_pickle, force=force,
            on_bytes=bars.on_bytes if bars else None, on_rows=bars.on_rows if bars else None,
        )  # fmt: skip
    for note in done.notes:
        say(note)
    result = VectorsConverted(
        source=display_path(source),
        source_format=done.format,
        destination=display_path(destination),
        keys=done.keys,  # a key found twice is written once
        dimension=done.dimension,
        dtype=done.dtype,
        file_bytes=file_bytes(destination),
        seconds=time.perf_counter() - start,
    )
    if output is not Format.table:
        write(result, output, None)
    else:  # the folder is the output; the table is one line on stderr
        sys.stderr.write(
            f"converted {result.keys:,} keys x {result.dimension} ({result.source_format} -> {result.dtype}) "
            f"in {result.seconds:.2f} s: {printable(result.destination)}\n"
        )
