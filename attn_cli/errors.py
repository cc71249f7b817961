"""Exceptions the library raises; the CLI alone turns them into a message and an exit code."""


class AttnError(Exception):
    """Base class. `exit_code` is what the CLI exits with."""

    exit_code = 1


class InputError(AttnError):
    """Bad usage or bad input from the user (exit 2)."""

    exit_code = 2


class DataError(AttnError):
    """A file that cannot be read, is corrupt or has the wrong shape (exit 1)."""

    exit_code = 1


class UnknownWordsError(InputError, KeyError):
    """Words that are not keys of the vectors, with close known spellings where found."""

    def __init__(self, words: list[str], suggestions: dict[str, str] | None = None):
        self.words = words
        self.suggestions = suggestions or {}
        super().__init__(words)

    def __str__(self) -> str:
        parts = []
        for word in self.words:
            hint = self.suggestions.get(word)
            parts.append(f"{word!r} (did you mean {hint!r}?)" if hint else repr(word))
        noun = "word" if len(self.words) == 1 else "words"
        return f"unknown {noun}: {', '.join(parts)}; use --oov skip|zero to go on without them"
