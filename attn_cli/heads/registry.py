"""Named attention heads: the built-in ones, the shipped learned ones, and `.npz` files.

A head file is an `.npz` with arrays `w_q` [d, d_k], `w_k` [d, d_k] and `w_v` [d, d], or
`w_v` [d, d_v] with `w_o` [d_v, d]; optionally `b_q` [d_k], a query bias
(Q = E W_Q + b_Q); optionally `distance` [3], (before, after, self): a key k tokens before or after the
query loses k times the first or second from its score (ALiBi), the query itself the third; optionally `sink`
(a 0-d float): the score of one more key, seen by every query, that writes nothing; optionally `meta`, a 0-d unicode array holding JSON
({"name", "description", "d_k", "metrics": {...}, ...}). Files are read with
allow_pickle=False and checked (keys, shapes, dtype, finiteness) before use.
"""

import json
import math
import os
from pathlib import Path

import numpy as np

from attn_cli.core.attention import Head
from attn_cli.errors import DataError, InputError, reason
from attn_cli.vectors.store import DATA_DIR

SHIPPED_DIR = DATA_DIR / "heads"
DEFAULT_HEADS = ["adjective", "context"]
BUILT_IN = ("identity", "random")
RANDOM_D_K = 16  # a small d_k, as in the shipped heads
RANDOM_VALUE_SCALE = 0.5  # keeps a random head's Delta E smaller than the embeddings it moves
REQUIRED = ("w_q", "w_k", "w_v")
KNOWN = (*REQUIRED, "w_o", "b_q", "distance", "sink", "meta")
MAX_SLOPE = 1e3  # a distance slope beyond this hides every other key: not a head anyone meant
MAX_WIDTH = 4096  # largest d_k or d_v a head file may have (beyond d itself): bounds what reading one can cost
MAX_META_BYTES = 1 << 20  # a head's JSON description; anything larger is not a description


class NamedHead(Head):
    """A head with where it came from and whether its weights were learned (a plain class, as Head)."""

    __slots__ = ("source", "trained", "noise", "meta")

    def __init__(self, name: str, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, w_o: np.ndarray | None = None,
                 b_q: np.ndarray | None = None, distance: np.ndarray | None = None, source: str = "", trained: bool = True,
                 noise: bool = False, meta: dict | None = None, sink: float | None = None):
        super().__init__(name, w_q, w_k, w_v, w_o, b_q, distance, sink)
        self.source = source  # "built-in" or the file it was read from
        self.trained = trained  # weights learned from data
        self.noise = noise  # untrained random weights: whatever pattern they show means nothing
        self.meta = {} if meta is None else meta

    def __repr__(self) -> str:
        names = Head.__slots__ + NamedHead.__slots__
        return f"NamedHead({', '.join(f'{name}={getattr(self, name)!r}' for name in names)})"

    @property
    def description(self) -> str:
        return str(self.meta.get("description", ""))


def identity_head(d: int) -> NamedHead:
    """W_Q = W_K = W_V = I: attention by plain similarity of the embeddings."""
    eye = np.eye(d)
    return NamedHead(
        "identity", eye, eye.copy(), eye.copy(), source="built-in", trained=False,
        meta={"description": "W_Q = W_K = W_V = I: attention by plain dot-product similarity"},
    )


def random_head(d: int, seed: int = 0, d_k: int = RANDOM_D_K) -> NamedHead:
    """Untrained weights initialised as a model would be before training (std 1/sqrt(d))."""
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(d)  # keeps q, k, v entries near the size of E's entries
    w_q = rng.normal(0.0, scale, (d, d_k))  # [d, d_k]
    w_k = rng.normal(0.0, scale, (d, d_k))  # [d, d_k]
    w_v = rng.normal(0.0, scale * RANDOM_VALUE_SCALE, (d, d))  # [d, d]
    return NamedHead(
        "random", w_q, w_k, w_v, source="built-in", trained=False, noise=True,
        meta={
            "description": f"untrained random weights (seed {seed}): the pattern is noise, not something learned",
            "seed": seed,
            "untrained": True,
        },
    )


def shipped_heads() -> list[Path]:
    """The head files shipped in data/heads, sorted by name."""
    return sorted(SHIPPED_DIR.glob("*.npz")) if SHIPPED_DIR.is_dir() else []


def _looks_like_path(spec: str) -> bool:
    return spec.endswith(".npz") or os.sep in spec or "/" in spec or Path(spec).exists()


MAX_RANDOM_D_K = 4096


