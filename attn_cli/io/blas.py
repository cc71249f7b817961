"""How many threads OpenBLAS (NumPy's BLAS) uses for a checkpoint's forward pass.

A short sentence's matrix products are small: spread over a second thread they finish no sooner on
an idle machine, and on a busy one the threads wait for each other (a 10-token forward pass took
three times as long with two threads as with one, measured on a loaded 2-core machine). So for
short inputs attn asks OpenBLAS for one thread. Longer ones get as many as the cores that were idle when attn
started, at most OpenBLAS's own default: with the cores busy, OpenBLAS's threads wait for each other far longer
than the work takes (a 2,420-token pass on a busy 2-core machine: 111 s with two threads, 24 s with one).
--threads N (ATTN_THREADS) sets the number for every pass; else, if the environment already says how many
(OPENBLAS_NUM_THREADS, OMP_NUM_THREADS), that is what it gets. The pass is told the number, since how a product
is best asked of BLAS depends on it (core.blocks.apply_linear).
"""

import ctypes
import glob
import os
from functools import cache

SMALL = 64  # tokens: up to this many, one thread
asked: int | None = None  # --threads N (ATTN_THREADS): every pass's number, whatever its length


class _OpenBLAS:
    def __init__(self, get, set_):
        self.get, self.set = get, set_
        self.default = get()  # its own choice (the cores it found), read before attn sets anything


@cache
def _library() -> _OpenBLAS | None:
    """NumPy's OpenBLAS (scipy-openblas, bundled with the wheel), or None where NumPy uses another BLAS."""
    import numpy

    for pattern in ("numpy.libs/libscipy_openblas*.so*", "numpy/.dylibs/libscipy_openblas*.dylib"):
        for path in glob.glob(os.path.join(os.path.dirname(numpy.__file__), os.pardir, pattern)):
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""), ("openblas", "")):
                get, set_ = f"{prefix}_get_num_threads{suffix}", f"{prefix}_set_num_threads{suffix}"
                if hasattr(lib, get) and hasattr(lib, set_):
                    return _OpenBLAS(getattr(lib, get), getattr(lib, set_))
    return None


def choose(threads: int | None) -> None:
    """--threads N: the number of every pass from now on (None: attn's own choice again)."""
    global asked
    asked = threads


def idle_cores() -> int:
    """The cores this process may run on less the 1-minute load average, rounded: at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average here: every core taken as idle
        busy = 0.0
    return max(1, cores - round(busy))


@cache
def long_default() -> int:
    """A long pass's threads: OpenBLAS's default, or fewer when cores were busy as attn started (read once: attn's
    own passes would count as load later)."""
    library = _library()
    return 0 if library is None else max(1, min(library.default, idle_cores()))


def threads_for(n_tokens: int) -> int:
    """The BLAS threads of a pass over n_tokens, set and returned: --threads N if given, else the environment's number
    if it chose one, else one for a short input and long_default() for a longer one. 0: not known (another BLAS, an
    unreadable number)."""
    if asked is not None:
        library = _library()
        if library is None:
            return 0
        library.set(asked)
        return library.get()  # OpenBLAS's own limit may be lower
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):  # OpenBLAS's own order
        if chosen := os.environ.get(name):
            try:
                return max(0, int(chosen.split(",")[0]))
            except ValueError:
                return 0
    library = _library()
    if library is None:
        return 0
    wanted = 1 if n_tokens <= SMALL else long_default()
    library.set(wanted)
    return wanted


def product_threads() -> int:
    """The threads of products straight from a quantized file's blocks (models.sources.products), which BLAS does not
    run: --threads N if given, else the environment's number if it chose one, else long_default(), the cores idle
    when attn started. Their rows are claimed a chunk at a time, so a thread that a busy core holds back costs one chunk."""
    if asked is not None:
        return max(1, asked)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if chosen := os.environ.get(name):
            try:
                return max(1, int(chosen.split(",")[0]))
            except ValueError:
                return 1
    return max(1, long_default() or idle_cores())
