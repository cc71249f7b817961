"""Reading the small text files users hand to `attn` (links, sense sets, evaluation sets)."""

from pathlib import Path

from attn_cli.errors import DataError, InputError


def read_text(path: str | Path, kind: str) -> str:
    """The UTF-8 text of `path`; a missing file, a folder or non-UTF-8 bytes are InputError
    (exit 2), another failure to read is DataError (exit 1). `kind` names the file in messages."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not {kind}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from None


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
