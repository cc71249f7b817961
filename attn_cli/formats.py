"""Word-vector files made by other tools: detecting their format, reading them, and
writing them out in the project's fast format.

Detection reads only the first bytes of a file (no gensim). Text files (word2vec, GloVe,
fastText .vec) are parsed here, a few megabytes of whole lines at a time, with NumPy's C number
parser; `convert` streams them straight into the fast format without holding the matrix.
The formats gensim owns (binary word2vec, fastText .bin, its pickles) go through gensim,
imported only when such a file is read, so the default vectors never pay for its import.

Exit codes follow the tool's rule: a file whose format is recognised but whose content is
damaged (truncated, corrupt, empty, unreadable) is a DataError (exit 1); a file that is
plainly not word vectors, or a pickle the user has not said to trust, is an InputError (exit 2).
"""

import json
import logging
import os
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import numpy as np

from attn_cli import __version__
from attn_cli.errors import AttnError, DataError, InputError, reason
from attn_cli.atomic import check_writable, clean_stale, move_into_place, temporary_name
from attn_cli.vectors import FAST_FORMAT, KEYS_FILE, MANIFEST_FILE, MATRIX_FILE, NORMS_FILE, Vectors, fast_folder, load_fast, write_norms

WORD2VEC_TEXT = "word2vec-text"
WORD2VEC_BIN = "word2vec-bin"
GLOVE_TEXT = "glove-text"
FASTTEXT_VEC = "fasttext-vec"
FASTTEXT_BIN = "fasttext-bin"
GENSIM_PICKLE = "gensim-kv"
DESCRIPTIONS = {
    WORD2VEC_TEXT: "word2vec text",
    WORD2VEC_BIN: "word2vec binary",
    GLOVE_TEXT: "GloVe text",
    FASTTEXT_VEC: "fastText .vec",
    FASTTEXT_BIN: "fastText .bin",
    GENSIM_PICKLE: "gensim .kv/.model",
}
KNOWN = "word2vec text or binary, GloVe text, fastText .vec/.bin, gensim .kv, or an attn folder"

FASTTEXT_MAGIC = 793712314  # int32 at the start of every fastText .bin
MAX_LINE = 1 << 20  # bytes of a line looked at while detecting (a 300-d text row is ~3 KB)
MAX_WORD = 1000  # bytes of a key in a binary record, at most, while detecting
CHUNK = 1 << 20  # bytes per read while streaming a file to gensim
ROWS_PER_CHUNK = 16384  # rows per write while converting
TEXT_CHUNK = 4 << 20  # bytes of whole lines parsed at a time: a few MB of text, ~2x that in float64 values
ARROW_BLOCK = 1 << 18  # bytes per block of pyarrow's CSV reader
FAST_FILES = (MATRIX_FILE, KEYS_FILE, MANIFEST_FILE, NORMS_FILE)


# --- detection ------------------------------------------------------------------------------


def _header(line: bytes) -> tuple[int, int] | None:
    """(n_keys, d) from a word2vec header line "N D", else None."""
    parts = line.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def _text_row(line: bytes) -> int | None:
    """The number of values on a text row "word v1 v2 ...", or None if it is not one."""
    parts = line.rstrip().split(b" ")
    if len(parts) < 2:
        return None
    try:
        [float(p) for p in parts[1:]]
    except ValueError:
        return None
    return len(parts) - 1


