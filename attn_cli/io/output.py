"""Data on stdout: plain JSON, never through Rich (messages on stderr are attn_cli.cli.app.say's).

Imported only when JSON is written (json and this module's encoder stay out of the terminal
views' start); Rich only when something is rendered for a person. Rich colours only a terminal
(or any output when FORCE_COLOR asks for it) and honours NO_COLOR; data written here never has
ANSI codes.
"""

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any


class Rows:
    """A JSON array written as it is produced: `blocks()` yields lists of its items, block by block
    (rows of a large matrix, rounded as they are needed), so the whole array never exists as
    Python objects at once. write_json streams it; json_line writes it as a plain list."""

    __slots__ = ("blocks",)

    def __init__(self, blocks: Callable[[], Iterable[list]]):
        self.blocks = blocks  # called each time the array is written

    def items(self) -> Iterator:
        for block in self.blocks():
            yield from block


def _finite(obj: Any) -> Any:
    """JSON has no inf/NaN: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, Rows)):
        return [_finite(v) for v in (obj.items() if isinstance(obj, Rows) else obj)]
    return obj


def _plain(obj: Any) -> list:
    """json's `default`: a Rows array as a list."""
    if isinstance(obj, Rows):
        return list(obj.items())
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_json(text: str) -> str:
    """JSON text that UTF-8 can hold. A lone surrogate (text read from a file's "\\ud800" escape; UTF-8 has
    no form for it) is written as that same \\uXXXX escape, as json.dumps(ensure_ascii=True) writes it: the
    JSON stays valid and complete, and parses back to what the file held. Surrogates only stand inside
    JSON strings, where the escape means the same character."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_line(obj: Any) -> str:
    """`obj` as one line of JSON; inf and NaN (which JSON lacks) as null."""
    try:
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False, default=_plain)
    except ValueError:  # only then look for the non-finite numbers
        text = json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False)
    return utf8_json(text)


def write_json(obj: Any, *, indent: int | None = 2) -> None:
    """`obj` on stdout: indented (the text of json.dumps(..., indent=indent)), or one line with indent=None.

    The indented form is written piece by piece as it is encoded, Rows block by block, so its
    memory stays small whatever the size of the document.
    """
    if indent is None:
        sys.stdout.write(json_line(obj) + "\n")
        return
    write = sys.stdout.write
    for piece in _indented(obj, " " * indent, "\n"):
        write(utf8_json(piece))
    write("\n")


_CONTAINERS = (dict, list, tuple, Rows)
_FLAT_ENCODERS: dict[str, Callable[[Any], str]] = {}  # line break + indent -> json's C encoder with it as the item separator


def _indented(obj: Any, step: str, outer: str) -> Iterator[str]:
    """The text of json.dumps(obj, indent=len(step), ensure_ascii=False), inf and NaN as null, in pieces.

    `outer` is the line break and indent of the line `obj` starts on.
    """
    inner = outer + step
    if isinstance(obj, dict):
        if not obj:
            yield "{}"
            return
        sep = "{" + inner
        for key, value in obj.items():
            yield sep + _key(key) + ": "
            yield from _indented(value, step, inner)
            sep = "," + inner
        yield outer + "}"
    elif isinstance(obj, (list, tuple, Rows)):
        if not isinstance(obj, Rows) and not any(issubclass(t, _CONTAINERS) for t in set(map(type, obj))):
            yield _flat(obj, inner, outer)
            return
        empty, sep = True, "[" + inner
        for item in obj.items() if isinstance(obj, Rows) else obj:
            yield sep
            yield from _indented(item, step, inner)
            empty, sep = False, "," + inner
        yield "[]" if empty else outer + "]"
    else:
        yield json.dumps(_finite(obj), ensure_ascii=False)


def _flat(items: list | tuple, inner: str, outer: str) -> str:
    """A list of numbers, strings, booleans or None, one item a line at `inner`. json's C encoder
    writes it, with the line break and indent as its item separator (json.dumps with indent=
    encodes item by item in Python); only a list holding inf or NaN is gone through again."""
    if not items:
        return "[]"
    encode = _FLAT_ENCODERS.get(inner)
    if encode is None:
        encode = _FLAT_ENCODERS[inner] = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=("," + inner, ": ")).encode
    try:
        text = encode(items)
    except ValueError:  # an inf or NaN (JSON has neither): null
        text = encode(_finite(items))
    return "[" + inner + text[1:-1] + outer + "]"


def _key(key: Any) -> str:
    """A dict key as json.dumps writes it: a string as it is; a number, boolean or None as its JSON text."""
    if not isinstance(key, str):
        if key is not None and not isinstance(key, (int, float)):
            raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
        key = json.dumps(key)
    return json.dumps(key, ensure_ascii=False)


def console(*, stderr: bool = False, record: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, record=record, highlight=False)
