"""attn's two optional C modules; everything else is in pyproject.toml.

- attn_cli/models/sources/_quants.c: GGUF's block types dequantized (quants.py's fast path);
- attn_cli/models/sources/_gguf_strings.c: a GGUF string array read (gguf_file.py's fast path);
- attn_cli/models/sources/_products.c: x W^T straight from a GGUF tensor's blocks (products.py's fast path).

`optional=True`: where no C compiler is found, the install goes on without them, and attn does the same in Python.
-ffp-contract=off: no multiply and add fused into one rounding, so the decoders' values are the NumPy path's bits. The
products are sums in another order than BLAS's anyway (equal to float32 rounding, not to the bit): they may fuse.
-pthread: the products' pool of threads."""

import os

from setuptools import Extension, setup

exact = [] if os.name == "nt" else ["-O3", "-ffp-contract=off"]
fast = [] if os.name == "nt" else ["-O3", "-pthread"]
setup(ext_modules=[*(Extension(f"attn_cli.models.sources.{name}", [f"attn_cli/models/sources/{name}.c"], depends=["attn_cli/models/sources/_blocks.h"],
                               extra_compile_args=exact, optional=True)
                     for name in ("_quants", "_gguf_strings")),
                   Extension("attn_cli.models.sources._products", ["attn_cli/models/sources/_products.c"], depends=["attn_cli/models/sources/_products_rows.h", "attn_cli/models/sources/_blocks.h"],
                             extra_compile_args=fast, extra_link_args=fast[1:], optional=True)])
