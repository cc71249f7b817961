"""The optional C decoder of GGUF's block types (attn_cli/models/sources/_quants.c); everything else is in pyproject.toml.

`optional=True`: where no C compiler is found, the install goes on without it, and quants.py decodes in NumPy.
-ffp-contract=off: no multiply and add fused into one rounding, so its values are the NumPy path's bits."""

import os

from setuptools import Extension, setup

flags = [] if os.name == "nt" else ["-O3", "-ffp-contract=off"]
setup(ext_modules=[Extension("attn_cli.models.sources._quants", ["attn_cli/models/sources/_quants.c"], extra_compile_args=flags, optional=True)])
