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