def resolve_head(spec: str, d: int, seed: int = 0) -> NamedHead:
    """A head from "identity", "random" (or "random:D_K"), a shipped head's name, or a path to an `.npz` file."""
    if spec == "identity":
        return identity_head(d)
    if spec == "random":
        return random_head(d, seed)
    if spec.startswith("random:"):
        size = spec.partition(":")[2]
        if not size.isdigit() or not 1 <= int(size) <= MAX_RANDOM_D_K:
            raise InputError(f"--head {spec!r}: the random head's d_k must be a whole number from 1 to {MAX_RANDOM_D_K}, e.g. random:256")
        head = random_head(d, seed, int(size))
        head.name = spec
        return head
    shipped = SHIPPED_DIR / f"{spec}.npz"
    if spec and "/" not in spec and os.sep not in spec and shipped.is_file():
        return load_head(shipped, d, name=spec)
    if spec and _looks_like_path(spec):
        from attn_cli.io.files import user_path

        return load_head(user_path(spec, "--head"), d)
    names = [*BUILT_IN, *(p.stem for p in shipped_heads())]
    hint = close_name(spec, names)
    guess = f" (did you mean {hint!r}?)" if hint else ""
    raise InputError(f"unknown head {spec!r}{guess}: use one of {', '.join(names)} (random:D_K sets its d_k), or a path to an .npz file")


def close_name(spec: str, names: list[str]) -> str | None:
    """The head name `spec` was most likely meant to be: the same letters in another case, or a close spelling."""
    from difflib import get_close_matches

    folded = {name.lower(): name for name in names}
    match = get_close_matches(spec.lower(), list(folded), n=1, cutoff=0.6)
    return folded[match[0]] if match else None


def _open_npz(path: Path):
    """The head file as an open NpzFile (closed with it); anything but a zip of arrays is refused."""
    if not path.exists():
        raise InputError(f"{path}: no such head file")
    if path.is_dir():
        raise InputError(f"{path}: is a folder, not an .npz head file")
    try:
        f = open(path, "rb")
    except OSError as e:
        raise DataError(f"{path}: cannot read the head file ({e.strerror or e})") from None
    try:
        start = f.read(6)
        if start.startswith(b"\x93NUMPY"):
            raise InputError(f"{path}: a single array, not an .npz head file with w_q, w_k, w_v")
        if start[:1] == b"\x80":
            raise InputError(f"{path}: a Python pickle, not an .npz head file; attn never unpickles head files")
        f.seek(0)
        return np.lib.npyio.NpzFile(f, own_fid=True, allow_pickle=False)
    except InputError:
        f.close()
        raise
    except Exception as e:  # not a zip, or a damaged one: zipfile fails in many ways, all mean the same here
        f.close()
        raise DataError(f"{path}: cannot read the head file ({reason(e)})") from None


def _member_header(npz, key: str, path: Path) -> tuple:  # -> (shape, dtype)
    """The shape and dtype a member's .npy header announces, read before its data."""
    from attn_cli.io.files import npy_header

    name = key if key in npz.zip.namelist() else f"{key}.npy"
    try:
        with npz.zip.open(name) as f:
            shape, dtype, _ = npy_header(f, f"{path}: array {key!r}")
    except DataError:
        raise
    except Exception as e:
        raise DataError(f"{path}: cannot read array {key!r} ({reason(e)})") from None
    if dtype.hasobject:
        raise InputError(f"{path}: array {key!r} holds pickled Python objects (dtype object); attn never unpickles head files")
    return shape, dtype


def _read_array(npz, key: str, path: Path, max_shape: tuple[int, ...], max_bytes: int) -> np.ndarray:
    """Member `key`, once its header shows it is within `max_shape` and `max_bytes` (so a lying header
    cannot make attn allocate terabytes); damage of any kind is a DataError naming the file and the array."""
    shape, dtype = _member_header(npz, key, path)
    too_wide = len(shape) == len(max_shape) and any(n > m for n, m in zip(shape, max_shape))
    if too_wide or math.prod(shape) * dtype.itemsize > max_bytes:
        limit = f"at most {' x '.join(map(str, max_shape))}" if max_shape else f"at most {max_bytes:,} bytes"
        raise InputError(f"{path}: array {key!r} has shape {shape} of {dtype}, larger than a head can be here ({limit})")
    try:
        array = npz[key]
    except ValueError as e:
        if "pickle" in str(e):
            raise InputError(f"{path}: array {key!r} holds pickled objects; refusing to load it") from None
        raise DataError(f"{path}: cannot read array {key!r} ({e})") from None
    except Exception as e:  # a corrupt zip member: bad CRC, broken deflate data, an early end
        raise DataError(f"{path}: cannot read array {key!r} ({reason(e)})") from None
    if not isinstance(array, np.ndarray):
        raise DataError(f"{path}: member {key!r} is not a NumPy array")
    return array


