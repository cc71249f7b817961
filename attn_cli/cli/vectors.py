"""`attn vectors info|convert`."""

import time
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import JsonOpt, LimitOpt, TrustOpt, app, load_vectors
from attn_cli.output import console, write_json
from attn_cli.results import VectorsInfo

vectors_app = typer.Typer(help="Inspect and convert word-vector files.", no_args_is_help=True)
app.add_typer(vectors_app, name="vectors")


def file_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size


@vectors_app.command("info")
def info(
    path: Annotated[
        str | None,
        typer.Argument(envvar="ATTN_VECTORS", help="Vectors file or folder (default: $ATTN_VECTORS, else the shipped GloVe).", show_default=False),
    ] = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    json: JsonOpt = False,
) -> None:
    """Format, number of keys, dimension, dtype, file size and load time of a vectors file."""
    from attn_cli.vectors import resolve_path

    start = time.perf_counter()
    vectors = load_vectors(path, limit, trust_pickle)
    seconds = time.perf_counter() - start
    where = resolve_path(path)
    result = VectorsInfo(
        path=str(where),
        format=vectors.format,
        keys=len(vectors),
        dimension=vectors.vector_size,
        dtype=str(vectors.vectors.dtype),
        file_bytes=file_bytes(where),
        load_seconds=seconds,
    )
    if json:
        write_json(result.to_dict())
    else:
        from attn_cli import render

        console().print(render.vectors_info(result))
