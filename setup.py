"""attn's two optional C modules; everything else is in pyproject.toml.

- attn_cli/models/sources/_quants.c: GGUF's block types dequantized (quants.py's fast path);
- attn_cli/models/sources/_gguf_strings.c: a GGUF string array read (gguf_file.py's fast path).

`optional=True`: where no C compiler is found, the install goes on without them, and attn does the same in Python.
-ffp-contract=off: no multiply and add fused into one rounding, so its values are the NumPy path's bits."""

import os

from setuptools import Extension, setup

flags = [] if os.name == "nt" else ["-O3", "-ffp-contract=off"]
setup(ext_modules=[Extension(f"attn_cli.models.sources.{name}", [f"attn_cli/models/sources/{name}.c"], extra_compile_args=flags, optional=True)
                   for name in ("_quants", "_gguf_strings")])
