"""Rich views of the result objects: one module per view. Imported only when output is for a person.

`views.NAME` reads only the module that holds NAME (`views.softmax_view` never compiles the inspect
views): with PYTHONDONTWRITEBYTECODE every module read is compiled on every run. The views of
`attn inspect` are chosen from their registry in views/inspect.py.
"""

from attn_cli.lazy import module_getattr

MODULES = ("base", "heatmap", "captions", "inspect", "softmax", "lesson", "vectors", "heads", "models", "detect", "stats", "meter", "explain", "generate", "patch", "compare", "compose", "circuit")
WHERE = {
    "softmax_view": "softmax", "analogy_view": "lesson", "similarity_view": "lesson",
    "vectors_info": "vectors",
    "inspect_view": "inspect", "ViewOptions": "inspect", "Heatmap": "heatmap", "abbreviate": "heatmap", "weight_text": "heatmap", "short_weight_text": "heatmap",
    "heads_list": "heads", "head_trained": "heads", "heads_eval": "heads",
    "senses_eval": "meter",
    "model_info": "models", "heads_found": "models", "key_label": "base", "FitTable": "base", "Bar": "base",
    "heads_detected": "detect", "head_stats": "stats", "explain_view": "explain", "generate_view": "generate", "patch_view": "patch", "compare_view": "compare",
    "compose_view": "compose", "circuit_view": "circuit",
}  # fmt: skip


__getattr__ = module_getattr(__name__, WHERE, MODULES)
