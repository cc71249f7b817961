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


class Notice(UserWarning):
    """Not an error but something the reader should hear about (--focus naming a word of several tokens): warned by the
    library, said by the CLI in one line on stderr."""


def is_panic(e: BaseException) -> bool:
    """A Rust panic inside a compiled extension (tokenizers, safetensors): pyo3's PanicException, which
    derives from BaseException, so `except Exception` lets it through."""
    return type(e).__name__ == "PanicException"


class native_stderr_held:
    """File descriptor 2 sent to a scratch file while a compiled library runs, and what it wrote passed on after, unless
    the block ends in a Rust panic: the panic's own report (its message, a note, perhaps a backtrace of hundreds of
    lines) is then dropped, and the caller says it in one line. Cheap: two dup2 calls, one scratch file a process."""

    scratch = None

    def __enter__(self):
        import os
        import tempfile

        try:
            if native_stderr_held.scratch is None:
                native_stderr_held.scratch = tempfile.TemporaryFile()
            self.saved = os.dup(2)
            os.dup2(native_stderr_held.scratch.fileno(), 2)
        except OSError:
            self.saved = None
        return self

    def __exit__(self, kind, e, tb):
        import os

        if self.saved is None:
            return False
        os.dup2(self.saved, 2)
        os.close(self.saved)
        scratch = native_stderr_held.scratch
        written = os.lseek(scratch.fileno(), 0, os.SEEK_CUR)
        if written:
            if e is None or not is_panic(e):
                os.lseek(scratch.fileno(), 0, os.SEEK_SET)
                os.write(2, os.read(scratch.fileno(), written))
            os.ftruncate(scratch.fileno(), 0)
            os.lseek(scratch.fileno(), 0, os.SEEK_SET)
        return False


def reason(e: BaseException) -> str:
    """Why reading a damaged file failed, in a few words: the first line of the library's own message."""
    if isinstance(e, EOFError):
        return "it ends early; truncated?"
    if isinstance(e, MemoryError):
        return "it claims to hold more than memory can"
    if isinstance(e, (SyntaxError, RecursionError)) or type(e).__name__ == "TokenError":  # a header NumPy could not parse
        return "a damaged header"
    lines = str(e).strip().splitlines()
    text = lines[0] if lines else f"{type(e).__name__}"
    return text if len(text) <= 160 else text[:157] + "..."


MAX_NAMED = 10  # words a message names; the rest are counted
MAX_SHOWN_CHARS = 40  # a longer word is shown cut, with its length


def short(word: str) -> str:
    """repr(word), cut to MAX_SHOWN_CHARS characters (saying how long it was), so a message stays one short line."""
    if len(word) <= MAX_SHOWN_CHARS:
        return repr(word)
    return f"{word[:MAX_SHOWN_CHARS]!r}... ({len(word):,} characters)"


class UnknownWordsError(InputError, KeyError):
    """Words that are not keys of the vectors, with close known spellings where found."""

    def __init__(self, words: list[str], suggestions: dict[str, str] | None = None):
        self.words = words
        self.suggestions = suggestions or {}
        super().__init__(words)

    def __str__(self) -> str:
        parts = []
        for word in self.words[:MAX_NAMED]:
            hint = self.suggestions.get(word)
            parts.append(f"{short(word)} (did you mean {hint!r}?)" if hint else short(word))
        if len(self.words) > MAX_NAMED:
            parts.append(f"and {len(self.words) - MAX_NAMED:,} more")
        noun = "word" if len(self.words) == 1 else "words"
        return f"unknown {noun}: {', '.join(parts)}; use --oov skip|zero to go on without them"
