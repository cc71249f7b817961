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

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path


from attn_cli.errors import AttnError, DataError, InputError, reason
from attn_cli.vectors.store import FAST_FORMAT, MATRIX_FILE, Vectors, fast_folder, load_fast
from attn_cli.vectors.text import CHUNK, DESCRIPTIONS, FASTTEXT_BIN, FASTTEXT_MAGIC, FASTTEXT_VEC, GENSIM_PICKLE, GLOVE_TEXT, KNOWN, MAX_LINE, MAX_WORD, TEXT_FORMATS, WORD2VEC_BIN, WORD2VEC_TEXT, _header, _text_row, duplicates_note, read_text

# --- detection ------------------------------------------------------------------------------


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


