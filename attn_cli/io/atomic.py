"""Files `attn` writes: every file or folder is written under a temporary name next to its
destination and renamed into place, so an interruption never leaves half a file. An existing
destination is replaced only with --force, and only when it is a regular file (or, for a
folder, one that attn wrote). Temporaries left by a killed run are removed by the next write
to the same destination.
"""

import os
import shutil
import stat
from collections.abc import Callable, Collection
from pathlib import Path

from attn_cli.errors import DataError, InputError


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_writable(path: str | os.PathLike, force: bool, *, ours: Callable[[Path], bool] | None = None, what: str = "") -> Path:
    """`path` as a destination: new, or with `force` a regular file, or something `ours(path)` recognises
    as written by attn (`what` names it in the message). Everything else is refused (InputError)."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise InputError(f"{path.parent}: no such folder") from None
        return path
    except OSError as e:
        raise InputError(f"{path}: cannot write there ({e.strerror or e})") from None
    if not force:
        raise InputError(f"{path} exists; pass --force to overwrite it")
    if stat.S_ISREG(mode) or (ours is not None and ours(path)):
        return path
    allowed = "a regular file" + (f" or {what}" if what else "")
    raise InputError(f"{path} is {_kind(mode)}; --force replaces only {allowed}")


def temporary_name(dst: Path, kind: str = "tmp") -> Path:
    """A hidden name next to `dst` that says which process made it: .NAME.PID.RANDOM.KIND."""
    return dst.with_name(f".{dst.name}.{os.getpid()}.{os.urandom(4).hex()}.{kind}")


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists but is not ours to signal
    return True


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_written(folder: Path, written: Collection[str]) -> bool:
    """Remove the files named `written` from `folder`, then the folder if nothing else is left in it
    (anything else is someone's, and stays). Returns whether the folder is gone."""
    for name in written:
        (folder / name).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        return False
    return True


def added_files(folder: Path, written: Collection[str]) -> list[str]:
    """The names in `folder` other than `written` (the files attn writes in such a folder), sorted."""
    return sorted(set(os.listdir(folder)) - set(written))


def clean_stale(dst: Path, written: Collection[str] = ()) -> list[Path]:
    """Remove what a killed attn left beside `dst`: temporaries (.NAME.PID.X.tmp) of processes that are
    gone, and an old copy (.NAME.PID.X.old) set aside for a replacement (put back if `dst` is missing).
    Of an old folder only the files named `written` are removed, and the folder if that empties it.
    Returns the paths removed or put back."""
    prefix = f".{dst.name}."
    try:
        names = [n for n in os.listdir(dst.parent) if n.startswith(prefix) and n.endswith((".tmp", ".old"))]
    except OSError:
        return []
    done = []
    for name in names:
        pid, _, rest = name[len(prefix):].partition(".")
        token, _, kind = rest.partition(".")
        if not pid.isdigit() or len(token) != 8 or kind not in ("tmp", "old") or _running(int(pid)):
            continue
        stale = dst.parent / name
        if kind == "old" and not (dst.exists() or dst.is_symlink()):
            os.replace(stale, dst)  # killed between setting the old copy aside and renaming the new one in
        elif kind == "old" and stale.is_dir() and not stale.is_symlink():
            if not remove_written(stale, written):
                continue  # it holds files attn did not write: someone's, kept
        else:
            remove(stale)
        done.append(stale)
    return done


def move_into_place(new: Path, dst: Path, *, replace: bool, written: Collection[str] = ()) -> None:
    """Rename `new` to `dst`. Without `replace` an existing `dst` is never touched (InputError); with it,
    an existing `dst` is set aside first and removed only once `new` is in place.

    A folder `dst` is replaced only if it still holds nothing but `written`, the files attn writes
    in it: checked once it is set aside, when no file can be added to it under its name any more.
    A file found there that attn did not write (added while attn worked) puts the folder back as it
    was, and the replacement is refused (InputError). Only the `written` files are then removed.
    """
    if not replace:
        try:
            os.link(new, dst)  # fails if dst appeared meanwhile: nothing is overwritten
        except FileExistsError:
            raise InputError(f"{dst} exists; pass --force to overwrite it") from None
        except OSError:
            if dst.exists() or dst.is_symlink():
                raise InputError(f"{dst} exists; pass --force to overwrite it") from None
            os.replace(new, dst)  # a folder, or a file system without hard links
            return
        new.unlink()
        return
    if not (dst.exists() or dst.is_symlink()) or not os.path.isdir(new):
        os.replace(new, dst)
        return
    old = temporary_name(dst, "old")
    os.replace(dst, old)
    folder = old.is_dir() and not old.is_symlink()  # else a regular file --force replaces
    try:
        added = added_files(old, written) if folder else []
        if not added:
            os.replace(new, dst)
    except BaseException:
        os.replace(old, dst)
        raise
    if added:
        os.replace(old, dst)
        shown = ", ".join(added[:3]) + (f" and {len(added) - 3:,} more" if len(added) > 3 else "")
        raise InputError(f"{dst}: {shown} appeared in it while attn worked; left as it is, not replaced")
    if folder:
        remove_written(old, written)  # a file that arrived even later (through a folder still open) stays, with its folder
    else:
        remove(old)


def write_atomic(path: str | os.PathLike, write: Callable, *, force: bool) -> Path:
    """Write a file through `write(binary file)` under a temporary name, then rename it to `path`.

    A failure (a full disk, a size limit, an interruption) leaves `path` as it was. An existing
    `path` is replaced only with `force` and only if it is a regular file.
    """
    path = check_writable(path, force)
    clean_stale(path)
    tmp = temporary_name(path)
    try:
        with open(tmp, "xb") as f:  # created with the ordinary permissions the umask allows
            write(f)
            f.flush()
            os.fsync(f.fileno())
        move_into_place(tmp, path, replace=force)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise DataError(f"{path}: cannot write it ({e.strerror or e})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def wrote(path: str | os.PathLike, size: int, *details: str) -> str:
    """The one line every command says of a file it wrote (--page, --svg, --html): where it went and how big it is,
    then what else is worth knowing of it: "wrote p.html (79 kB; 9 tokens; every weight kept to three decimals)"."""
    from attn_cli.io.files import shown_path

    return f"wrote {shown_path(path)} ({'; '.join((file_size(size), *details))})"


def file_size(n: int) -> str:
    """A file's size in SI units, as `ls -l --si` and file managers give it: 812 bytes, 79 kB, 1.2 MB."""
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB" if n >= 1e3 else f"{n} byte{'s' if n != 1 else ''}"
