"""A forward pass's arrays taken from memory the process already has, not from fresh pages of the kernel.

Each layer makes and frees the same arrays ([n, d_ff], a layer's attention weights kept: hundreds of
kilobytes at a paragraph). glibc's malloc maps arrays past its first threshold (128 KiB) on their own
and unmaps them when freed, and gives memory at the top of its heap back to the kernel once more than
its trim threshold lies free there; so each pass maps the memory again, a page fault and 4 KiB zeroed
per page: 3,664 a pass of SmolLM2 over 128 tokens keeping every layer's weights, with the layers held
(tests/test_passes.py counts them; 0 with these thresholds). Arrays past HEAP_ARRAY (a weight matrix,
a long text's matrices) are still mapped and unmapped on their own: with SmolLM2's weights in the heap
too (a 16 MiB limit), its pass over 16 tokens on one BLAS thread took 156-163 ms against 107-137 ms.
"""

import ctypes
import sys

HEAP_ARRAY = 1 << 20  # bytes: arrays up to this size come from the heap; below a weight matrix (SmolLM2's: 1.3 to 3.5 MiB)
HEAP_FREE = 64 << 20  # bytes free at the heap's top before glibc returns them to the kernel
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)

_set: bool | None = None  # what reuse_heap found, once it has run


def reuse_heap() -> bool:
    """Set glibc's thresholds once per process; False where there is no glibc (macOS, Windows, musl) or it refused."""
    global _set
    if _set is None:
        _set = _thresholds_set()
    return _set


def _thresholds_set() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # no mallopt: not glibc
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, HEAP_ARRAY)) and bool(mallopt(M_TRIM_THRESHOLD, HEAP_FREE))
