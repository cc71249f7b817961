"""A model's own chat template (Jinja, as tokenizer_config.json or a GGUF file keeps it) rendered around a prompt.

The template comes from a file, so it is hostile input: it is rendered in Jinja's immutable sandbox
(no attribute access beyond data, no mutation), as transformers renders it, with the same settings
(trim_blocks, lstrip_blocks) and helpers (raise_exception, strftime_now). A budget holds while it
renders, not after: MAX_RENDERED characters of output, RENDER_SECONDS of time, RENDER_MEMORY bytes of
new memory. Repetition (`'x' * n`, `|center(n)`, ...), concatenation (`+`, `~`), joins and formats are
refused before their result is made, the output is counted as it streams, a watchdog stops a loop that
runs past the time, and an address-space limit turns any other allocation bomb into a MemoryError.
"""

import math
import threading

from attn_cli.errors import DataError, InputError

MAX_RENDERED = 1 << 20  # characters of a rendered prompt (a real one is a few KB)
RENDER_SECONDS = 2.0  # a real template renders in milliseconds
RENDER_MEMORY = 256 << 20  # bytes of address space the rendering may add
MAX_POWER_BITS = 4096  # the largest integer `a ** b` may make


class Budget(Exception):
    """The template went past its budget (raised inside Jinja, turned into a DataError by render)."""


class Timeout(BaseException):
    """Raised in the rendering thread by the watchdog; a BaseException, so no `except Exception` in Jinja swallows it."""


def _sized(n: int, what: str) -> None:
    if n > MAX_RENDERED:
        raise Budget(f"{what} of {n:,} characters (at most {MAX_RENDERED:,})")


def _repeat_size(left, right) -> int | None:
    """The length of `left * right` when it repeats a sequence, before it is made."""
    for seq, n in ((left, right), (right, left)):
        if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
            return len(seq) * max(n, 0)
    return None