def _parse_meta(raw: np.ndarray, path: Path) -> dict:
    if raw.ndim != 0 or raw.dtype.kind != "U":
        raise InputError(f"{path}: 'meta' must be a 0-d unicode string array holding JSON, found {raw.dtype} {raw.shape}")
    try:
        meta = json.loads(str(raw[()]))
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: 'meta' is not valid JSON ({e})") from None
    except RecursionError:
        raise InputError(f"{path}: 'meta' is JSON nested too deeply to be a head's description") from None
    if not isinstance(meta, dict):
        raise InputError(f"{path}: 'meta' must hold a JSON object")
    for key in ("trained", "untrained"):
        if key in meta and not isinstance(meta[key], bool):
            raise InputError(f"{path}: 'meta' {key!r} must be true or false, not {meta[key]!r}")
    return meta


def _read_meta(npz, path: Path) -> dict:
    return _parse_meta(_read_array(npz, "meta", path, (), MAX_META_BYTES), path) if "meta" in npz.files else {}


def _check_matrices(arrays: dict[str, np.ndarray], d: int, path: Path) -> None:
    """Shapes consistent with each other and with the vectors' dimension d; float and finite."""
    for key, a in arrays.items():
        if a.ndim != 2:
            raise InputError(f"{path}: {key} must be a 2-d matrix, found shape {a.shape}")
        if a.dtype.kind != "f":
            raise InputError(f"{path}: {key} must hold floats, found dtype {a.dtype}")
        if 0 in a.shape:
            raise InputError(f"{path}: {key} has shape {a.shape}; a head needs d_k and d_v of at least 1")
        if not np.isfinite(a).all():
            raise InputError(f"{path}: {key} holds NaN or infinite values")
    w_q, w_k, w_v, w_o = (arrays.get(k) for k in ("w_q", "w_k", "w_v", "w_o"))
    if w_q.shape[0] != d:
        raise InputError(f"{path}: w_q is {w_q.shape[0]}x{w_q.shape[1]} but the vectors have d={d}; expected [{d}, d_k]")
    if w_k.shape != w_q.shape:
        raise InputError(f"{path}: w_k has shape {w_k.shape} but w_q has {w_q.shape}; both must be [d, d_k]")
    if w_v.shape[0] != d:
        raise InputError(f"{path}: w_v has shape {w_v.shape}; expected [{d}, d] or [{d}, d_v] with w_o")
    if w_o is None and w_v.shape[1] != d:
        raise InputError(f"{path}: w_v is [{d}, {w_v.shape[1]}] without w_o; add w_o [{w_v.shape[1]}, {d}] or make w_v [{d}, {d}]")
    if w_o is not None and w_o.shape != (w_v.shape[1], d):
        raise InputError(f"{path}: w_o has shape {w_o.shape}; expected [{w_v.shape[1]}, {d}] (d_v from w_v, d from the vectors)")


def load_head(path: str | os.PathLike, d: int, name: str | None = None) -> NamedHead:
    """Read and check a head file; `d` is the vectors' dimension. Name defaults to the file stem."""
    path = Path(path)
    width = max(d, MAX_WIDTH)
    bounds = {"w_q": (d, width), "w_k": (d, width), "w_v": (d, width), "w_o": (width, d)}
    with _open_npz(path) as npz:
        keys = set(npz.files)
        missing = [k for k in REQUIRED if k not in keys]
        if missing:
            found = ", ".join(sorted(keys)[:8]) or "nothing"
            raise InputError(f"{path}: missing {', '.join(missing)} (found {found}); a head needs w_q, w_k, w_v")
        arrays = {k: _read_array(npz, k, path, bounds[k], math.prod(bounds[k]) * 8) for k in (*REQUIRED, "w_o") if k in keys}
        meta = _read_meta(npz, path)
        distance = _read_distance(npz, path) if "distance" in keys else None
        sink = _read_sink(npz, path) if "sink" in keys else None
        b_q = _read_array(npz, "b_q", path, (width,), width * 8) if "b_q" in keys else None
    _check_matrices(arrays, d, path)
    if b_q is not None and (b_q.shape != (arrays["w_q"].shape[1],) or b_q.dtype.kind != "f" or not np.isfinite(b_q).all()):
        raise InputError(f"{path}: b_q must be {arrays['w_q'].shape[1]} finite floats (one per column of w_q), found {b_q.dtype} {b_q.shape}")
    as_float = {k: np.asarray(a, dtype=np.float64) for k, a in arrays.items()}
    untrained = meta.get("untrained", False)
    return NamedHead(
        name or path.stem, as_float["w_q"], as_float["w_k"], as_float["w_v"], as_float.get("w_o"),
        b_q=None if b_q is None else np.asarray(b_q, dtype=np.float64), distance=distance, source=str(path), trained=meta.get("trained", not untrained), noise=untrained, meta=meta,
        sink=sink,
    )


