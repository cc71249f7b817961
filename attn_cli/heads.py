"""Named attention heads: the built-in ones, the shipped learned ones, and `.npz` files.

A head file is an `.npz` with arrays `w_q` [d, d_k], `w_k` [d, d_k] and `w_v` [d, d], or
`w_v` [d, d_v] with `w_o` [d_v, d]; optionally `meta`, a 0-d unicode array holding JSON
({"name", "description", "d_k", "metrics": {...}, ...}). Files are read with
allow_pickle=False and checked (keys, shapes, dtype, finiteness) before use.
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attn_cli.attention import Head
from attn_cli.errors import DataError, InputError
from attn_cli.output import warn
from attn_cli.vectors import DATA_DIR

SHIPPED_DIR = DATA_DIR / "heads"
DEFAULT_HEADS = ["adjective", "context"]
BUILT_IN = ("identity", "random")
RANDOM_D_K = 16  # a small d_k, as in the shipped heads
RANDOM_VALUE_SCALE = 0.5  # keeps a random head's Delta E smaller than the embeddings it moves
REQUIRED = ("w_q", "w_k", "w_v")
KNOWN = (*REQUIRED, "w_o", "meta")


@dataclass
class NamedHead(Head):
    """A head with where it came from and whether its weights were learned."""

    source: str = ""  # "built-in" or the file it was read from
    trained: bool = True  # weights learned from data
    noise: bool = False  # untrained random weights: whatever pattern they show means nothing
    meta: dict = field(default_factory=dict)

    @property
    def description(self) -> str:
        return str(self.meta.get("description", ""))


_fallback_said = False


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
        return load_head(Path(spec).expanduser(), d)
    names = [*BUILT_IN, *(p.stem for p in shipped_heads())]
    raise InputError(f"unknown head {spec!r}: use one of {', '.join(names)} (random:D_K sets its d_k), or a path to an .npz file")


def _open_npz(path: Path):
    import zipfile

    if not path.exists():
        raise InputError(f"{path}: no such head file")
    if path.is_dir():
        raise InputError(f"{path}: is a folder, not an .npz head file")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise DataError(f"{path}: cannot read the head file ({e})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise InputError(f"{path}: a single array, not an .npz head file with w_q, w_k, w_v")
    return npz


def _read_array(npz, key: str, path: Path) -> np.ndarray:
    import zipfile

    try:
        return npz[key]
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise InputError(f"{path}: array {key!r} holds pickled objects; refusing to load it") from None
        raise DataError(f"{path}: cannot read array {key!r} ({e})") from None
    except (OSError, EOFError, zipfile.BadZipFile, KeyError) as e:
        raise DataError(f"{path}: cannot read array {key!r} ({e})") from None


def _parse_meta(raw: np.ndarray, path: Path) -> dict:
    if raw.ndim != 0 or raw.dtype.kind != "U":
        raise InputError(f"{path}: 'meta' must be a 0-d unicode string array holding JSON, found {raw.dtype} {raw.shape}")
    try:
        meta = json.loads(str(raw[()]))
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: 'meta' is not valid JSON ({e})") from None
    if not isinstance(meta, dict):
        raise InputError(f"{path}: 'meta' must hold a JSON object")
    return meta


def _check_matrices(arrays: dict[str, np.ndarray], d: int, path: Path) -> None:
    """Shapes consistent with each other and with the vectors' dimension d; float and finite."""
    for key, a in arrays.items():
        if a.ndim != 2:
            raise InputError(f"{path}: {key} must be a 2-d matrix, found shape {a.shape}")
        if a.dtype.kind != "f":
            raise InputError(f"{path}: {key} must hold floats, found dtype {a.dtype}")
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
    with _open_npz(path) as npz:
        keys = set(npz.files)
        missing = [k for k in REQUIRED if k not in keys]
        if missing:
            found = ", ".join(sorted(keys)) or "nothing"
            raise InputError(f"{path}: missing {', '.join(missing)} (found {found}); a head needs w_q, w_k, w_v")
        arrays = {k: _read_array(npz, k, path) for k in (*REQUIRED, "w_o") if k in keys}
        meta = _parse_meta(_read_array(npz, "meta", path), path) if "meta" in keys else {}
    _check_matrices(arrays, d, path)
    as_float = {k: np.asarray(a, dtype=np.float64) for k, a in arrays.items()}
    return NamedHead(
        name or path.stem, as_float["w_q"], as_float["w_k"], as_float["w_v"], as_float.get("w_o"),
        source=str(path), trained=bool(meta.get("trained", not meta.get("untrained", False))),
        noise=bool(meta.get("untrained", False)), meta=meta,
    )


def read_meta(path: str | os.PathLike) -> dict:
    """The JSON in a head file's `meta` array ({} when it has none)."""
    path = Path(path)
    with _open_npz(path) as npz:
        return _parse_meta(_read_array(npz, "meta", path), path) if "meta" in npz.files else {}


def save_head(head: Head, path: str | os.PathLike, meta: dict | None = None) -> None:
    """Write a head file atomically (a temporary file in the same folder, then a rename)."""
    import tempfile

    path = Path(path)
    record = {"name": head.name, "d_k": head.d_k, **(meta or {})}
    arrays = {"w_q": head.w_q, "w_k": head.w_k, "w_v": head.w_v, "meta": np.array(json.dumps(record))}
    if head.w_o is not None:
        arrays["w_o"] = head.w_o
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes files private (0600); a head file is ordinary data
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def resolve_heads(specs: list[str] | None, d: int, seed: int = 0) -> list[NamedHead]:
    """The heads named by `--head`, in order; without any, the shipped defaults."""
    return [resolve_head(spec, d, seed) for spec in specs] if specs else default_heads(d, seed)


def default_heads(d: int, seed: int = 0) -> list[NamedHead]:
    """The shipped learned heads when they exist and fit d; otherwise the identity head (said once)."""
    global _fallback_said
    files = [SHIPPED_DIR / f"{name}.npz" for name in DEFAULT_HEADS]
    reason = ""
    if all(f.is_file() for f in files):
        try:
            return [load_head(f, d, name=f.stem) for f in files]
        except InputError as e:
            reason = f"the shipped heads do not fit these vectors ({e})"
    else:
        reason = "the learned heads are not installed"
    if not _fallback_said:
        warn(f"{reason}; using the identity head (plain similarity)")
        _fallback_said = True
    return [identity_head(d)]
