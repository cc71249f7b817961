"""The two kinds of exact comparison the tests make. Every other comparison of floats has a stated tolerance
(tests/test_float_comparisons.py fails on a new exact one): a recomputed float depends on the BLAS kernel, the
thread count and where in memory its inputs lie.

- assert_copied: floats no arithmetic touched, only read from a file, copied, gathered, cast or parsed from text
  (a decimal number is read as the nearest float by every correct parser).
- assert_same_ids: integers and booleans (ids, counts, masks); refuses floats, so it cannot hide a recomputed one.
"""

import numpy as np


def assert_copied(got, want) -> None:
    """Equal to the last bit (NaN where NaN): values read, copied, gathered, cast or parsed, never computed."""
    np.testing.assert_array_equal(got, want, strict=False)


def assert_same_ids(got, want) -> None:
    """Integer or boolean arrays equal element by element; a float array is refused."""
    got, want = np.asarray(got), np.asarray(want)
    for a in (got, want):
        assert a.dtype.kind in "biu", f"assert_same_ids compares ids, counts and masks, not {a.dtype}"
    np.testing.assert_array_equal(got, want)
