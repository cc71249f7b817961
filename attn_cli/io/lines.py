"""One loop over input lines (`-`): each non-blank line's result, or the error it raised.

Blank lines are skipped, their numbers kept (line n of the output names input line n) and
listed in `Lines.blank`, for the command to say once.
"""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from attn_cli.errors import InputError


@dataclass
class Line:
    number: int  # 1-based, in the input
    result: object = None
    error: str | None = None  # why this line failed (InputError); the other lines go on

    def to_dict(self) -> dict:
        if self.error is not None:
            return {"line": self.number, "error": self.error}
        return {"line": self.number, **self.result.to_dict()}


class Lines:
    def __init__(self, numbered: Iterable[tuple[int, str | bytes]]):
        self.numbered = numbered  # (line number, text or bytes), read lazily
        self.blank: list[int] = []  # numbers of the lines skipped as blank
        self.read = 0  # non-blank lines read so far

    def results(self, compute: Callable[[str | bytes], object]) -> Iterator[Line]:
        for number, text in self.numbered:
            if not text.strip():
                self.blank.append(number)
                continue
            self.read += 1
            try:
                yield Line(number, compute(text))
            except InputError as e:
                yield Line(number, error=str(e))

    def blank_note(self) -> str | None:
        """One line saying which lines were skipped as blank, or None."""
        if not self.blank:
            return None
        shown = ", ".join(map(str, self.blank[:10])) + (", ..." if len(self.blank) > 10 else "")
        return f"skipped {len(self.blank)} blank line{'s' if len(self.blank) != 1 else ''} ({shown})"