def _looks_like_text(line: bytes) -> bool:
    """UTF-8 without control characters: a text row, not the raw floats of a binary record."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\t\r\n" for c in text)


def _binary_records(path: Path, start: int, n_keys: int, d: int) -> bool:
    """Whether the bytes after a word2vec header are binary records ("word " + d float32 values),
    judged on the first few: a small file must end right after its records, a larger one must
    hold bytes that no text row has, or records with no line break in them (text rows end in one)."""
    first = min(n_keys, 3)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(first * (4 * d + MAX_WORD + 1) + 2)
        size = os.fstat(f.fileno()).st_size - start
    at, unbroken = 0, True
    for _ in range(first):
        space = data.find(b" ", at, at + MAX_WORD + 1)
        word = data[at:space].lstrip(b"\n") if space >= 0 else b""
        if not word or b"\n" in word:
            return False
        at = space + 1 + 4 * d
        if at > len(data):
            return False
        unbroken = unbroken and b"\n" not in data[space + 1 : at]
    if n_keys == first:
        return size - at in (0, 1) and data[at:].strip() == b""
    return unbroken or not _looks_like_text(data[:at])


def _is_pickle(head: bytes) -> bool:
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5  # PROTO opcode, protocol 2-5


def detect_format(path: str | os.PathLike, *, trust: bool = False) -> str:
    """The format of a vectors file or folder, from its first bytes: FAST_FORMAT, WORD2VEC_TEXT, ... (the names above).

    Raises InputError for a pickle without `trust` and for files that are not word vectors,
    DataError for files that cannot be read or are empty or damaged.
    """
    path = Path(path)
    if fast_folder(path) is not None:
        return FAST_FORMAT
    if path.is_dir():
        raise InputError(f"{path}: a folder without {MATRIX_FILE}; expected {KNOWN}")
    try:
        with open(path, "rb") as f:
            first = f.readline(MAX_LINE)
            second = f.readline(MAX_LINE)
    except OSError as e:
        raise DataError(f"{path}: cannot read the file ({e.strerror or e})") from None
    if not first:
        raise DataError(f"{path}: the file is empty")
    if len(first) >= 4 and int.from_bytes(first[:4], "little") == FASTTEXT_MAGIC:
        return FASTTEXT_BIN
    if _is_pickle(first):
        if not trust:
            raise InputError(
                f"{path}: a gensim .kv/.model file is a Python pickle, which can run code when loaded; "
                "pass --trust-pickle if you trust it, or convert it with gensim's save_word2vec_format"
            )
        return GENSIM_PICKLE
    header = _header(first)
    if header is not None:
        n_keys, d = header
        if not second:
            raise DataError(f"{path}: the header announces {n_keys} keys of {d} values but no vectors follow")
        if not _looks_like_text(second):
            return WORD2VEC_BIN
        if _text_row(second) == d:
            return FASTTEXT_VEC if path.suffix.lower() == ".vec" else WORD2VEC_TEXT
        if _binary_records(path, len(first), n_keys, d):
            return WORD2VEC_BIN  # float bytes that happen to read as text
    d = _text_row(first)
    if d is not None and (not second or _text_row(second) == d):
        return GLOVE_TEXT
    if header is not None:
        raise DataError(f"{path}: line 2 is not a word followed by {header[1]} numbers, as the header announces")
    if d is not None:
        raise DataError(f"{path}: line 1 has {d} numbers but line 2 does not (a damaged GloVe text file?)")
    raise InputError(f"{path}: not a word-vectors file; expected {KNOWN}")


# --- reading text -------------------------------------------------------------------------

TEXT_FORMATS = (WORD2VEC_TEXT, GLOVE_TEXT, FASTTEXT_VEC)


class NotPlainRows(Exception):
    """pyarrow's reader refused the file (an odd line, a number it does not take): read it with NumPy's."""


class TextVectors:
    """A word2vec, GloVe or fastText text file, read a chunk of whole lines at a time.

    Like gensim's reader: the key is everything before the first space, the rest of the line
    must be d numbers; a word2vec header's count must match the rows (unless `limit` stops earlier).
    Numbers are parsed as float64 and rounded to float32, as gensim's float32(float(x)) does.
    """

    def __init__(self, path: Path, fmt: str, limit: int | None):
        self.path, self.format = path, fmt
        with open(path, "rb") as f:
            first = f.readline(MAX_LINE)
            header = None if fmt == GLOVE_TEXT else _header(first)
            self.start = len(first) if header else 0
            row = f.readline(MAX_LINE) if header else first
        self.dimension = _text_row(row) or 0
        rows = _count_rows(path) - (1 if header else 0)
        wanted = rows if limit is None else min(rows, limit)
        if header is not None:
            announced, d = header
            if d != self.dimension:
                raise DataError(f"{path}: the header announces {d} values per key but line 2 has {self.dimension}")
            if rows > announced and limit is None:
                raise DataError(f"{path}: the header announces {announced:,} keys but the file has {rows:,} rows of vectors; "
                                f"fix the header, or pass --limit {announced} to read only those")
            if rows < announced and wanted == rows:
                raise DataError(f"{path}: not a readable {DESCRIPTIONS[fmt]} file (it ends early: the header announces "
                                f"{announced:,} keys and {rows:,} rows follow; truncated?)")
            wanted = min(wanted, announced)
        if wanted < 1 or self.dimension < 1:
            raise DataError(f"{path}: the file holds no vectors")
        self.n_keys = wanted
        self.size = path.stat().st_size

    def chunks(self, on_bytes: Callable[[int], None] | None = None, *, fast: bool = True) -> Iterator[tuple[list[bytes], np.ndarray]]:
        """(keys as bytes, [c, d] float32 rows) for successive chunks of the file, n_keys rows in all.

        With `fast` and pyarrow installed, pyarrow's CSV reader parses the file (its number parser is
        about three times NumPy's); anything it does not take as plain rows raises NotPlainRows, and the
        caller reads again without `fast`: NumPy's reader, which names the line at fault.
        """
        if fast and self.arrow() is not None:
            yield from self.arrow_chunks(on_bytes)
        else:
            yield from self.numpy_chunks(on_bytes)

    def arrow(self):
        try:
            import pyarrow.csv
        except ImportError:
            return None
        return pyarrow

    def arrow_chunks(self, on_bytes: Callable[[int], None] | None) -> Iterator[tuple[list[bytes], np.ndarray]]:
        import pyarrow as pa
        from pyarrow import csv

        d, done = self.dimension, 0
        names = ["key", *(f"v{i}" for i in range(d))]
        with open(self.path, "rb") as f:
            f.seek(self.start)
            first = f.readline(MAX_LINE).rstrip(b"\r\n")
        if first.endswith(b" "):  # fastText .vec: a space ends every line, an empty last column
            names.append("end")
        # One thread and small blocks: as fast here, and the reader's read-ahead stays a few megabytes.
        reading = csv.ReadOptions(column_names=names, block_size=ARROW_BLOCK, use_threads=False, skip_rows=1 if self.start else 0)
        parsing = csv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False, ignore_empty_lines=False)
        types = {"key": pa.binary(), **{name: pa.float64() for name in names[1 : d + 1]}}
        converting = csv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                        include_columns=names[: d + 1])
        try:
            reader = csv.open_csv(self.path, read_options=reading, parse_options=parsing, convert_options=converting,
                                  memory_pool=pa.system_memory_pool())  # malloc's: gives freed blocks back
            for batch in reader:
                batch = batch.slice(0, self.n_keys - done)
                if batch.num_rows == 0:
                    break
                block = np.empty((batch.num_rows, d), dtype=np.float32)  # [c, d]; float64 -> float32 as gensim rounds
                for i in range(d):
                    block[:, i] = batch.column(i + 1).to_numpy(zero_copy_only=False)
                keys = batch.column(0).to_pylist()
                done += len(keys)
                if on_bytes and self.size:
                    on_bytes(min(self.size, round(self.size * done / self.n_keys)))
                yield keys, block
        except (pa.ArrowException, ValueError) as e:
            raise NotPlainRows(str(e)) from None
        if done != self.n_keys:
            raise NotPlainRows(f"{done} rows read, {self.n_keys} counted")

    def numpy_chunks(self, on_bytes: Callable[[int], None] | None) -> Iterator[tuple[list[bytes], np.ndarray]]:
        done, line = 0, (2 if self.start else 1)  # the file's line number of the next row
        with open(self.path, "rb") as f:
            f.seek(self.start)
            tail = b""
            while done < self.n_keys:
                data = f.read(TEXT_CHUNK)
                text = tail + data
                end = text.rfind(b"\n") + 1 if data else len(text)  # the last line may lack its newline
                if end == 0:
                    tail = text
                    continue
                lines, tail = text[:end].split(b"\n"), text[end:]
                if lines[-1] == b"":
                    lines.pop()
                lines = lines[: self.n_keys - done]
                keys, block = self.parse(lines, line)
                done += len(keys)
                line += len(keys)
                if on_bytes:
                    on_bytes(f.tell() - len(tail))
                yield keys, block
                if not data:
                    break

    def parse(self, lines: list[bytes], first_line: int) -> tuple[list[bytes], np.ndarray]:
        """Keys and [len(lines), d] float32 values of whole text lines (the first is line `first_line`)."""
        d = self.dimension
        keys, rests = [], []
        for text in lines:
            key, _, rest = text.partition(b" ")
            keys.append(key)
            rests.append(rest)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # older NumPy warns where it stopped at a non-number
                values = np.fromstring(b" ".join(rests), dtype=np.float64, sep=" ")
        except ValueError:  # NumPy 2.3+ raises there instead
            values = np.zeros(0)
        if values.size != len(lines) * d:
            self.fail(rests, first_line)
        return keys, values.reshape(len(lines), d).astype(np.float32)

    def fail(self, rests: list[bytes], first_line: int) -> None:
        """Name the first line that is not d numbers (DataError)."""
        for number, rest in enumerate(rests, first_line):
            fields = rest.split()
            for field in fields:
                try:
                    float(field)
                except ValueError:
                    text = field[:40].decode("utf-8", "replace")
                    raise DataError(f"{self.path}: line {number}: {text!r} is not a number") from None
            if len(fields) != self.dimension:
                raise DataError(f"{self.path}: line {number} has {len(fields)} values after its key, not {self.dimension}")
        raise DataError(f"{self.path}: a line has the wrong number of values or a value that is not a number")


def decode_keys(keys: list[bytes], path: Path, first_row: int = 0) -> list[str]:
    try:
        return [k.decode("utf-8") for k in keys]
    except UnicodeDecodeError:
        bad = next(i for i, k in enumerate(keys) if not _is_utf8(k))
        raise DataError(f"{path}: the key on row {first_row + bad + 1:,} is not valid UTF-8") from None


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def first_rows(keys: list[str]) -> tuple[list[int] | None, list[str]]:
    """(rows to keep, keys found more than once): the first row of each key; (None, []) when all differ."""
    index: dict[str, int] = {}
    for i, key in enumerate(keys):
        index.setdefault(key, i)
    if len(index) == len(keys):
        return None, []
    return sorted(index.values()), list(dict.fromkeys(k for i, k in enumerate(keys) if index[k] != i))


def read_text(path: Path, fmt: str, limit: int | None, on_bytes: Callable[[int], None] | None = None) -> Vectors:
    text = TextVectors(path, fmt, limit)
    matrix = np.empty((text.n_keys, text.dimension), dtype=np.float32)  # [n_keys, d]
    for fast in (True, False):
        keys: list[str] = []
        try:
            for raw, block in text.chunks(on_bytes, fast=fast):
                matrix[len(keys) : len(keys) + len(block)] = block
                keys += decode_keys(raw, path, len(keys))
            break
        except NotPlainRows:
            continue
    rows, repeated = first_rows(keys)
    if rows is not None:  # a key found twice keeps its first vector, as gensim does
        keys, matrix = [keys[i] for i in rows], matrix[rows]
    vectors = Vectors(keys, matrix, source=str(path), format=fmt)
    if repeated:
        vectors.notes.append(duplicates_note(path, repeated))
    return vectors


# --- reading (gensim) -----------------------------------------------------------------------


class _Feed:
    """A pipe that gensim reads as a file (its readers accept a file descriptor), fed by a
    thread that reports how many bytes it has passed on: real reading progress, while gensim
    does all the parsing. `header` is sent first (GloVe text has none of its own).
    """

    def __init__(self, path: Path, header: bytes = b"", on_bytes: Callable[[int], None] | None = None):
        self.path, self.header, self.on_bytes = path, header, on_bytes
        self.error: OSError | None = None

    def __enter__(self) -> int:
        self.read_end, write_end = os.pipe()
        self.thread = threading.Thread(target=self._pump, args=(write_end,), daemon=True)
        self.thread.start()
        return self.read_end

    def _pump(self, write_end: int) -> None:
        done = 0
        try:
            with open(write_end, "wb") as out, open(self.path, "rb") as src:
                out.write(self.header)
                while chunk := src.read(CHUNK):
                    out.write(chunk)
                    done += len(chunk)
                    if self.on_bytes:
                        self.on_bytes(done)
        except BrokenPipeError:
            pass  # the reader stopped early: --limit reached, or a damaged file
        except OSError as e:
            self.error = e

    def __exit__(self, *exc) -> None:
        os.close(self.read_end)  # unblocks the pump if gensim stopped before the end
        self.thread.join()
        if self.error is not None:
            raise DataError(f"{self.path}: cannot read the file ({self.error.strerror or self.error})")


def _reason(e: BaseException) -> str:
    """A short reason for a gensim failure on a damaged file."""
    if isinstance(e, EOFError):
        return "it ends early; truncated?"
    if isinstance(e, MemoryError):
        return "not enough memory to hold it"
    if isinstance(e, UnicodeDecodeError):
        return "a key is not valid UTF-8"
    text = reason(e)
    if "broadcast" in text or "could not convert" in text or "invalid literal" in text:
        return f"a line has the wrong number of values or a value that is not a number: {text}"
    return text


class _DuplicateWords(logging.Handler):
    """Collects the keys gensim says it found twice (it keeps the first vector and logs the rest)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.words: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("duplicate word") and record.args:
            self.words.append(str(record.args[0]))


