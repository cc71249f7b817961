"""Word vectors: the project's fast format, the default GloVe data, and where to find them.

The fast format is a folder holding `vectors.npy` (a [n_keys, d] float matrix, loaded
memory-mapped with allow_pickle=False) and `keys.txt` (one key per line, row order).
Other formats (word2vec, GloVe text, fastText) go through `attn_cli.formats`, which
imports gensim only when such a file is actually loaded.
"""

import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError, InputError

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
DEFAULT_VECTORS = DATA_DIR / "glove.6B.50d"
ENV_VAR = "ATTN_VECTORS"
FAST_FORMAT = "attn"
MATRIX_FILE = "vectors.npy"
KEYS_FILE = "keys.txt"


class Vectors:
    """Keys and their vectors, most frequent first; speaks gensim's KeyedVectors vocabulary.

    `oov_vector`, when given (fastText .bin), makes a vector for a word that is not a key.
    """

    def __init__(
        self,
        index_to_key: list[str],
        vectors: np.ndarray,  # [n_keys, d]
        *,
        source: str = "",
        format: str = FAST_FORMAT,
        oov_vector: Callable[[str], np.ndarray] | None = None,
    ):
        if vectors.ndim != 2 or vectors.shape[0] != len(index_to_key):
            raise DataError(f"{source}: {len(index_to_key)} keys but a matrix of shape {vectors.shape}")
        self.index_to_key = index_to_key
        self.vectors = vectors
        self.source = source
        self.format = format
        self.oov_vector = oov_vector

    @cached_property
    def key_to_index(self) -> dict[str, int]:
        return {key: i for i, key in enumerate(self.index_to_key)}

    @property
    def vector_size(self) -> int:
        return self.vectors.shape[1]

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, key: str) -> bool:
        return key in self.key_to_index

    def has_vector(self, word: str) -> bool:
        """A key, or a word the format can build a vector for (fastText subwords)."""
        return word in self.key_to_index or self.oov_vector is not None

    def get_vector(self, word: str) -> np.ndarray:  # -> [d] float64
        i = self.key_to_index.get(word)
        if i is not None:
            return np.asarray(self.vectors[i], dtype=np.float64)
        if self.oov_vector is not None:
            return np.asarray(self.oov_vector(word), dtype=np.float64)
        raise KeyError(word)

    @cached_property
    def unit(self) -> np.ndarray:  # [n_keys, d] float32, every row of norm 1 (0 rows stay 0)
        m = np.asarray(self.vectors, dtype=np.float32)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)

    def close_spelling(self, word: str) -> str | None:
        """The most frequent key one edit away from `word` (delete, swap, replace, insert)."""
        letters = "abcdefghijklmnopqrstuvwxyz-'"
        splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
        edits = {a + b[1:] for a, b in splits if b}
        edits |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
        edits |= {a + c + b[1:] for a, b in splits if b for c in letters}
        edits |= {a + c + b for a, b in splits for c in letters}
        edits.discard(word)
        known = [(self.key_to_index[e], e) for e in edits if e in self.key_to_index]
        return min(known)[1] if known else None


def resolve_path(path: str | os.PathLike | None) -> Path:
    """The vectors to use: the given path, else $ATTN_VECTORS, else the shipped GloVe data."""
    if path is None or str(path) == "":
        path = os.environ.get(ENV_VAR) or DEFAULT_VECTORS
    return Path(path).expanduser()


def fast_folder(path: Path) -> Path | None:
    """The fast-format folder `path` names (the folder, or its vectors.npy), else None."""
    if path.is_dir() and (path / MATRIX_FILE).is_file():
        return path
    if path.name == MATRIX_FILE and (path.parent / KEYS_FILE).is_file():
        return path.parent
    return None


def load_fast(folder: Path, limit: int | None = None) -> Vectors:
    try:
        matrix = np.load(folder / MATRIX_FILE, mmap_mode="r", allow_pickle=False)
        text = (folder / KEYS_FILE).read_text(encoding="utf-8")
    except (OSError, ValueError, EOFError, UnicodeDecodeError) as e:
        raise DataError(f"{folder}: cannot read the vectors ({e})") from None
    if matrix.ndim != 2 or matrix.dtype.kind != "f":
        raise DataError(f"{folder / MATRIX_FILE}: expected a 2-d float matrix, found {matrix.dtype} {matrix.shape}")
    keys = text.split("\n")
    if keys and keys[-1] == "":
        keys.pop()
    if len(keys) != matrix.shape[0]:
        raise DataError(f"{folder}: {KEYS_FILE} has {len(keys)} keys but {MATRIX_FILE} has {matrix.shape[0]} rows")
    if limit is not None:
        keys, matrix = keys[:limit], matrix[:limit]
    return Vectors(keys, matrix, source=str(folder), format=FAST_FORMAT)


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
    from attn_cli import formats

    return formats.load_foreign(where, limit=limit, trust=trust)
