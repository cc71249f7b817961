"""A model in Ollama's store (`ollama:NAME[:TAG]`), found offline: the manifest names the GGUF blob.

`ollama pull smollm2:135m` writes manifests/registry.ollama.ai/library/smollm2/135m (JSON: a
config and layers, each with a mediaType and a digest) and blobs/sha256-<hex>, under
$OLLAMA_MODELS or ~/.ollama/models. The layer of mediaType application/vnd.ollama.image.model is
the GGUF file. Names: NAME[:TAG] (library/NAME), USER/NAME[:TAG], HOST/NAMESPACE/NAME[:TAG];
TAG defaults to latest.

The manifest is hostile input like any file: every name part and the digest are checked against
strict patterns before they become a path, so nothing outside the store is ever read.
"""

import json
import os
import re
from pathlib import Path

from attn_cli.errors import DataError, InputError

PREFIX = "ollama:"
REGISTRY, NAMESPACE, TAG = "registry.ollama.ai", "library", "latest"
MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # a host, namespace, model or tag: no '/', no leading '.'
HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?")
MAX_MANIFEST_BYTES = 1 << 20


def store() -> Path:
    """$OLLAMA_MODELS if set, else ~/.ollama/models (where `ollama pull` writes)."""
    from attn_cli.io.files import user_path

    env = os.environ.get("OLLAMA_MODELS")
    return user_path(env, "OLLAMA_MODELS") if env else user_path("~/.ollama/models", "the Ollama store")


def is_ollama(spec: str) -> bool:
    return spec.startswith(PREFIX)


def parse(spec: str) -> tuple[str, str, str, str]:
    """'ollama:smollm2:135m' -> ('registry.ollama.ai', 'library', 'smollm2', '135m')."""
    name = spec[len(PREFIX):] if is_ollama(spec) else spec
    path, tag = name, TAG
    if ":" in name.rsplit("/", 1)[-1]:
        path, tag = name.rsplit(":", 1)
    parts = path.split("/")
    if len(parts) == 1:
        host, namespace, model = REGISTRY, NAMESPACE, parts[0]
    elif len(parts) == 2:
        host, (namespace, model) = REGISTRY, parts
    elif len(parts) == 3:
        host, namespace, model = parts
    else:
        raise InputError(f"--model {spec}: an Ollama name is NAME[:TAG], USER/NAME[:TAG] or HOST/NAMESPACE/NAME[:TAG]")
    if not HOST.fullmatch(host) or ".." in host:
        raise InputError(f"--model {spec}: {host!r} is not a registry host name")
    for part, what in ((namespace, "namespace"), (model, "model name"), (tag, "tag")):
        if not PART.fullmatch(part):
            raise InputError(f"--model {spec}: {part!r} is not an Ollama {what} (letters, digits, '.', '_', '-')")
    return host, namespace, model, tag


def resolve(spec: str, root: Path | None = None, verify: bool = False) -> Path:
    """The GGUF blob of an Ollama model, found through its manifest (nothing is downloaded); its size is checked
    against the manifest, and with `verify` its sha256 against the digest."""
    root = store() if root is None else root
    host, namespace, model, tag = parse(spec)
    manifests = root / "manifests"
    if not manifests.is_dir():
        raise InputError(f"--model {spec}: no Ollama store at {root} (set OLLAMA_MODELS to its models folder; attn never downloads)")
    path = manifests / host / namespace / model / tag
    if not path.is_file():
        found = available(root)
        listed = ", ".join(found[:20]) + (f" and {len(found) - 20:,} more" if len(found) > 20 else "")
        raise InputError(f"--model {spec}: no such model in the Ollama store at {root}; " + (f"it has {listed}" if found else "it has none"))
    return model_blob(path, root, verify)


CHECKED = {False: ["size"], True: ["size", "sha256"]}  # what resolve() compared with the manifest, by `verify`
READ_CHUNK = 1 << 20


def model_blob(manifest: Path, root: Path, verify: bool = False) -> Path:
    """blobs/sha256-<hex> of the manifest's model layer, checked to be a regular file inside the store, of the size the
    manifest gives; with `verify`, of the sha256 its digest names (the whole blob is read)."""
    try:
        if manifest.stat().st_size > MAX_MANIFEST_BYTES:
            raise DataError(f"{manifest}: an Ollama manifest of {manifest.stat().st_size:,} bytes; a real one is under 1 KB")
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except OSError as e:
        raise DataError(f"{manifest}: cannot read it ({e.strerror or e})") from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise DataError(f"{manifest}: not an Ollama manifest (not valid JSON)") from None
    layers = data.get("layers") if isinstance(data, dict) else None
    if not isinstance(layers, list):
        raise DataError(f"{manifest}: not an Ollama manifest (no list of layers)")
    models = [layer for layer in layers if isinstance(layer, dict) and layer.get("mediaType") == MODEL_MEDIA_TYPE]
    if len(models) != 1:
        raise DataError(f"{manifest}: expected one layer of mediaType {MODEL_MEDIA_TYPE}, found {len(models)}")
    digest = models[0].get("digest")
    if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
        raise DataError(f"{manifest}: the model layer's digest {str(digest)[:80]!r} is not sha256:<64 hex digits>")
    size = models[0].get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise DataError(f"{manifest}: the model layer's size {str(size)[:40]!r} is not a number of bytes")
    blob = root / "blobs" / digest.replace(":", "-")
    if not blob.is_file():
        raise DataError(f"{manifest}: its model blob {blob} is missing; the store is incomplete (ollama pull again)")
    held = blob.stat().st_size
    if held != size:
        raise DataError(f"{blob}: {held:,} bytes, but the manifest {manifest} says {size:,}; the blob is damaged or cut short (ollama pull again)")
    if verify and (found := sha256_of(blob)) != digest[len("sha256:"):]:
        raise DataError(f"{blob}: its sha256 is {found}, not the {digest} the manifest names; the blob is damaged (ollama pull again)")
    return blob


def sha256_of(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(READ_CHUNK):
                h.update(chunk)
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({e.strerror or e})") from None
    return h.hexdigest()


def available(root: Path) -> list[str]:
    """The models of a store as Ollama names them (smollm2:135m, user/name:tag, host/ns/name:tag)."""
    manifests = root / "manifests"
    found = []
    for path in sorted(p for p in manifests.glob("*/*/*/*") if p.is_file()):
        host, namespace, model, tag = path.relative_to(manifests).parts
        if host == REGISTRY and namespace == NAMESPACE:
            found.append(f"{model}:{tag}")
        elif host == REGISTRY:
            found.append(f"{namespace}/{model}:{tag}")
        else:
            found.append(f"{host}/{namespace}/{model}:{tag}")
    return sorted(found)


def load(spec: str, root: Path | None = None):
    """The Ollama model as a Source (a GGUF file), named as the user named it ("smollm2:135m")."""
    from attn_cli.models.sources import gguf

    return gguf.load(resolve(spec, root)).renamed(spec[len(PREFIX):])