def _environment():
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Bounded(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "+", "%"})

        def call_binop(self, context, operator, left, right):
            if operator == "*" and (n := _repeat_size(left, right)) is not None:
                _sized(n, "a repetition")
            elif operator == "%" and isinstance(left, str):  # printf-style formatting
                _format(left, *(right.values() if isinstance(right, dict) else right if isinstance(right, tuple) else (right,)))
            elif operator == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, type(left)):
                _sized(len(left) + len(right), "a concatenation")
            elif operator == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0:
                if right * math.log2(abs(left)) > MAX_POWER_BITS:
                    raise Budget(f"a power {left} ** {right} of more than {MAX_POWER_BITS:,} bits")
            return super().call_binop(context, operator, left, right)

        def wrap_str_format(self, value):  # str.format is wrapped when it is looked up, not when it is called
            wrapped = super().wrap_str_format(value)
            if wrapped is None:
                return None

            def bounded(*args, **kwargs):
                _format(value.__self__, *args, **(args[0] if value.__name__ == "format_map" and args and isinstance(args[0], dict) else kwargs))
                return wrapped(*args, **kwargs)

            return bounded

        def call(self, context, obj, /, *args, **kwargs):
            if isinstance(getattr(obj, "__self__", None), str) and obj.__name__ in GROWING:
                GROWING[obj.__name__](obj.__self__, *args, **kwargs)
            return super().call(context, obj, *args, **kwargs)

    env = Bounded(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    for name, check in FILTER_CHECKS.items():
        env.filters[name] = _checked(env.filters[name], check)
    env.globals.pop("lipsum", None)  # lipsum(n) writes n paragraphs
    return env


def _bounded_joins(template):
    """`a ~ b` compiles to a call of jinja2.runtime's str_join (or markup_join), not to a binop the sandbox
    sees; the compiled template's own names for them are replaced, so the size is checked before the join."""
    names = template.root_render_func.__globals__  # the compiled module's namespace: every block and macro reads it
    for name in ("str_join", "markup_join"):
        if callable(join := names.get(name)):
            names[name] = _sized_join(join)
    return template


def _sized_join(join):
    def bounded(seq):
        parts = list(seq)
        _sized(sum(_text_size(part) for part in parts), "a concatenation")
        return join(parts)

    return bounded


def _widths(*args, **kwargs) -> None:
    """A width or count argument (center, ljust, zfill, indent, format's '%*s') as large as the output budget is refused."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool):
            _sized(value, "a width")


def _replace(text, old="", new="", count=-1, *_, **__) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        times = text.count(old) if old else len(text) + 1
        _sized(len(text) + max(times if count < 0 else min(count, times), 0) * len(new), "a replacement")


def _format(text, *args, **kwargs) -> None:
    _widths(*args, **kwargs)
    if isinstance(text, str):  # each field may hold the longest argument
        fields = text.count("{") + text.count("%")
        _sized(len(text) + fields * max((_text_size(v) for v in (*args, *kwargs.values())), default=0), "a format")
    if isinstance(text, str) and any(len(run) > 6 for run in "".join(c if c.isdigit() else " " for c in text).split()):
        raise Budget("a format with a width of a million or more")


def _joined(separator, items) -> None:
    if isinstance(separator, str) and isinstance(items, (list, tuple)):
        _sized(sum(_text_size(item) for item in items) + len(separator) * max(len(items) - 1, 0), "a join")


def _text_size(value, depth: int = 0) -> int:
    """About how many characters str(value) has, found without making it."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (list, tuple, dict)) and depth < 8:
        items = [part for pair in value.items() for part in pair] if isinstance(value, dict) else value
        return 2 + sum(_text_size(item, depth + 1) + 4 for item in items)
    return 24  # a number, None, a bool, an undefined name: short


def _expandtabs(text, tabsize=8, *_, **__) -> None:
    if isinstance(tabsize, int):
        _sized(len(text) + text.count("\t") * max(tabsize, 0), "a tab expansion")


GROWING = {  # str methods whose result can be far larger than their arguments: checked before the call
    "center": lambda s, *a, **k: _widths(*a[:1], **k), "ljust": lambda s, *a, **k: _widths(*a[:1], **k),
    "rjust": lambda s, *a, **k: _widths(*a[:1], **k), "zfill": lambda s, *a, **k: _widths(*a[:1], **k),
    "replace": _replace, "expandtabs": _expandtabs, "join": lambda s, items=(), *_, **__: _joined(s, items),
}
FILTER_CHECKS = {  # Jinja's filters of that kind: (value, *args) -> None, raising Budget
    "center": lambda v, *a, **k: _widths(*a, **k), "indent": lambda v, *a, **k: _widths(*a[:1], **k),
    "format": lambda v, *a, **k: _format(v, *a, **k), "replace": lambda v, *a, **k: _replace(v, *a[:3]),
    "join": lambda v, d="", *a, **k: _joined(d, v),
}


def _checked(filter_, check):
    def bounded(*args, **kwargs):
        value_at = 1 if getattr(filter_, "jinja_pass_arg", None) else 0  # eval-context filters take it first
        check(*args[value_at:], **kwargs)
        return filter_(*args, **kwargs)

    for attr in ("jinja_pass_arg",):
        if hasattr(filter_, attr):
            setattr(bounded, attr, getattr(filter_, attr))
    return bounded


def render(template: str, messages: list[dict], *, bos_token: str = "", eos_token: str = "", add_generation_prompt: bool = True) -> str:
    """The prompt the model was trained to read: `messages` ([{"role", "content"}]) through its template."""
    import jinja2

    def raise_exception(message):
        raise InputError(f"the chat template refuses this prompt: {message}")

    def strftime_now(fmt):
        import datetime

        return datetime.datetime.now().strftime(str(fmt))

    env = _environment()
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now)
    try:
        with _memory_limit(RENDER_MEMORY), _watchdog(RENDER_SECONDS):  # the watchdog inside: it is stopped before the limit is put back
            chunks = _bounded_joins(env.from_string(template)).generate(messages=messages, bos_token=bos_token, eos_token=eos_token,
                                                        add_generation_prompt=add_generation_prompt)
            text = _collect(chunks)
    except InputError:
        raise
    except Timeout:
        text = None  # raised below, outside this handler: a BaseException as its context would read as a Ctrl-C
    except Budget as e:
        raise DataError(f"the model's chat template makes {e}; refused") from None
    except MemoryError:
        raise DataError(f"the model's chat template needs more than {RENDER_MEMORY >> 20} MB to render; refused") from None
    except OverflowError:  # Jinja's sandbox: a range() longer than its MAX_RANGE, or a float too large
        from jinja2.sandbox import MAX_RANGE

        raise DataError(f"the model's chat template makes a range of more than {MAX_RANGE:,} items, or a number too large; refused") from None
    except (jinja2.TemplateError, TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError) as e:
        raise DataError(f"the model's chat template cannot be rendered ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    if text is None:
        raise DataError(f"the model's chat template takes more than {RENDER_SECONDS:g} s to render; refused")
    return text


def _collect(chunks) -> str:
    """The rendered text, refused as soon as it passes MAX_RENDERED characters."""
    parts, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_RENDERED:
            raise Budget(f"a prompt of more than {MAX_RENDERED:,} characters")
        parts.append(chunk)
    return "".join(parts)


class _watchdog:
    """Raises Timeout in this thread if the block is still running after `seconds` (CPython's
    PyThreadState_SetAsyncExc: it lands between two bytecodes, so any Python loop stops; a single long C call
    is bounded by the size checks and the memory limit instead)."""

    def __init__(self, seconds: float):
        self.seconds, self.lock, self.done = seconds, threading.Lock(), False

    def fire(self) -> None:
        with self.lock:
            if not self.done:
                self.api.PyThreadState_SetAsyncExc(self.ctypes.c_ulong(self.thread), self.ctypes.py_object(Timeout))

    def __enter__(self):
        try:
            import ctypes

            self.ctypes, self.api = ctypes, ctypes.pythonapi
        except (ImportError, AttributeError):  # not CPython: the size checks and the memory limit still hold
            self.api = None
            return self
        self.thread = threading.get_ident()
        self.timer = threading.Timer(self.seconds, self.fire)
        self.timer.daemon = True
        self.timer.start()
        return self

    def __exit__(self, *exc):
        if self.api is None:
            return False
        with self.lock:
            self.done = True
        self.timer.cancel()
        self.timer.join()  # gone before the next render counts the threads
        self.api.PyThreadState_SetAsyncExc(self.ctypes.c_ulong(self.thread), None)  # one fired too late is dropped
        return False


class _memory_limit:
    """RLIMIT_AS lowered to what the process holds plus `extra` bytes for the block, then put back; only where
    it is the sole thread (the limit is the whole process's) and the platform has it."""

    def __init__(self, extra: int):
        self.extra, self.saved = extra, None

    def __enter__(self):
        try:
            import resource

            with open("/proc/self/statm") as f:
                held = int(f.read().split()[0]) * resource.getpagesize()
        except (ImportError, OSError, ValueError):
            return self
        if threading.active_count() > 1:  # another thread's memory would be limited too
            return self
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = held + self.extra
        if (soft == resource.RLIM_INFINITY or limit < soft) and (hard == resource.RLIM_INFINITY or limit <= hard):
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
            self.saved = (soft, hard)
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, self.saved)
        return False
