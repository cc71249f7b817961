"""Word vectors: the project's fast format, the default GloVe data, and where to find them.

The fast format is a folder holding `vectors.npy` (a [n_keys, d] float matrix, loaded
memory-mapped with allow_pickle=False) and `keys.txt` (one key per line, row order); the
folders `attn vectors convert` writes also hold `attn.json`, the manifest that tells that
attn wrote them (so that --force may replace them), and `norms.npy`, the float64 norm of every
row, so that a search over every key does not compute them again at each start. A folder
without it (or with one that does not match the matrix) works the same, computing the norms.
Other formats (word2vec, GloVe text, fastText) go through `attn_cli.formats`, which
imports gensim only when such a file is actually loaded.
"""

import codecs
import mmap
import os
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path

import numpy as np

from attn_cli.core.neighbors import row_norms, unit_rows  # noqa: F401 (part of what a store offers)
from attn_cli.errors import DataError, InputError, reason

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
DEFAULT_VECTORS = DATA_DIR / "glove.6B.50d"
ENV_VAR = "ATTN_VECTORS"
FAST_FORMAT = "attn"
MATRIX_FILE = "vectors.npy"
KEYS_FILE = "keys.txt"
MANIFEST_FILE = "attn.json"
NORMS_FILE = "norms.npy"  # [n_keys] float64, row_norms of the matrix (optional)
NORMS_CHECKED = 16  # rows whose stored norm is compared with one computed at load (a stale file is ignored)
BLOCK_ROWS = 16384  # rows read at a time when every key is scored: [16384, d] float32, 3.2 MB at d = 50
UTF8_CHUNK = 1 << 14  # bytes of keys.txt decoded at a time when it is checked
SCANS_BEFORE_INDEX = 64  # look-ups answered by scanning keys.txt before the key -> row dict is built


