"""How many threads OpenBLAS (NumPy's BLAS) uses for a checkpoint's forward pass.

A short sentence's matrix products are small: spread over a second thread they finish no sooner on
an idle machine, and on a busy one the threads wait for each other (a 10-token forward pass took
three times as long with two threads as with one, measured on a loaded 2-core machine). So for
short inputs attn asks OpenBLAS for one thread, unless the environment already says how many
(OPENBLAS_NUM_THREADS, OMP_NUM_THREADS): then that is what it gets.
"""

import ctypes
import glob
import os
from functools import cache

SMALL = 64  # tokens: up to this many, one thread


@cache
def _library():
    """NumPy's OpenBLAS (scipy-openblas, bundled with the wheel), or None where NumPy uses another BLAS."""
    import numpy

    for pattern in ("numpy.libs/libscipy_openblas*.so*", "numpy/.dylibs/libscipy_openblas*.dylib"):
        for path in glob.glob(os.path.join(os.path.dirname(numpy.__file__), os.pardir, pattern)):
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads"):
                if hasattr(lib, name):
                    return getattr(lib, name)
    return None


def threads_for(n_tokens: int) -> None:
    """One BLAS thread for a short input, unless the environment chose a number."""
    if os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or n_tokens > SMALL:
        return
    setter = _library()
    if setter is not None:
        setter(1)
