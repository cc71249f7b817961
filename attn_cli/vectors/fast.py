"""Writing word vectors in attn's fast format (a folder: vectors.npy, keys.txt, attn.json, norms.npy), and `vectors convert`.

Every folder is written under a temporary name beside its destination and renamed into place when
complete; `--force` replaces only a folder attn wrote (attn_cli.io.atomic).
"""

import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import numpy as np

from attn_cli import __version__
from attn_cli.errors import DataError, InputError
from attn_cli.io.atomic import check_writable, clean_stale, move_into_place, temporary_name
from attn_cli.vectors.store import FAST_FORMAT, KEYS_FILE, MANIFEST_FILE, MATRIX_FILE, Vectors, load_fast, write_norms
from attn_cli.vectors.formats import detect_format, load_foreign
from attn_cli.vectors.text import FAST_FILES, NotPlainRows, ROWS_PER_CHUNK, TEXT_FORMATS, TextVectors, decode_keys, duplicates_note, first_rows

# --- writing the fast format ----------------------------------------------------------------


def fast_dtype(matrix: np.ndarray) -> np.dtype:
    """float32, or float16 for vectors stored that way already (half the size, same values)."""
    return np.dtype(np.float16 if matrix.dtype == np.float16 else np.float32)


def _check_keys(keys: list[str]) -> None:
    for i, key in enumerate(keys):
        if "\n" in key or "\r" in key:
            raise DataError(f"key {i} ({key!r}) contains a line break, which {KEYS_FILE} cannot hold")


def _write_matrix(path: Path, matrix: np.ndarray, dtype, on_rows: Callable[[int, int], None] | None) -> None:
    n_keys, d = matrix.shape
    out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(n_keys, d))
    for start in range(0, n_keys, ROWS_PER_CHUNK):
        stop = min(start + ROWS_PER_CHUNK, n_keys)
        out[start:stop] = matrix[start:stop]
        if on_rows:
            on_rows(stop, n_keys)
    out.flush()
    del out
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def _write_keys(path: Path, keys: list[str]) -> None:
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for start in range(0, len(keys), ROWS_PER_CHUNK):
                f.write("".join(k + "\n" for k in keys[start : start + ROWS_PER_CHUNK]))
            f.flush()
            os.fsync(f.fileno())
    except UnicodeEncodeError as e:
        raise DataError(f"a key cannot be written as UTF-8 ({e.reason})") from None


def is_attn_folder(path: Path) -> bool:
    """Whether `path` is a vectors folder attn wrote (its manifest says so) holding nothing else: the only
    kind of folder --force replaces. A folder holding other files raises InputError naming them."""
    if not path.is_dir() or path.is_symlink():
        return False
    others = sorted(p.name for p in path.iterdir() if p.name not in FAST_FILES)
    if others:
        raise InputError(f"{path} is a folder holding other files ({', '.join(others[:3])}); not replacing it")
    try:
        manifest = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FAST_FORMAT:
        raise InputError(f"{path} is a folder that attn did not write (no {MANIFEST_FILE}); not replacing it, remove it yourself")
    return True


def check_destination(dst: str | os.PathLike, force: bool) -> Path:
    """`dst` as a place to write an attn folder: new, or (with `force`) a regular file or a vectors
    folder attn wrote. Anything else (a folder of other files, a device, a link) is never replaced."""
    from attn_cli.io.files import user_path

    dst = Path(os.path.abspath(user_path(dst, "FOLDER")))
    return check_writable(dst, force, ours=is_attn_folder, what="a vectors folder attn wrote")


def _write_manifest(path: Path, n_keys: int, dimension: int, dtype) -> None:
    manifest = {"format": FAST_FORMAT, "written_by": f"attn {__version__}", "keys": n_keys,
                "dimension": dimension, "dtype": str(dtype)}
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def write_fast(
    vectors: Vectors,
    dst: str | os.PathLike,
    *,
    force: bool = False,
    on_rows: Callable[[int, int], None] | None = None,
) -> Path:
    """Write `vectors` as a fast-format folder at `dst` (float32, or float16 if they are).

    Everything is written into a hidden folder next to `dst` and renamed into place, so a
    failure or an interruption leaves no half-written `dst`; what a killed run left there is
    removed first. A key found more than once is written once, with its first vector.
    `on_rows(done, total)` reports rows.
    """
    dst = check_destination(dst, force)
    _check_keys(vectors.index_to_key)
    if vectors.duplicate_keys():
        rows = sorted(vectors.key_to_index.values())
        vectors = Vectors([vectors.index_to_key[i] for i in rows], vectors.vectors[rows], source=vectors.source, format=vectors.format)
    dtype = fast_dtype(vectors.vectors)
    with scratch_folder(dst) as scratch:
        _write_matrix(scratch.path / MATRIX_FILE, vectors.vectors, dtype, on_rows)
        _write_keys(scratch.path / KEYS_FILE, vectors.index_to_key)
        _write_manifest(scratch.path / MANIFEST_FILE, len(vectors), vectors.vector_size, dtype)
        write_norms(scratch.path)
        move_into_place(scratch.path, dst, replace=force)
    return dst


