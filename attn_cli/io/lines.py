"""One loop over input lines (`-`): each non-blank line's result, or the error it raised.

Blank lines are skipped, their numbers kept (line n of the output names input line n) and
counted in `Lines.blank` (the first few numbers listed), for the command to say once; memory
stays the same however many there are.
"""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from attn_cli.errors import AttnError, DataError

BLANK_LISTED = 10  # blank line numbers the note lists; the rest are counted


@dataclass
class Line:
    number: int  # 1-based, in the input
    result: object = None
    error: str | None = None  # why this line failed (InputError, or DataError: damaged data it met); the other lines go on

    def to_dict(self) -> dict:
        if self.error is not None:
            return {"line": self.number, "error": self.error}
        return {"line": self.number, **self.result.to_dict()}


class Lines:
    def __init__(self, numbered: Iterable[tuple[int, str | bytes]]):
        self.numbered = numbered  # (line number, text or bytes), read lazily
        self.blank = 0  # lines skipped as blank
        self.first_blank: list[int] = []  # the numbers of the first BLANK_LISTED of them
        self.read = 0  # non-blank lines read so far
        self.damaged = 0  # lines that failed on damaged data (DataError), not on their own text

    def results(self, compute: Callable[[str | bytes], object]) -> Iterator[Line]:
        for number, text in self.numbered:
            if not text.strip():
                self.blank += 1
                if len(self.first_blank) < BLANK_LISTED:
                    self.first_blank.append(number)
                continue
            self.read += 1
            try:
                yield Line(number, compute(text))
            except AttnError as e:
                self.damaged += isinstance(e, DataError)
                yield Line(number, error=str(e))

    def exit_code(self) -> int:
        """What a run whose lines failed exits with: 1 if any line met damaged data (a file to fix), else 2 (bad lines)."""
        return DataError.exit_code if self.damaged else 2

    def blank_note(self) -> str | None:
        """One line saying which lines were skipped as blank, or None."""
        if not self.blank:
            return None
        shown = ", ".join(map(str, self.first_blank)) + (", ..." if self.blank > len(self.first_blank) else "")
        return f"skipped {self.blank:,} blank line{'s' if self.blank != 1 else ''} ({shown})"
