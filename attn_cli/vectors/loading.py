"""Word vectors from any file or folder: the fast format (attn_cli.vectors.store) or a foreign one (attn_cli.vectors.formats)."""

import os

from attn_cli.errors import DataError, InputError
from attn_cli.vectors.store import ENV_VAR, Vectors, fast_folder, load_fast, resolve_path


def load(path: str | os.PathLike | None = None, *, limit: int | None = None, trust: bool = False) -> Vectors:
    """Load vectors in any supported format (see `attn_cli.formats.detect_format`).

    `limit` keeps only the first N keys; `trust` allows gensim's pickled .kv/.model files.
    """
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, not {limit}")
    where = resolve_path(path)
    folder = fast_folder(where)
    if folder is not None:
        return load_fast(folder, limit)
    if not where.exists():
        hint = "" if path else f" (set {ENV_VAR} or pass --vectors)"
        raise DataError(f"{where}: no such file or folder{hint}")
    from attn_cli.vectors import formats  # gensim and the text parsers, read only for a foreign file

    return formats.load_foreign(where, limit=limit, trust=trust)