class Vectors:
    """Keys and their vectors, most frequent first; speaks gensim's KeyedVectors vocabulary.

    `oov_vector`, when given (fastText .bin), makes a vector for a word that is not a key.
    A key that occurs more than once names its first row. `notes` are things the reader
    noticed that a person should hear about (said once on stderr by the CLI).

    A fast folder's keys stay as the bytes of keys.txt (`key_lines`) until something needs
    them all: a few look-ups scan those bytes (a 400,000-key dict costs ~0.2 s to build),
    `index_to_key` and `key_to_index` are built on first use. `matrix_file` (path, offset of
    the data) lets `blocks` read the matrix without keeping it all resident in memory.
    """

    def __init__(
        self,
        index_to_key: list[str] | None,
        vectors: np.ndarray,  # [n_keys, d]
        *,
        source: str = "",
        format: str = FAST_FORMAT,
        oov_vector: Callable[[str], np.ndarray] | None = None,
        key_lines: bytes | bytearray | None = None,  # "\n" + one key per line, each ending in "\n", instead of index_to_key
        matrix_file: tuple[Path, int] | None = None,
        n_keys: int | None = None,  # the keys in key_lines, when the caller has counted them already
        stored_norms: Callable[[], np.ndarray | None] | None = None,  # reads [n_keys] float64 row_norms(vectors) from a fast folder
    ):
        if n_keys is None:
            n_keys = newlines(key_lines) - 1 if index_to_key is None else len(index_to_key)
        if vectors.ndim != 2 or vectors.shape[0] != n_keys:
            raise DataError(f"{source}: {n_keys} keys but a matrix of shape {vectors.shape}")
        if index_to_key is not None:
            self.index_to_key = index_to_key
        self.key_lines = key_lines
        self.n_keys = n_keys
        self.vectors = vectors
        self.matrix_file = matrix_file
        self.stored_norms = stored_norms
        self.source = source
        self.format = format
        self.oov_vector = oov_vector
        self.notes: list[str] = []
        self.scanned: dict[str, int | None] = {}  # keys.txt look-ups so far

    @cached_property
    def index_to_key(self) -> list[str]:
        return self.key_lines[1:-1].decode("utf-8").split("\n") if self.n_keys else []

    @cached_property
    def norms(self) -> np.ndarray | None:  # [n_keys] float64, or None: searches compute them
        """Each row's norm as stored with the vectors (norms.npy), read on first use: only searches over every key need them."""
        return None if self.stored_norms is None else self.stored_norms()

    @cached_property
    def key_to_index(self) -> dict[str, int]:
        index = {key: i for i, key in enumerate(self.index_to_key)}
        if len(index) < len(self.index_to_key):  # duplicates: the first row wins, as in a scan of the key list
            index = {}
            for i, key in enumerate(self.index_to_key):
                index.setdefault(key, i)
        return index

    def line_ends(self, through: int) -> np.ndarray:  # -> [> through] offsets of the first newlines of key_lines
        """Where key_lines' newlines are, found only as far as newline `through`: a few frequent
        keys (similarity's examples) do not need the offsets of all 400,000."""
        ends, done = vars(self).get("_line_ends", (np.zeros(0, dtype=np.intp), 0))
        while len(ends) <= through and done < len(self.key_lines):
            stop = min(len(self.key_lines), max(2 * done, 1 << 16))  # the part read doubles each time
            part = np.frombuffer(self.key_lines, dtype=np.uint8, count=stop - done, offset=done)
            ends, done = np.concatenate([ends, np.flatnonzero(part == ord("\n")) + done]), stop
        self._line_ends = ends, done
        return ends

    def find(self, key: str) -> int | None:
        """The first row of `key` by a scan, building no index: of keys.txt's bytes, or of the key list.
        Each key is scanned for once (tokens.key_rows and get_vector ask for the same words)."""
        if key not in self.scanned:
            self.scanned[key] = self._scan(key)
        return self.scanned[key]

    def _scan(self, key: str) -> int | None:
        if self.key_lines is None:
            try:
                return self.index_to_key.index(key)
            except ValueError:
                return None
        if "\n" in key:
            return None
        try:
            at = self.key_lines.find(b"\n" + key.encode("utf-8") + b"\n")
        except UnicodeEncodeError:  # a lone surrogate: never a key
            return None
        return None if at < 0 else newlines(memoryview(self.key_lines)[:at])  # the row: newlines before it (NumPy: 10x bytes.count for rare keys)

    def row(self, key: str) -> int | None:
        """The row of `key` (None if it is not a key): scanned while look-ups are few, then from key_to_index."""
        if "key_to_index" in vars(self) or self.key_lines is None or len(self.scanned) >= SCANS_BEFORE_INDEX:
            return self.key_to_index.get(key)
        return self.find(key)

    def key_at(self, i: int) -> str:
        """The key of row i, without building the whole key list."""
        if self.key_lines is None or "index_to_key" in vars(self):
            return self.index_to_key[i]
        i = i + self.n_keys if i < 0 else i
        ends = self.line_ends(i + 1)
        return self.key_lines[ends[i] + 1 : ends[i + 1]].decode("utf-8")

    def blocks(self, rows: int = BLOCK_ROWS) -> Iterator[tuple[int, np.ndarray]]:  # -> (start, [c, d] rows)
        """The matrix, a block of rows at a time (matrix_blocks)."""
        return matrix_blocks(self.vectors, self.matrix_file, rows)

    def duplicate_keys(self) -> list[str]:
        """Keys that occur more than once, in order of first occurrence."""
        if len(self.key_to_index) == len(self.index_to_key):
            return []
        index = self.key_to_index
        return list(dict.fromkeys(key for i, key in enumerate(self.index_to_key) if index[key] != i))

    @property
    def vector_size(self) -> int:
        return self.vectors.shape[1]

    def __len__(self) -> int:
        return self.n_keys

    def __contains__(self, key: str) -> bool:
        return self.row(key) is not None

    def has_vector(self, word: str) -> bool:
        """A key, or a word the format can build a vector for (fastText subwords)."""
        return self.oov_vector is not None or self.row(word) is not None

    def get_vector(self, word: str) -> np.ndarray:  # -> [d] float64
        i = self.row(word)
        if i is not None:
            return self.checked(np.asarray(self.vectors[i], dtype=np.float64), [word])
        if self.oov_vector is not None:
            return self.checked(np.asarray(self.oov_vector(word), dtype=np.float64), [word])
        raise KeyError(word)

    def checked(self, rows: np.ndarray, words: list[str]) -> np.ndarray:  # [..., d] -> the same rows
        """`rows`, the vectors of `words`, if all are finite; a NaN or infinite value is a damaged file (DataError)."""
        finite = np.isfinite(rows)
        if not finite.all():
            bad = words[int(np.argmin(finite.all(axis=-1)))] if rows.ndim == 2 else words[0]
            raise DataError(f"{self.source or 'the vectors'}: the vector of {bad!r} holds NaN or infinite values")
        return rows

    @property
    def unit(self) -> np.ndarray:  # [n_keys, d] float32, every row of norm 1
        """All the vectors scaled to norm 1, as one new array (searches use `unit_rows` a block at a time)."""
        return unit_rows(self.vectors)

    def close_spelling(self, word: str) -> str | None:
        """The known key most likely meant by `word` (attn_cli.spelling), or None."""
        from attn_cli.vectors.spelling import close_spelling

        return close_spelling(word, self.key_to_index, self.index_to_key)


