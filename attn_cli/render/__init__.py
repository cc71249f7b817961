"""Rich views of the result objects, one module per command family. Imported only when output is
for a person.

`render.NAME` reads only the module that holds NAME (`render.inspect_view` never compiles the
softmax or model views): with PYTHONDONTWRITEBYTECODE every module read is compiled on every run.
"""

import importlib

MODULES = ("base", "lesson", "vectors", "inspection", "heads", "models")
VIEWS = {
    "softmax_view": "lesson", "analogy_view": "lesson", "similarity_view": "lesson",
    "vectors_info": "vectors",
    "inspect_view": "inspection", "Heatmap": "inspection",
    "heads_list": "heads", "head_trained": "heads", "heads_eval": "heads",
    "model_view": "models", "model_info": "models", "heads_found": "models",
}  # fmt: skip


def __getattr__(name: str):
    """A view (or any other name of the modules) from the one module that holds it."""
    for module in [VIEWS[name]] if name in VIEWS else MODULES:
        found = getattr(importlib.import_module(f"{__name__}.{module}"), name, None)
        if found is not None:
            return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