def _read_distance(npz, path: Path) -> np.ndarray:  # -> [3]
    a = _read_array(npz, "distance", path, (3,), 24)
    if a.shape != (3,) or a.dtype.kind != "f" or not np.isfinite(a).all() or (a < 0).any() or (a > MAX_SLOPE).any():
        raise InputError(f"{path}: distance must be 3 floats from 0 to {MAX_SLOPE:g} (per token before and after the query, and at itself), found {a!r}")
    return np.asarray(a, dtype=np.float64)


def _read_sink(npz, path: Path) -> float:
    a = _read_array(npz, "sink", path, (), 8)
    if a.shape != () or a.dtype.kind != "f" or not np.isfinite(a):
        raise InputError(f"{path}: sink must be one finite float (the score of the key that writes nothing), found {a!r}")
    return float(a)


def read_meta(path: str | os.PathLike) -> dict:
    """The JSON in a head file's `meta` array ({} when it has none)."""
    path = Path(path)
    with _open_npz(path) as npz:
        return _read_meta(npz, path)


def save_head(head: Head, path: str | os.PathLike, meta: dict | None = None, *, replace: bool = True) -> None:
    """Write a head file atomically (a temporary file in the same folder, then a rename). An existing
    file is replaced only if it is a regular file, and never with `replace=False`."""
    from attn_cli.io.atomic import write_atomic

    path = Path(path)
    record = {"name": head.name, "d_k": head.d_k, **(meta or {})}
    arrays = {"w_q": head.w_q, "w_k": head.w_k, "w_v": head.w_v, "meta": np.array(json.dumps(record))}
    if head.w_o is not None:
        arrays["w_o"] = head.w_o
    if head.b_q is not None:
        arrays["b_q"] = np.asarray(head.b_q, dtype=np.float64)
    if head.distance is not None:
        arrays["distance"] = np.asarray(head.distance, dtype=np.float64)
    if head.sink is not None:
        arrays["sink"] = np.array(float(head.sink))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda f: np.savez(f, **arrays), force=replace)


def resolve_heads(specs: list[str] | None, d: int, seed: int = 0) -> tuple[list[NamedHead], str | None]:
    """The heads named by `--head`, in order; without any, the shipped defaults. The note says
    why the defaults fell back to the identity head (None when they did not)."""
    return ([resolve_head(spec, d, seed) for spec in specs], None) if specs else default_heads(d, seed)


def default_heads(d: int, seed: int = 0) -> tuple[list[NamedHead], str | None]:
    """The shipped learned heads when they exist and fit d; otherwise the identity head, with the
    note saying why (for the command to print)."""
    files = [SHIPPED_DIR / f"{name}.npz" for name in DEFAULT_HEADS]
    reason = ""
    if all(f.is_file() for f in files):
        try:
            return [load_head(f, d, name=f.stem) for f in files], None
        except InputError as e:
            reason = f"the shipped heads do not fit these vectors ({e})"
    else:
        reason = "the learned heads are not installed"
    return [identity_head(d)], f"{reason}; using the identity head (plain similarity)"


def list_heads(d: int):
    """`attn heads list`: the built-in heads and the shipped ones, checked against vectors of size d."""
    from attn_cli.results import HeadInfo, HeadsList

    rows = []
    for name in BUILT_IN:
        head = resolve_head(name, d)
        rows.append(HeadInfo(name, "built-in", head.d_k, False, head.description, None, {}))
    for path in shipped_heads():
        meta = read_meta(path)
        try:
            head = load_head(path, d, name=path.stem)
            d_k, description = head.d_k, head.description
        except InputError:  # shipped for other vectors: list it, and say why inspect cannot use it
            d_k = meta.get("d_k") if isinstance(meta.get("d_k"), int) else 0
            description = f"{meta.get('description', '')} (does not fit vectors with d = {d})"
        summary, metrics = meta.get("summary"), meta.get("metrics")
        rows.append(HeadInfo(
            path.stem, str(path), d_k, meta.get("trained", True), description,
            str(summary) if summary is not None else None, metrics if isinstance(metrics, dict) else {},
        ))
    return HeadsList(dimension=d, default=list(DEFAULT_HEADS), heads=rows)
