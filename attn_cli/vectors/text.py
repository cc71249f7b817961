"""Word-vector text files (word2vec, GloVe, fastText .vec): the names of every format, and the text reader.

Parsed here a few megabytes of whole lines at a time with NumPy's C number parser (or pyarrow's, when
installed), so that `vectors convert` can stream a text file straight into the fast format.
"""

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError
from attn_cli.vectors.store import KEYS_FILE, MANIFEST_FILE, MATRIX_FILE, NORMS_FILE, Vectors

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


def duplicates_note(source, words: list[str]) -> str:
    examples = ", ".join(repr(w) for w in words[:3]) + (", ..." if len(words) > 3 else "")
    n = len(words)
    return f"{source}: {n:,} key{'s' if n != 1 else ''} found more than once ({examples}); each keeps its first vector"


