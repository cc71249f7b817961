"""Print an OPENBLAS_CORETYPE this CPU can run that differs from the kernel OpenBLAS picks by itself.

.ci/run runs the float-sensitive tests again under it, so that a test that depends on the BLAS
kernel's rounding fails in CI, not on a user's machine. Exits 1 if no other kernel can be had.
"""

import ctypes
import glob
import os
import subprocess
import sys

CANDIDATES = {"Haswell": {"avx2", "fma"}, "Sandybridge": {"avx"}, "Nehalem": {"sse4_2"}, "Prescott": {"sse3"}}  # what each kernel needs


def corename() -> str:
    import numpy

    libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs", "libscipy_openblas*.so"))
    if not libs:
        sys.exit("no OpenBLAS beside numpy (numpy.libs/libscipy_openblas*.so)")
    name = ctypes.CDLL(libs[0]).scipy_openblas_get_corename64_
    name.restype = ctypes.c_char_p
    return name().decode()


def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        return set()


def kernel_under(coretype: str) -> str:
    code = f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); import other_blas_kernel as k; print(k.corename())"
    done = subprocess.run([sys.executable, "-c", code], env=os.environ | {"OPENBLAS_CORETYPE": coretype}, capture_output=True, text=True)
    return done.stdout.strip()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--current":
        print(corename())
        return
    own, flags = corename(), cpu_flags()
    for coretype, needs in CANDIDATES.items():
        if needs <= flags and coretype.lower() != own.lower() and kernel_under(coretype).lower() == coretype.lower():
            print(coretype)
            return
    sys.exit(f"no OpenBLAS kernel other than {own} runs on this CPU")


if __name__ == "__main__":
    main()
