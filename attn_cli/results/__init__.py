"""One result object per command: it feeds both the JSON output (`to_dict`) and the Rich view.

One module per command family; add new results to the module they belong to (softmax's result is
in attn_cli.lesson, similarity's in attn_cli.similarity). `results.NAME` and
`from attn_cli.results import NAME` read only the module that holds NAME: with
PYTHONDONTWRITEBYTECODE each module read is compiled on every run, and each dataclass costs its
creation too.
"""

from attn_cli.lazy import module_getattr

MODULES = ("inspect", "numbers", "senses", "analogy", "heads", "vectors", "models", "detect", "stats", "meter", "explain")
WHERE = {
    "VectorsInfo": "vectors", "VectorsConverted": "vectors",
    "ProbeScore": "analogy", "Neighbor": "analogy", "Answer": "analogy", "AnalogyResult": "analogy",
    "HeadView": "inspect", "InspectResult": "inspect", "SenseRow": "senses", "SINK_TOKEN": "numbers",
    "significant": "numbers", "row_cosines": "numbers", "WEIGHT_DIGITS": "numbers", "NUMBER_DIGITS": "numbers",
    "ModelInfo": "models", "ResidualRow": "models", "HeadsFound": "models",
    "SenseMeter": "meter", "MeterReading": "meter", "SensesEval": "meter",
    "HeadInfo": "heads", "HeadsList": "heads", "HeadTrained": "heads", "HeadsEval": "heads",
    "HeadsDetected": "detect", "HeadStats": "stats", "ExplainResult": "explain",
}  # fmt: skip


__getattr__ = module_getattr(__name__, WHERE, MODULES)
