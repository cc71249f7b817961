"""How every result writes its numbers: rounded to a few significant digits, masked cells as null, big matrices a block at a time."""

from functools import lru_cache

WEIGHT_DIGITS = 7  # 7 significant digits keep every row's sum within 5e-7 of 1
NUMBER_DIGITS = 6  # scores, norms, embeddings
SINK_TOKEN = "∅"  # the key that writes nothing (a head with a sink), where a key token is named


_TENS: list = []  # [10^0 .. 10^22] as one array, built on first use


def _powers_of_ten():
    if not _TENS:
        import numpy as np

        _TENS.append(np.array([float(10**i) for i in range(23)]))  # exact: every 10^i up to 10^22 is a double
    return _TENS[0]


def significant(a, digits):
    """`a` rounded to `digits` significant digits (an int, or one per element); floats that print
    short (0.42, not 0.41999...). Zero, inf and NaN pass through unchanged.
    """
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    size = np.abs(a)
    exponent = np.log10(size, out=np.full_like(size, -np.inf), where=size > 0)  # 0 and NaN -> -inf: 22 decimals
    decimals = np.fmin(np.fmax(digits - 1 - np.floor(exponent), 0), 22)  # inf -> 0 decimals
    scale = _powers_of_ten()[decimals.astype(np.intp)]
    return np.rint(a * scale) / scale


@lru_cache(maxsize=64)
def rounded_score(x: float) -> float:
    """A head's fixed number (its sink's score) as JSON writes it: rounded once, not on every line."""
    return float(significant(x, NUMBER_DIGITS))


def with_nulls(a, hidden) -> list:
    """Rows of numbers with None where `hidden` is True (masked entries)."""
    if hidden is None:
        return a.tolist()
    cells = a.astype(object)  # the same Python floats as a.tolist()
    cells[hidden] = None
    return cells.tolist()


MATRIX_BLOCK = 1 << 16  # numbers of an [n, n] matrix rounded and written at a time by a streamed document


def streamed(matrix, digits: int, hidden=None):  # [n, n] -> output.Rows of its rows, rounded as they are written
    """The rows of `matrix` rounded to `digits` significant digits (None where `hidden`), a block at a time."""
    from attn_cli.io.output import Rows

    step = max(1, MATRIX_BLOCK // max(1, matrix.shape[1]))

    def blocks():
        for r0 in range(0, len(matrix), step):
            rows = slice(r0, r0 + step)
            yield with_nulls(significant(matrix[rows], digits), None if hidden is None else hidden[rows])

    return Rows(blocks)


def norms(rows):  # [n, d] -> [n]
    import numpy as np

    return np.linalg.norm(rows, axis=1)


def row_cosines(a, b):  # [..., d], [..., d] -> [...]: cos(a_i, b_i), 0 where either row is zero
    import numpy as np

    dots = np.asarray(np.sum(a * b, axis=-1))
    norms = np.asarray(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
