"""The model families attn runs: each is one module of data (config -> Spec, and its tensor names).

A family module has:
- `DESCRIPTION`: one line for `model info` and for the list of what is supported;
- `spec(config) -> Spec`: the config.json keys it reads, checked (see `config_int` and friends);
- `TENSORS`: {canonical name: where the checkpoint keeps it} (see `linear`, `conv1d`, `vector`),
  with "{l}" for the layer; a name a family does not list is a component it does not have.

Adding a family is its module and one line in FAMILIES. Nothing outside this package asks which
family a model is: the runner reads the Spec, and views read what the Spec says.
"""

import importlib

from attn_cli.errors import DataError

FAMILIES = {  # config.json's model_type -> the module that describes it
    "bert": "bert",
    "gpt2": "gpt2",
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
}


def family(model_type, where: str = "config.json"):
    """The family module for a config's model_type; anything else is one line saying what is supported."""
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        known = "; ".join(f"{name} ({describe(name)})" for name in FAMILIES)
        shown = model_type if isinstance(model_type, (str, int, float, type(None))) else type(model_type).__name__
        raise DataError(f"{where}: model_type {shown!r} is not supported; attn runs {known}")
    return importlib.import_module(f"{__name__}.{FAMILIES[model_type]}")


def describe(name: str) -> str:
    return importlib.import_module(f"{__name__}.{FAMILIES[name]}").SHORT


# --- where a checkpoint keeps a tensor: the entries of a family's TENSORS -------------------------------


class Stored:
    """Source names of one canonical tensor and how to lay it out: "linear" ([out, in], as torch's
    Linear keeps it: transposed to [in, out]), "conv1d" ([in, out] already, GPT-2's Conv1D), "vector"
    or "table" (as stored). Several names are concatenated along the output axis (Q, K, V into one
    matrix); `alternatives` are older spellings of a single name (BERT's gamma/beta)."""

    __slots__ = ("names", "layout", "alternatives")

    def __init__(self, names: tuple, layout: str, alternatives: tuple = ()):
        self.names, self.layout, self.alternatives = names, layout, alternatives


def linear(*names: str) -> Stored:
    return Stored(names, "linear")


def conv1d(*names: str) -> Stored:
    return Stored(names, "conv1d")


def vector(*names: str, alternatives: tuple = ()) -> Stored:
    return Stored(names, "vector", alternatives)


def table(name: str) -> Stored:
    return Stored((name,), "table")


# --- reading config.json: every value attn uses is checked for its type -----------------------------


def config_int(config: dict, *keys: str, where: str = "config.json", default: int | None = None) -> int:
    """The first of `keys` that is a positive whole number (JSON 12, not 12.0 or "12")."""
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    if default is not None and all(config.get(key) is None for key in keys):
        return default
    raise DataError(f"{where}: no positive integer {' or '.join(keys)}")


def config_float(config: dict, key: str, default: float | None, *, low: float, high: float, where: str = "config.json") -> float:
    value = config.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value < high:
        raise DataError(f"{where}: {key} {value!r} is not a number from {low:g} to {high:g}")
    return float(value)


def config_str(config: dict, key: str, default: str, choices, *, where: str = "config.json") -> str:
    value = config.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, str) or value not in choices:
        shown = value if isinstance(value, (str, int, float, bool)) else type(value).__name__
        raise DataError(f"{where}: {key} {shown!r} is not supported ({', '.join(choices)})")
    return value


def config_bool(config: dict, key: str, default: bool, *, where: str = "config.json") -> bool:
    value = config.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise DataError(f"{where}: {key} {value!r} is not true or false")
    return value
