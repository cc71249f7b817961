"""One result object per command: it feeds both the JSON output (`to_dict`) and the Rich view.

One module per command family; add new results to the module they belong to (softmax's result is
in attn_cli.lesson, similarity's in attn_cli.similarity). `results.NAME` and
`from attn_cli.results import NAME` read only the module that holds NAME: with
PYTHONDONTWRITEBYTECODE each module read is compiled on every run, and each dataclass costs its
creation too.
"""

import importlib

MODULES = ("inspection", "analogy", "heads", "vectors")
WHERE = {
    "VectorsInfo": "vectors", "VectorsConverted": "vectors",
    "ProbeScore": "analogy", "Neighbor": "analogy", "Answer": "analogy", "AnalogyResult": "analogy",
    "HeadView": "inspection", "SenseRow": "inspection", "InspectResult": "inspection",
    "HeadInfo": "heads", "HeadsList": "heads", "HeadTrained": "heads", "HeadsEval": "heads",
}  # fmt: skip


def __getattr__(name: str):
    """A result (or any other name of the modules) from the one module that holds it."""
    for module in [WHERE[name]] if name in WHERE else MODULES:
        found = getattr(importlib.import_module(f"{__name__}.{module}"), name, None)
        if found is not None:
            return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