def _count_rows(path: Path) -> int:
    """Lines of a text file that hold something, counted in bulk (blank lines at the end do not count)."""
    lines, tail = 0, b""
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            lines += chunk.count(b"\n")
            tail = (tail + chunk)[-CHUNK:]
    ends_line = tail.endswith(b"\n")
    if not ends_line:
        lines += 1  # a last line without its newline
    blank_lines = tail[len(tail.rstrip()):].count(b"\n") - ends_line  # the last line's own newline ends it, it is no blank line
    return lines - max(blank_lines, 0)


def _check_header_count(path: Path, keys: list[str], d: int, duplicates: int) -> None:
    """A binary word2vec header that announces fewer keys than the file holds would silently leave the
    rest unread (gensim stops at the announced count): an error, unless --limit asked for that."""
    with open(path, "rb") as f:
        header = f.readline(MAX_LINE)
    announced = (_header(header) or (0, 0))[0]
    if duplicates:
        return  # the dropped keys' bytes are unknown; gensim has already checked the announced count
    records = sum(len(k.encode("utf-8")) + 1 for k in keys) + len(keys) * d * 4  # "key " + float32 values
    extra = path.stat().st_size - len(header) - records - len(keys)  # a newline may end each record
    if extra > 0:
        raise DataError(f"{path}: the header announces {announced:,} keys but {extra:,} more bytes follow them; "
                        f"fix the header, or pass --limit {announced} to read only those")


