"""Files and text the user hands to `attn`: the small text files (links, sense sets, evaluation
sets), standard input and arguments, all as UTF-8 (bytes that are not UTF-8 are an error naming
the first one, never dropped), and the headers of NumPy files. Writing is in attn_cli.io.atomic.
"""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

from attn_cli.errors import DataError, InputError, reason

BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark some editors write first: not part of the text
NEWLINE = b"\n"


def read_text(path: str | Path, kind: str) -> str:
    """The UTF-8 text of `path`; a missing file, a folder or non-UTF-8 bytes are InputError
    (exit 2), another failure to read is DataError (exit 1). `kind` names the file in messages."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not {kind}") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from None
    return decode_utf8(raw.removeprefix(BOM), str(path))


def read_input(path: str | Path, kind: str) -> str:
    """read_text, where the path '-' is standard input (as every command takes it)."""
    return stdin_text() if str(path) == "-" else read_text(path, kind)


def input_name(path: str | os.PathLike) -> str:
    """How messages name an input: 'stdin' for '-', else the path (display_path)."""
    return "stdin" if str(path) == "-" else display_path(path)


def tsv_rows(lines, header: list[str], fields_are: str, source: str):
    """(line number, fields) of each data line of a TSV text, fields stripped of spaces.

    Blank lines, '#' comments and a header line (`header`, any case) are skipped. A line with
    another number of fields than the header, or with an empty field, raises InputError naming
    it; `fields_are` says what the fields are ("sentence, query word, key word").
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in line.rstrip("\r\n").split("\t")]
        if [f.lower() for f in fields] == header:
            continue
        if len(fields) != len(header):
            raise InputError(f"{source} line {number}: expected {len(header)} tab-separated fields ({fields_are}), found {len(fields)}")
        if not all(fields):
            raise InputError(f"{source} line {number}: an empty field")
        yield number, fields


# --- text from the user ---------------------------------------------------------------------


def decode_utf8(raw: bytes, where: str) -> str:
    """`raw` as UTF-8; invalid bytes raise InputError naming the first one and its byte offset
    (`where`, if given, starts the message)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = f" (line {raw.count(NEWLINE, 0, e.start) + 1})" if NEWLINE in raw else ""
        prefix = f"{where}: " if where else ""
        raise InputError(f"{prefix}not UTF-8 text: byte 0x{raw[e.start]:02x} at byte offset {e.start}{line}") from None


def check_text(text: str, where: str) -> str:
    """An argument as text. Python keeps argument bytes that are not UTF-8 as lone surrogates
    (U+DC80..U+DCFF); such an argument raises InputError naming the byte and its offset."""
    try:
        text.encode("utf-8")  # in C: a per-character loop took 5 s on a 30 MB argument
        return text
    except UnicodeEncodeError as e:
        i, c = e.start, text[e.start]
    offset = len(text[:i].encode("utf-8", "surrogateescape"))
    byte = f"byte 0x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else f"U+{ord(c):04X}"
    raise InputError(f"{where}: not UTF-8 text: {byte} at byte offset {offset}")


def stdin_bytes() -> bytes:
    """All of standard input as bytes (empty when stdin is closed)."""
    stream = getattr(sys.stdin, "buffer", None)
    return stream.read() if stream is not None else b""


def stdin_text(where: str = "stdin") -> str:
    """All of standard input as UTF-8 text, whatever the locale."""
    return decode_utf8(stdin_bytes().removeprefix(BOM), where)


def stdin_line_bytes() -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each line of standard input, without its line ending, read lazily.
    Lines are decoded by the caller, so one bad line does not stop the others."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return
    for n, raw in enumerate(stream, 1):
        if n == 1:
            raw = raw.removeprefix(BOM)
        yield n, raw.rstrip(b"\r\n")


def file_line_bytes(path: str | Path, kind: str) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each line of a file, as stdin_line_bytes reads stdin; the file is opened now, so a
    missing one is an error before any line (InputError; DataError when it cannot be read)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder, not {kind}")
    try:
        stream = open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from None

    def lines():
        with stream:
            for n, raw in enumerate(stream, 1):
                yield n, (raw.removeprefix(BOM) if n == 1 else raw).rstrip(b"\r\n")

    return lines()


def count_lines(path: str | Path) -> int:
    """Lines in a file, counted a block at a time (for a progress bar's total)."""
    count, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            count += block.count(NEWLINE)
            last = block[-1:]
    return count + (last != NEWLINE)


def printable(text: str) -> str:
    """`text` with control characters and undecodable bytes written as escapes: safe on one line of a terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


LINE_BREAKING = ("Cc", "Zl", "Zp")  # control characters and the Unicode line and paragraph separators


def one_line(text: str) -> str:
    """`text` with every character that could break or steer a line (control characters, U+2028, U+2029) as an
    escape, and nothing else changed: a name a file gives is then one line wherever it is shown."""
    import unicodedata

    if text.isprintable() or not any(unicodedata.category(c) in LINE_BREAKING for c in text):
        return text
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in LINE_BREAKING else c for c in text)


def user_path(spec: str | os.PathLike, where: str) -> Path:
    """`spec` as a path, a leading ~ or ~USER expanded; a USER that does not exist (or no home folder
    at all) is InputError naming `where` (the option or variable that gave the path)."""
    try:
        return Path(spec).expanduser()
    except RuntimeError:  # pathlib: "Could not determine home directory."
        user = str(spec)[1:].partition("/")[0].partition(os.sep)[0]
        whose = f"no user named {printable(user)!s} on this system" if user else "no home folder to expand ~ to"
        raise InputError(f"{where} {display_path(spec)}: {whose}") from None


def display_path(path: str | os.PathLike) -> str:
    """A path as text that is valid UTF-8 (bytes that are not are written as \\xNN)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


MAX_SHOWN_PATH = 120  # characters of a path a message shows: a longer one keeps its start and its end


def shown_path(path: str | bytes | os.PathLike) -> str:
    """A path as a message shows it: printable (control characters escaped), and a long one cut in the middle."""
    whole = display_path(path)
    text = printable(whole)
    if len(text) <= MAX_SHOWN_PATH:
        return text
    keep = (MAX_SHOWN_PATH - 3) // 2
    return f"{text[:keep]}...{text[-keep:]} ({len(whole):,} characters)"


# --- NumPy files ------------------------------------------------------------------------------


def npy_header(f, where) -> tuple:  # -> (shape, numpy dtype, fortran order)
    """(shape, dtype, fortran order) from the header of the .npy file open at `f`, which is left at the
    first data byte. Reading the header first lets a caller refuse a pickle or an impossible shape
    before a single byte of data is read. Anything but a .npy header is a DataError."""
    from numpy.lib import format as npy

    start = f.tell()
    if f.read(4) == b"PK\x03\x04":
        raise DataError(f"{where}: a zip archive (an .npz?), not a .npy array")
    f.seek(start)
    try:
        version = npy.read_magic(f)
        if version in ((1, 0), (2, 0)):
            read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape, fortran, dtype = read(f)
            return shape, dtype, fortran
    except Exception as e:  # a damaged header fails in NumPy's parser in many ways (ValueError, SyntaxError, ...)
        raise DataError(f"{where}: not a readable .npy array ({reason(e)})") from None
    raise DataError(f"{where}: a .npy file of version {version[0]}.{version[1]}, which attn does not read")
