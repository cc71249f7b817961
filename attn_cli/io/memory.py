"""What a sentence's n x n matrices will cost, checked before they are allocated.

A sentence of n tokens gives each head an n x n matrix (weights; scores too with --stage): as
arrays, then as rows of JSON numbers or table cells. Measured on inspect (weights of 1,000 and
2,000 tokens, one and two heads, JSON and the terminal view), that is about 170 bytes a cell
from the arrays to the text; BYTES_PER_CELL leaves a margin.
"""

from attn_cli.errors import InputError

BYTES_PER_CELL = 200
MEMORY_SHARE = 0.5  # of the memory available, what one sentence may take
STANDARD_TOKENS = 512  # inspect's default --max-tokens: never refused up front
ALWAYS_FITS = 16 << 20  # matrices this small are not checked: no system has less free, and asking costs a file read per streamed line
CHARACTERS_PER_POSITION = 32  # a model's line may hold this many characters per position (text averages 1.5 to 5 a token)
MAX_LINE_BYTES = 1 << 18  # UTF-8 bytes of a line, whatever positions a file claims: ~60k tokens of text, beyond what a
# trace of n x n matrices holds; a byte-level BPE takes 0.9 s and 120 MB on this much, 3.4 s and 400 MB on 1 MB (one word)


def available_memory() -> int | None:
    """Bytes this process may still allocate: the system's available memory, or what is left under
    an address-space limit (ulimit -v) if that is smaller. None where neither can be read."""
    found = []
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY:
            with open("/proc/self/statm", encoding="ascii") as f:
                used = int(f.read().split()[0]) * resource.getpagesize()
            found.append(max(limit - used, 0))
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return min(found) if found else None


def tokens_that_fit(matrices: int, budget: int) -> int:
    """The most tokens whose `matrices` n x n matrices fit in `budget` bytes."""
    return int((budget / (matrices * BYTES_PER_CELL)) ** 0.5)


def check_memory(n: int, matrices: int, what: str) -> None:
    """Refuse, before allocating them, `matrices` n x n matrices that would not fit in memory (InputError
    with the number of tokens that would)."""
    needed = n * n * matrices * BYTES_PER_CELL
    if needed <= ALWAYS_FITS:
        return
    available = available_memory()
    if available is None:
        return
    budget = available * MEMORY_SHARE
    if needed > budget:
        raise InputError(
            f"{n:,} tokens need about {_size(needed)} for the n x n matrices of {what}, and about {_size(available)} "
            f"is free: at most {tokens_that_fit(matrices, budget):,} tokens fit; split the text"
        )


def check_line_length(text: str, positions: int, what: str) -> None:
    """Refuse, before a model's tokenizer sees it, a line of more than MAX_LINE_BYTES, or longer than
    CHARACTERS_PER_POSITION characters for each of the model's `positions` (InputError): a file may claim any
    number of positions. A tokenizer holds 85 to 250 bytes per character
    of its input (measured with MiniLM's WordPiece and tiny-gpt2's byte-level BPE: a 10 MB line takes
    up to 2.4 GB) before it can say how many tokens there are, for a line far longer than any sentence
    that fits the positions."""
    limit = positions * CHARACTERS_PER_POSITION
    if len(text) > limit:
        raise InputError(f"a line of {len(text):,} characters, more than the {limit:,} ({CHARACTERS_PER_POSITION} for each of "
                         f"the {positions:,} positions) that {what} reads; a line holds one sentence")
    size = len(text) if len(text) * 4 <= MAX_LINE_BYTES or text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_LINE_BYTES:
        raise InputError(f"a line of {size:,} bytes, more than the {MAX_LINE_BYTES:,} a line may hold; a line holds one sentence")


def check_max_tokens(max_tokens: int, matrices: int, what: str) -> None:
    """Refuse up front a --max-tokens larger than memory allows (InputError naming the limit that fits)."""
    available = available_memory()
    if available is not None and max_tokens > STANDARD_TOKENS:
        fit = tokens_that_fit(matrices, available * MEMORY_SHARE)
        if max_tokens > fit:
            raise InputError(f"--max-tokens {max_tokens:,} is more than memory allows for {what}: "
                             f"about {_size(available)} is free, enough for {fit:,} tokens (--max-tokens {fit})")


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.0f} TB"