class Scratch:
    path: Path  # the folder being built; the one removed if the build fails


@contextmanager
def scratch_folder(dst: Path) -> Iterator[Scratch]:
    """A new folder beside `dst` to build it in (stale ones cleared first). If anything fails the
    folder at `scratch.path` is removed, and an OSError becomes one DataError naming `dst`."""
    clean_stale(dst)
    scratch = Scratch()
    scratch.path = temporary_name(dst)
    try:
        scratch.path.mkdir()
        yield scratch
    except OSError as e:
        shutil.rmtree(scratch.path, ignore_errors=True)
        raise DataError(f"{dst}: cannot write the vectors ({e.strerror or e})") from None
    except BaseException:
        shutil.rmtree(scratch.path, ignore_errors=True)
        raise


# --- converting -----------------------------------------------------------------------------


class Converted(NamedTuple):
    format: str  # the source's format
    keys: int  # written (a key found twice is written once)
    dimension: int
    dtype: str
    notes: list  # things to tell a person (keys found more than once)


def convert(
    src: str | os.PathLike,
    dst: str | os.PathLike,
    *,
    limit: int | None = None,
    trust: bool = False,
    force: bool = False,
    on_bytes: Callable[[int], None] | None = None,
    on_rows: Callable[[int, int], None] | None = None,
) -> Converted:
    """Write the vectors of `src` as a fast-format folder at `dst`.

    Text files stream through: each chunk of lines is parsed and appended to vectors.npy and
    keys.txt, so memory holds one chunk, not the matrix. Other formats are loaded, then written.
    """
    src, dst = Path(src), check_destination(dst, force)
    fmt = detect_format(src, trust=trust)
    if fmt not in TEXT_FORMATS:
        vectors = load_foreign(src, limit=limit, trust=trust, on_bytes=on_bytes)
        notes = list(vectors.notes)
        if fmt == FAST_FORMAT and (repeated := vectors.duplicate_keys()):
            notes.append(duplicates_note(vectors.source, repeated))
        write_fast(vectors, dst, force=force, on_rows=on_rows)
        return Converted(fmt, len(vectors.key_to_index), vectors.vector_size, str(fast_dtype(vectors.vectors)), notes)
    text = TextVectors(src, fmt, limit)
    with scratch_folder(dst) as scratch:
        kept, repeated = _stream_text(text, scratch.path, on_bytes)
        if repeated:  # rare: rewrite with each key's first row, as write_fast does
            again = temporary_name(dst)
            write_fast(load_fast(scratch.path), again)
            shutil.rmtree(scratch.path)
            scratch.path = again
        else:
            write_norms(scratch.path)
        move_into_place(scratch.path, dst, replace=force)
    notes = [duplicates_note(src, repeated)] if repeated else []
    return Converted(fmt, kept, text.dimension, "float32", notes)


def _append_rows(matrix, keys_file, keys: list[bytes], block: np.ndarray) -> None:
    matrix.write(block.astype("<f4", copy=False).tobytes())
    keys_file.write(b"\n".join(keys) + b"\n")


def _stream_text(text: TextVectors, folder: Path, on_bytes: Callable[[int], None] | None) -> tuple[int, list[str]]:
    """Parse `text` chunk by chunk into folder/vectors.npy and keys.txt: (distinct keys, keys found more than once)."""
    hashes = np.empty(text.n_keys, dtype=np.int64)  # [n_keys]: duplicates are found by hash, then by key
    with open(folder / MATRIX_FILE, "wb") as matrix, open(folder / KEYS_FILE, "wb") as keys_file:
        for fast in (True, False):
            for f in (matrix, keys_file):
                f.seek(0)
                f.truncate()
            header = {"descr": "<f4", "fortran_order": False, "shape": (text.n_keys, text.dimension)}
            np.lib.format.write_array_header_1_0(matrix, header)
            done = 0
            try:
                for raw, block in text.chunks(on_bytes, fast=fast):
                    keys = decode_keys(raw, text.path, done)
                    if any("\r" in k for k in keys):
                        bad = next(i for i, k in enumerate(keys) if "\r" in k)
                        raise DataError(f"key {done + bad} ({keys[bad]!r}) contains a line break, which {KEYS_FILE} cannot hold")
                    hashes[done : done + len(keys)] = [hash(k) for k in raw]
                    _append_rows(matrix, keys_file, raw, block)
                    done += len(raw)
                break
            except NotPlainRows:
                continue
        for f in (matrix, keys_file):
            f.flush()
            os.fsync(f.fileno())
    _write_manifest(folder / MANIFEST_FILE, text.n_keys, text.dimension, np.dtype(np.float32))
    if len(np.unique(hashes)) == text.n_keys:  # no two keys share a hash: no key repeats
        return text.n_keys, []
    keys = (folder / KEYS_FILE).read_text(encoding="utf-8").split("\n")[:-1]
    rows, repeated = first_rows(keys)
    return (text.n_keys if rows is None else len(rows)), repeated
