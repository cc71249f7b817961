"""Rich views of the result objects, one module per command family. Imported only when output is
for a person.

`render.NAME` reads only the module that holds NAME (`render.inspect_view` never compiles the
softmax or model views): with PYTHONDONTWRITEBYTECODE every module read is compiled on every run.
"""

from attn_cli.lazy import module_getattr

MODULES = ("base", "softmax", "lesson", "vectors", "inspection", "heads", "models")
VIEWS = {
    "softmax_view": "softmax", "analogy_view": "lesson", "similarity_view": "lesson",
    "vectors_info": "vectors",
    "inspect_view": "inspection", "Heatmap": "inspection",
    "heads_list": "heads", "head_trained": "heads", "heads_eval": "heads",
    "model_view": "models", "model_info": "models", "heads_found": "models",
}  # fmt: skip


__getattr__ = module_getattr(__name__, VIEWS, MODULES)
