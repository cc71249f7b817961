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
    "qwen3": "qwen3",
    "phi3": "phi3",
    "gemma2": "gemma2",
    "gemma3_text": "gemma3",
}


def family(model_type, where: str = "config.json"):
    """The family module for a config's model_type; anything else is one line saying what is supported."""
    if model_type is not None and not isinstance(model_type, str):
        raise DataError(f"{where}: model_type must be a string such as \"bert\" or \"gpt2\", not {shown(model_type)}")
    if model_type not in FAMILIES:
        known = "; ".join(f"{name} ({describe(name)})" for name in FAMILIES)
        raise DataError(f"{where}: model_type {model_type!r} is not supported; attn runs {known}")
    return importlib.import_module(f"{__name__}.{FAMILIES[model_type]}")


def describe(name: str) -> str:
    return importlib.import_module(f"{__name__}.{FAMILIES[name]}").SHORT


# --- where a checkpoint keeps a tensor: the entries of a family's TENSORS -------------------------------


class Stored:
    """Source names of one canonical tensor and how to lay it out: "linear" ([out, in], as torch's
    Linear keeps it: transposed to [in, out]), "conv1d" ([in, out] already, GPT-2's Conv1D), "vector"
    or "table" (as stored). Several names are concatenated along the output axis (Q, K, V into one
    matrix); `alternatives` are older spellings of a single name (BERT's gamma/beta)."""

    __slots__ = ("names", "layout", "alternatives", "part")

    def __init__(self, names: tuple, layout: str, alternatives: tuple = (), part: tuple | None = None):
        self.names, self.layout, self.alternatives = names, layout, alternatives
        self.part = part  # (i, k): the i-th of k equal blocks of the output rows of one stored tensor (Phi-3's fused gate_up), or None


def linear(*names: str, part: tuple | None = None) -> Stored:
    return Stored(names, "linear", part=part)


def conv1d(*names: str) -> Stored:
    return Stored(names, "conv1d")


def vector(*names: str, alternatives: tuple = ()) -> Stored:
    return Stored(names, "vector", alternatives)


def table(name: str) -> Stored:
    return Stored((name,), "table")


# --- reading config.json: every value attn uses is checked for its type -----------------------------

MAX_SIZE = 2**31 - 1  # the largest layer count, size or vocabulary a config may give


def shown(value) -> str:
    """A config value as its JSON text, cut to fit a one-line message."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=True)
    except (ValueError, RecursionError, TypeError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def config_int(config: dict, *keys: str, where: str = "config.json", default: int | None = None) -> int:
    """The first of `keys` the config has (its other names must agree), a positive whole number (JSON 12, not 12.0 or "12")."""
    given = [key for key in keys if config.get(key) is not None]
    if not given:
        if default is not None:
            return default
        raise DataError(f"{where}: no {' or '.join(keys)}")
    value = config[given[0]]
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_SIZE:
        raise DataError(f"{where}: {given[0]} must be a whole number from 1 to {MAX_SIZE:,}, not {shown(value)}")
    for other in given[1:]:
        if config[other] != value:
            raise DataError(f"{where}: {given[0]} is {value} but {other} is {shown(config[other])}; they name one number")
    return value


def config_float(config: dict, key: str, default: float | None, *, low: float, high: float, where: str = "config.json") -> float:
    value = config.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value < high:  # NaN fails the range too
        raise DataError(f"{where}: {key} must be a number from {low:g} to {high:g}, not {shown(value)}")
    return float(value)


def config_str(config: dict, key: str, default: str, choices, *, where: str = "config.json") -> str:
    value = config.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, str):
        raise DataError(f"{where}: {key} must be a string, not {shown(value)}")
    if value not in choices:
        raise DataError(f"{where}: {key} {value!r} is not supported ({', '.join(choices)})")
    return value


def config_bool(config: dict, key: str, default: bool, *, where: str = "config.json") -> bool:
    value = config.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise DataError(f"{where}: {key} must be true or false, not {shown(value)}")
    return value