def _read_gensim(path: Path, fmt: str, limit: int | None, on_bytes: Callable[[int], None] | None):
    """A gensim KeyedVectors, with an oov_vector hook for fastText .bin (else None)."""
    if fmt == GENSIM_PICKLE:
        from gensim.models import KeyedVectors

        loaded = KeyedVectors.load(str(path))
        kv = getattr(loaded, "wv", loaded)  # a whole model (.model) holds its vectors in .wv
        if not isinstance(kv, KeyedVectors):
            raise DataError(f"{path}: the pickle holds a {type(loaded).__name__}, not word vectors")
        return kv
    if fmt == FASTTEXT_BIN:
        from gensim.models.fasttext import load_facebook_vectors

        return load_facebook_vectors(str(path))  # its reader seeks, so it cannot read from a pipe
    from gensim.models import KeyedVectors

    with _Feed(path, b"", on_bytes) as fd:  # binary word2vec: the text formats are read by TextVectors
        return KeyedVectors.load_word2vec_format(fd, binary=fmt == WORD2VEC_BIN, limit=limit)


def load_foreign(
    path: str | os.PathLike,
    limit: int | None = None,
    trust: bool = False,
    on_bytes: Callable[[int], None] | None = None,
) -> Vectors:
    """Vectors from any supported file (gensim does the reading); `format` is the detected one.

    `limit` keeps the first N keys; `trust` allows gensim's pickled .kv/.model files;
    `on_bytes(n)` is told how many bytes of the file have been read so far.
    """
    path = Path(path)
    fmt = detect_format(path, trust=trust)
    if fmt == FAST_FORMAT:
        return load_fast(fast_folder(path), limit)
    if fmt in TEXT_FORMATS:
        return read_text(path, fmt, limit, on_bytes)
    duplicates = _DuplicateWords()
    gensim_log = logging.getLogger("gensim.models.keyedvectors")
    gensim_log.addHandler(duplicates)
    try:
        kv = _read_gensim(path, fmt, limit, on_bytes)
    except AttnError:
        raise
    except Exception as e:  # gensim's readers fail in many ways on damaged files; all mean the same here
        raise DataError(f"{path}: not a readable {DESCRIPTIONS[fmt]} file ({_reason(e)})") from None
    finally:
        gensim_log.removeHandler(duplicates)
    # A key found twice keeps its first vector; gensim leaves an empty row (key None) at the end for each.
    keys = [str(k) for k in kv.index_to_key if k is not None]
    matrix = kv.vectors[: len(keys)]  # [n_keys, d]
    if limit is not None:
        keys, matrix = keys[:limit], matrix[:limit]
    if not keys or 0 in matrix.shape:
        raise DataError(f"{path}: the file holds no vectors")
    if limit is None and fmt == WORD2VEC_BIN:
        _check_header_count(path, keys, matrix.shape[1], len(duplicates.words))
    oov_vector = kv.get_vector if fmt in (FASTTEXT_BIN, GENSIM_PICKLE) and getattr(kv, "bucket", 0) else None
    vectors = Vectors(keys, matrix, source=str(path), format=fmt, oov_vector=oov_vector)
    if duplicates.words:
        vectors.notes.append(duplicates_note(path, duplicates.words))
    return vectors


def duplicates_note(source, words: list[str]) -> str:
    examples = ", ".join(repr(w) for w in words[:3]) + (", ..." if len(words) > 3 else "")
    n = len(words)
    return f"{source}: {n:,} key{'s' if n != 1 else ''} found more than once ({examples}); each keeps its first vector"


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
    from attn_cli.files import user_path

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
        move_into_place(scratch.path, dst, replace=force, written=FAST_FILES)
    return dst


class Scratch:
    path: Path  # the folder being built; the one removed if the build fails


@contextmanager
def scratch_folder(dst: Path) -> Iterator[Scratch]:
    """A new folder beside `dst` to build it in (stale ones cleared first). If anything fails the
    folder at `scratch.path` is removed, and an OSError becomes one DataError naming `dst`."""
    clean_stale(dst, FAST_FILES)
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
        move_into_place(scratch.path, dst, replace=force, written=FAST_FILES)
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
