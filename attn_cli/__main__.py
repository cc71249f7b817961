"""`python -m attn_cli`, and the `attn` script (pyproject.toml: attn_cli.__main__:run)."""

import _signal  # signal's C core: `import signal` builds its enums first, time in which Ctrl-C would still be a traceback
import gc
import os
import sys

_started = False  # run() has begun: from then on Ctrl-C raises Interrupted
_stopping = False  # set by the first Ctrl-C; a second one does not interrupt the clean-up it started
_pending = False  # a Ctrl-C that could not be raised where it landed: before run() began, or in a callback (_unraisable)
_said = False  # `attn: interrupted` is written: the process is on its way out


def _interrupt(signum, frame) -> None:
    """The SIGINT handler: Interrupted, raised wherever the command is (once). Before run() begins
    there is nothing to raise it through (the `attn` script is still importing this module): it
    is noted, and run() stops as it begins. Inside the import machinery it would break the import
    under way instead (NumPy's C core prints it and fails with an ImportError): it is raised again
    a millisecond later (SIGALRM), once the import is done."""
    global _stopping, _pending
    if signum != _signal.SIGINT and not _pending:
        return  # a retry whose Ctrl-C was raised meanwhile
    if not _started:
        _pending = True
    elif not _stopping:
        if hasattr(_signal, "setitimer") and _importing(frame):
            _pending = True
            _signal.signal(_signal.SIGALRM, _interrupt)
            _signal.setitimer(_signal.ITIMER_REAL, 0.001)
            return
        _stopping, _pending = True, False
        raise Interrupted


def _importing(frame) -> bool:
    """Whether `frame` runs inside Python's import machinery (a module being imported, or its lock)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


if __name__ == "__main__" or os.path.basename(sys.argv[0]) in ("attn", "attn.exe", "attn-script.py"):
    _signal.signal(_signal.SIGINT, _interrupt)  # the program itself: from its first line (a program importing attn keeps its own)

START_GC_THRESHOLD = 50_000  # new objects between two collections of the youngest generation (Python's default: 700)
INTERRUPTED_EXIT = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C


class Interrupted(BaseException):
    """Ctrl-C. Not a KeyboardInterrupt, which Click turns into a silent exit or an "Aborted!" of its
    own: this one goes up to `run` alone, through every `finally` and `except BaseException` on the
    way, so a file being written is still removed and its destination left as it was."""


def _unraisable(info) -> None:
    """sys.unraisablehook: a Ctrl-C that landed in a weakref callback or a __del__, where Python
    cannot raise it (it would print "Exception ignored in ..." and go on), is raised again a
    millisecond later (SIGALRM), out of the command's own code. Where there is no such timer, the
    command goes on, a second Ctrl-C stops it, and it exits 130 in any case.

    Once `attn: interrupted` is written, what is freed on the way out says nothing: an object whose
    __init__ the Ctrl-C cut short (a ZipFile without its `_writing`) fails in its __del__, and that
    report would follow the one line."""
    global _stopping, _pending
    if _said:
        return
    if not isinstance(info.exc_value, Interrupted):
        sys.__unraisablehook__(info)
        return
    _stopping, _pending = False, True
    if hasattr(_signal, "setitimer"):
        _signal.signal(_signal.SIGALRM, _interrupt)
        _signal.setitimer(_signal.ITIMER_REAL, 0.001)


def _stop_interrupted() -> None:
    """One line on stderr, what stdout still holds written if it can be (else dropped), exit 130."""
    global _stopping, _said
    _stopping = _said = True  # from here on, Ctrl-C again is ignored and nothing freed reports (_unraisable): this is the way out
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):  # a closed pipe, a full disk: Python's own flush at exit must not fail again
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass  # no descriptor: nothing to fail at exit
    if sys.stderr is not None:
        try:
            sys.stderr.write("attn: interrupted\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    sys.exit(INTERRUPTED_EXIT)


def run() -> None:
    """The command line: attn_cli.cli.main, with Ctrl-C as one line and the cyclic garbage collector
    set for a short process.

    Ctrl-C is caught from this module's first lines, before the imports that take most of a start:
    at any moment it stops the command with one `attn: interrupted` line and exit 130, never a
    traceback (only before those lines, in Python's own start-up, is it Python's KeyboardInterrupt).

    Starting a command is mostly imports (Typer, NumPy, Rich, attn's own modules): tens of thousands
    of objects that live as long as the process, which the collector would go over some fifty times
    at its default threshold before the command does anything (5-10 ms of every start). At this
    threshold it does not run during start-up, and a long run (`inspect -` over a large file,
    `heads train`) is still collected. Set here, before Typer is imported, and not on `import
    attn_cli`: a program that uses attn as a library keeps its own setting (and its own Ctrl-C).

    When the command is done, every object is frozen (gc.freeze): Python's exit would otherwise go
    over all of them once more looking for cycles (~18 ms after `inspect`), for memory the process
    is about to give back whole. attn's files are closed by then (each with its own `with`), and
    objects no longer referenced are still freed as modules are cleared; only reference cycles are
    left to the end of the process.
    """
    global _started, _stopping
    _started, _stopping = True, False
    _signal.signal(_signal.SIGINT, _interrupt)  # again, for a program that imported this module to call run()
    sys.unraisablehook = _unraisable
    try:
        try:
            if _pending:  # Ctrl-C came as the `attn` script imported this module
                raise Interrupted
            gc.set_threshold(START_GC_THRESHOLD, *gc.get_threshold()[1:])
            from attn_cli.cli import main

            try:
                main()
            finally:
                gc.freeze()
        except (SystemExit, Exception):
            if _stopping or _pending:  # interrupted, though it came out another way: a closed pipe found on
                raise Interrupted from None  # the way out, or Python's RuntimeError around a Ctrl-C in __set_name__
            raise
        if _pending:
            raise Interrupted
    except Interrupted:
        _stop_interrupted()
    finally:
        _stopping = True  # the command is done: a Ctrl-C now would only interrupt Python's exit into a traceback
        if _pending and hasattr(_signal, "setitimer"):
            _signal.setitimer(_signal.ITIMER_REAL, 0)  # a SIGALRM still to come would find Python's exit, and kill it


if __name__ == "__main__":
    run()
