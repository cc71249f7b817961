"""Where output goes: data on stdout (plain JSON, never through Rich), messages on stderr.

Rich is imported only when something is rendered for a person, to keep start-up fast.
Rich colours only a terminal and honours NO_COLOR, so piped output carries no ANSI codes.
"""

import json
import math
import sys
from typing import Any


def _finite(obj: Any) -> Any:
    """JSON has no inf/NaN: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def json_line(obj: Any) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False)


def write_json(obj: Any, *, indent: int | None = 2) -> None:
    text = json_line(obj) if indent is None else json.dumps(_finite(obj), ensure_ascii=False, indent=indent)
    sys.stdout.write(text + "\n")


def console(*, stderr: bool = False, record: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, record=record, highlight=False)


def warn(message: str) -> None:
    """One line for a person, on stderr."""
    sys.stderr.write(f"attn: {message}\n")