def newlines(data: bytes | bytearray, chunk: int = 1 << 16) -> int:
    """How many b"\n" bytes `data` holds: NumPy counts them 15 times faster than bytes.count, a chunk at a
    time into one small buffer (0.8 ms for 400,000 keys; a [n_bytes] temporary costs page faults too)."""
    b = np.frombuffer(data, dtype=np.uint8)
    found = np.empty(min(len(b), chunk), dtype=bool)
    count = 0
    for start in range(0, len(b), chunk):
        part = b[start : start + chunk]
        count += int(np.count_nonzero(np.equal(part, ord("\n"), out=found[: len(part)])))
    return count


def read_key_lines(path: Path) -> bytearray:
    """keys.txt as key_lines: b"\n" + its bytes (+ b"\n" if the last line has none), every key between two
    newlines, read straight into place (reading, then adding the newline, would copy 3 MB for 400,000 keys)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        lines = bytearray(size + 2)
        lines[0] = ord("\n")
        got = f.readinto(memoryview(lines)[1 : size + 1])
        rest = f.read()  # the file grew since fstat: the rest of it
    del lines[1 + got :]
    lines += rest
    if len(lines) > 1 and lines[-1] != ord("\n"):
        lines.append(ord("\n"))
    return lines


def is_utf8(data: bytes, chunk: int = UTF8_CHUNK) -> bool:
    """Whether `data` is valid UTF-8, decoded a chunk at a time by the same codec: a chunk's text is
    small and freed at once, where decoding 400,000 GloVe keys whole builds a 6.7 MB string (~5 ms, not ~2)."""
    if data.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()  # a character cut between two chunks is completed by the next
    try:
        for start in range(0, len(data), chunk):
            decoder.decode(data[start : start + chunk])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def matrix_blocks(m: np.ndarray, matrix_file: tuple[Path, int] | None, rows: int = BLOCK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
    """m [n, d], a block of rows at a time. When its rows can be read from the file in order
    (`matrix_file`: the .npy and where its data starts), the file is mapped on its own and each
    block's pages are let go once it is used, so a pass over the whole matrix does not leave it
    resident in this process (the kernel keeps it cached for the next one)."""
    if matrix_file is None or not hasattr(mmap, "MADV_DONTNEED"):
        for start in range(0, len(m), rows):
            yield start, np.asarray(m[start : start + rows])
        return
    path, offset = matrix_file
    row_bytes = m.shape[1] * m.dtype.itemsize
    try:
        with open(path, "rb") as f:
            pages = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        matrix = np.frombuffer(pages, dtype=m.dtype, count=m.size, offset=offset).reshape(m.shape)  # [n, d]
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: cannot read the vectors ({reason(e)})") from None
    for start in range(0, len(m), rows):
        yield start, matrix[start : start + rows]
        first = (offset + start * row_bytes) // mmap.PAGESIZE * mmap.PAGESIZE
        pages.madvise(mmap.MADV_DONTNEED, first, offset + min(start + rows, len(m)) * row_bytes - first)


def file_rows(matrix: np.ndarray, path: Path) -> tuple[Path, int] | None:
    """(path, data offset) when a memory-mapped matrix's rows lie in file order (C order, native
    bytes), so matrix_blocks can read them a block at a time; None otherwise."""
    readable = isinstance(matrix, np.memmap) and matrix.flags.c_contiguous and matrix.dtype.isnative
    return (path, matrix.offset) if readable else None


def write_norms(folder: Path, rows: int = BLOCK_ROWS) -> None:
    """folder/norms.npy: row_norms of folder/vectors.npy, computed a block of rows at a time (pages let
    go as they are used: a conversion's peak memory does not grow by the matrix it just wrote)."""
    matrix = read_matrix(folder / MATRIX_FILE)
    norms = np.empty(len(matrix))  # [n_keys] float64
    for start, block in matrix_blocks(matrix, file_rows(matrix, folder / MATRIX_FILE), rows):
        norms[start : start + len(block)] = row_norms(block)
    with open(folder / NORMS_FILE, "wb") as f:
        np.save(f, norms, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())


def read_norms(folder: Path, matrix: np.ndarray) -> np.ndarray | None:  # [n_keys, d] -> [n_keys] float64, memory-mapped
    """folder/norms.npy if it holds the norms of `matrix`: one float64 per row (header checked before
    anything is mapped, never a pickle), and the norms of a few rows spread over the matrix equal to
    the bit. A missing, damaged or stale file is None: the norms are then computed, as before they were stored."""
    from attn_cli.io.files import npy_header

    path = folder / NORMS_FILE
    try:
        with open(path, "rb") as f:
            shape, dtype, _ = npy_header(f, path)
            data_start, size = f.tell(), os.fstat(f.fileno()).st_size
        if shape != (len(matrix),) or dtype != np.dtype(np.float64) or size < data_start + 8 * len(matrix):
            return None
        norms = np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))  # the mapping as a plain array: slicing a memmap costs more
    except (OSError, ValueError, DataError):
        return None
    spot = sorted({(len(matrix) - 1) * i // (NORMS_CHECKED - 1) for i in range(NORMS_CHECKED)})  # first, last and rows between (not np.unique: it imports numpy.ma, ~6 ms)
    if not np.array_equal(row_norms(np.asarray(matrix[spot])), norms[spot], equal_nan=True):
        return None
    return norms


def resolve_path(path: str | os.PathLike | None) -> Path:
    """The vectors to use: the given path, else $ATTN_VECTORS, else the shipped GloVe data."""
    from attn_cli.io.files import user_path

    if path is None or str(path) == "":
        return user_path(os.environ.get(ENV_VAR) or DEFAULT_VECTORS, ENV_VAR)
    return user_path(path, "--vectors")


def fast_folder(path: Path) -> Path | None:
    """The fast-format folder `path` names (the folder, or its vectors.npy), else None."""
    if path.is_dir() and (path / MATRIX_FILE).is_file():
        return path
    if path.name == MATRIX_FILE and (path.parent / KEYS_FILE).is_file():
        return path.parent
    return None


def read_matrix(path: Path) -> np.ndarray:  # -> [n_keys, d], memory-mapped
    """The matrix of a fast folder, its header checked before anything is mapped: a 2-d float
    array that the file really holds. A pickle is refused (InputError), damage is a DataError."""
    from attn_cli.io.files import npy_header

    try:
        with open(path, "rb") as f:
            shape, dtype, _ = npy_header(f, path)
            data_start, size = f.tell(), os.fstat(f.fileno()).st_size
    except OSError as e:
        raise DataError(f"{path}: cannot read the vectors ({e.strerror or e})") from None
    if dtype.hasobject:
        raise InputError(f"{path}: holds pickled Python objects (dtype object); attn never unpickles a .npy file")
    if len(shape) != 2 or dtype.kind != "f":
        raise DataError(f"{path}: expected a 2-d float matrix, found {dtype} {shape}")
    needed = data_start + shape[0] * shape[1] * dtype.itemsize
    if size < needed:
        raise DataError(f"{path}: truncated: its header announces {shape[0]} x {shape[1]} {dtype} ({needed:,} bytes) but the file has {size:,}")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except Exception as e:  # the header was fine; any failure now is damage NumPy describes its own way
        raise DataError(f"{path}: cannot read the vectors ({reason(e)})") from None


def load_fast(folder: Path, limit: int | None = None) -> Vectors:
    matrix = read_matrix(folder / MATRIX_FILE)
    try:
        key_lines = read_key_lines(folder / KEYS_FILE)
        if not is_utf8(key_lines):
            bytes(key_lines[1:]).decode("utf-8")  # raises, naming the first bad byte (offset in the file); keys are decoded only as they are used
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{folder / KEYS_FILE}: cannot read the keys ({e})") from None
    if 0 in matrix.shape:
        raise DataError(f"{folder / MATRIX_FILE}: holds no vectors (shape {matrix.shape})")
    n_keys = newlines(key_lines) - 1
    if n_keys != matrix.shape[0]:
        raise DataError(f"{folder}: {KEYS_FILE} has {n_keys} keys but {MATRIX_FILE} has {matrix.shape[0]} rows")
    matrix_file = file_rows(matrix, folder / MATRIX_FILE)
    full, rows = matrix, n_keys
    if limit is not None and limit < n_keys:
        ends = np.flatnonzero(np.frombuffer(key_lines, dtype=np.uint8) == ord("\n"))
        key_lines, matrix, rows = key_lines[: ends[limit] + 1], matrix[:limit], limit

    def stored_norms() -> np.ndarray | None:
        norms = read_norms(folder, full)
        return None if norms is None else norms[:rows]

    return Vectors(None, matrix, source=str(folder), format=FAST_FORMAT, key_lines=key_lines,
                   matrix_file=matrix_file, n_keys=len(matrix), stored_norms=stored_norms)
