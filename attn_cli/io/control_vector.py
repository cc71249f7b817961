"""llama.cpp's control vectors: a .gguf file of one F32 tensor `direction.{l}` [d_model] per layer, and the edits that steer with it.

llama.cpp's numbering (common_control_vector_load in common/common.cpp, llama_adapter_cvec in src/llama-adapter.cpp): the
loader reads `direction.{l}` for l = 1 .. n_layer - 1 into the adapter's tensors[l] (there is no direction.0: "layer 0 is
never present"), and the graph adds tensors[il] to the output of layer il, il counted from 0, after that layer's residual
additions. So direction.l is added to resid_post[l] here, and resid_post[0] is never steered. Metadata, as repeng writes it:
general.architecture "controlvector", controlvector.model_hint (the model's architecture, "llama") and
controlvector.layer_count (the tensors written).
"""

import math
import tempfile
from pathlib import Path

import numpy as np

from attn_cli.errors import DataError, InputError

ARCHITECTURE = "controlvector"
FLOAT_TYPES = {0: "<f4", 1: "<f2"}  # ggml F32, F16


def write_control_vector(path, directions: np.ndarray, model_hint: str, *, force: bool) -> Path:
    """`directions` [L, d] as direction.1 .. direction.{L-1} (llama.cpp has no direction.0), F32, written atomically."""
    import gguf

    from attn_cli.io.atomic import write_atomic

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder) / "cv.gguf"
        writer = gguf.GGUFWriter(str(tmp), ARCHITECTURE)
        writer.add_string("controlvector.model_hint", model_hint)
        writer.add_uint32("controlvector.layer_count", len(directions) - 1)
        for l in range(1, len(directions)):
            writer.add_tensor(f"direction.{l}", np.ascontiguousarray(directions[l], dtype=np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        data = tmp.read_bytes()
    return write_atomic(path, lambda f: f.write(data), force=force)


def read_control_vector(path) -> tuple[str | None, dict[int, np.ndarray]]:
    """(model_hint or None, {l: [d] float32}) of a control-vector file; a damaged file or a non-finite value is a DataError."""
    from attn_cli.models.sources.gguf_file import read_file

    file = read_file(path)
    hint = file.metadata.get("controlvector.model_hint")
    vectors = {}
    for name, info in file.tensors.items():
        head, _, index = name.partition(".")
        if head != "direction" or not index.isdigit():
            continue
        if info.type_id not in FLOAT_TYPES or len(info.dims) != 1:
            raise DataError(f"{path}: {name} is not a vector of F32 or F16 values")
        v = np.frombuffer(file.raw(info), dtype=FLOAT_TYPES[info.type_id], count=info.dims[0]).astype(np.float32)
        if not np.all(np.isfinite(v)):
            raise DataError(f"{path}: {name} holds NaN or infinite values")
        vectors[int(index)] = v
    if not vectors:
        raise DataError(f"{path}: no direction.N tensors in it: not a control vector")
    return (hint if isinstance(hint, str) else None), vectors


def parse_steer(text: str) -> tuple[str, float]:
    """FILE.gguf[:SCALE] or POS|NEG[:SCALE] -> (file or pair, scale); a scale that is not a finite number is an InputError.
    An inline pair whose tail after ":" is no number keeps the ":" as its text's ("note: cats|note: cat"), scale 1."""
    path, sep, tail = text.rpartition(":")
    if not sep or Path(text).is_file():
        return text, 1.0
    try:
        scale = float(tail)
    except ValueError:
        if "|" in text:
            return text, 1.0
        raise InputError(f"--steer {text!r}: give FILE.gguf or FILE.gguf:SCALE, SCALE a number such as 4 or -2.5") from None
    if not math.isfinite(scale):
        raise InputError(f"--steer {text!r}: the scale must be a finite number, not {tail}")
    return path, scale


def inline_pair(given: str) -> tuple[str, str] | None:
    """(POS, NEG) of an inline --steer "POS|NEG"; None for a file (an existing file is a file, whatever its name)."""
    if "|" not in given or Path(given).is_file():
        return None
    positive, _, negative = given.partition("|")
    if not positive.strip() or not negative.strip() or "|" in negative:
        raise InputError(f"--steer {given!r}: give two texts, POS|NEG (one |), such as \"the cats|the cat\"")
    if positive == negative:
        raise InputError(f"--steer {given!r}: the same text twice: no direction to add (zero norm)")
    return positive, negative


def inline_vectors(model, positive: str, negative: str) -> dict[int, np.ndarray]:
    """The direction of one contrast pair, as `attn direction POS NEG` finds it: h(POS)[l] − h(NEG)[l] at the last token,
    for l = 1 .. L − 1 (where a control vector has its direction.l)."""
    from attn_cli.analysis.direction import last_streams

    if model.predicts != "next":
        raise InputError(f"--steer {positive}|{negative}: {model.name} is not a decoder; a direction here is read at a decoder's last token")
    diff = last_streams(model, positive) - last_streams(model, negative)  # [L, d]
    if not np.any(diff[1:]):
        raise InputError(f"--steer {positive}|{negative}: the two texts give the same stream at every layer: no direction (zero norm)")
    return {l: diff[l].astype(np.float32) for l in range(1, model.n_layers)}


def parse_layers(layer: int | None, layers: str | None) -> tuple[int | None, int | None] | None:
    """--steer-layer L or --steer-layers A:B (both included, as llama.cpp's --control-vector-layer-range; "A:" to the last,
    ":B" from the first): (A, B), an end None where open; None: every layer. Checked against the model in steer_edits."""
    if layer is not None and layers is not None:
        raise InputError("give --steer-layer L or --steer-layers A:B, not both")
    if layer is not None:
        return layer, layer
    if layers is None:
        return None
    first, colon, last = layers.partition(":")
    try:
        a, b = (int(first) if first.strip() else None), (int(last) if last.strip() else None)
    except ValueError:
        a = b = colon = None
    if not colon:
        raise InputError(f"--steer-layers {layers!r}: give A:B, two layer numbers (both included), such as 10:20")
    return a, b


def layer_span(model, span) -> tuple[int, int]:
    """(A, B) of parse_layers within the layers a steer reaches: 1 .. L − 1 (llama.cpp never steers layer 0)."""
    top = model.n_layers - 1
    a, b = (1, top) if span is None else (1 if span[0] is None else span[0], top if span[1] is None else span[1])
    if not 1 <= a <= b <= top:
        shown = f"--steer-layer {a}" if span[0] == span[1] else f"--steer-layers {'' if span[0] is None else a}:{'' if span[1] is None else b}"
        raise InputError(f"{shown}: {model.name} is steered at layers 1 to {top} (never layer 0, as llama.cpp), A not after B")
    return a, b


def check_fits(model, path, hint: str | None, vectors: dict) -> None:
    if hint is not None and hint != model.spec.family:
        raise InputError(f"--steer {path}: a control vector for a {hint!r} model; {model.name} is {model.spec.family!r}")
    widths = {len(v) for v in vectors.values()}
    if widths != {model.d_model}:
        raise InputError(f"--steer {path}: vectors of width {', '.join(map(str, sorted(widths)))}; {model.name}'s stream is {model.d_model} wide")
    if 0 in vectors:
        raise InputError(f"--steer {path}: direction.0 is not llama.cpp's: its control vectors start at direction.1 (after layer 1)")
    beyond = [l for l in vectors if not 1 <= l < model.n_layers]
    if beyond:
        raise InputError(f"--steer {path}: direction.{beyond[0]} is beyond {model.name}'s layers (llama.cpp reads direction.1 "
                         f"to direction.{model.n_layers - 1})")


def steer_edits(model, steers: list[str], span=None) -> tuple[list, list[dict]]:
    """The edits of --steer FILE[:SCALE] or POS|NEG[:SCALE] (repeatable): Add("resid_post", l, scale * direction.l), one per
    layer and steer, at the layers of `span` (parse_layers; None: all); and what they came from, as a result shows it:
    [{"file" or "pair", "scale", "layers"}]."""
    from attn_cli.models.points import Add

    a, b = layer_span(model, span)
    edits, steered = [], []
    for text in steers:
        path, scale = parse_steer(text)
        pair = inline_pair(path)
        if pair is not None:
            vectors, source = inline_vectors(model, *pair), {"pair": list(pair)}
        else:
            if not Path(path).is_file():
                raise InputError(f"--steer {path}: no such file")
            hint, vectors = read_control_vector(path)
            check_fits(model, path, hint, vectors)
            source = {"file": str(path)}
        vectors = {l: v for l, v in vectors.items() if a <= l <= b}
        edits += [Add("resid_post", l, np.float32(scale) * v) for l, v in sorted(vectors.items())]
        steered.append(source | {"scale": scale, "layers": sorted(vectors)})
    return edits, steered


class steering_blamed:
    """A pass that overflows float32 while steered says so in one line naming --steer, not the weights (which alone would not)."""

    def __init__(self, steered: list[dict]):
        self.steered = steered

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if self.steered and isinstance(e, DataError) and "overflows float32" in str(e):
            from attn_cli.views.base import steer_name

            shown = ", ".join(f"{steer_name(s)}:{s['scale']:g}" for s in self.steered)
            raise InputError(f"--steer {shown}: the steered stream overflows float32; give a smaller SCALE") from None
        return False
