"""Standard streams, signals and what is written: a closed or full stdout, Ctrl-C at any moment,
lines of stdin that are huge, blank or meet damaged data, OSError messages, CSV cells, colour
in a pipe, and a destination the user adds to while `attn` works.

Real subprocesses where only a process shows it (descriptors, buffering, signals, memory); the
real entry point in this process otherwise (tests/oracle.py).
"""

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attn_cli
from attn_cli.io import writers
from attn_cli.vectors import fast, store
from attn_cli.vectors.text import FAST_FILES
from attn_cli.io.atomic import clean_stale, move_into_place, remove_written, temporary_name
from attn_cli.errors import DataError, InputError
from attn_cli.io.files import MAX_SHOWN_PATH, printable, shown_path
from attn_cli.io.lines import BLANK_LISTED, Lines
from attn_cli.io.memory import CHARACTERS_PER_POSITION
from attn_cli.vectors.store import Vectors
from tests import checkpoints
from tests.oracle import ATTN, attn, attn_process, check, one_line

needs_script = pytest.mark.skipif(ATTN is None, reason="the attn console script is not installed")
G = checkpoints.tiny_gpt2_folder()
D = 50
BAD_FD = "attn: cannot write to standard output (Bad file descriptor)\n"
FULL = "attn: cannot write to standard output (No space left on device)\n"
INTERRUPTED = "attn: interrupted\n"
CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))]


def process_env(**extra) -> dict:
    """The environment of a real `attn`, without what would change its output, and buffered as a user's is."""
    drop = ("ATTN_VECTORS", "FORCE_COLOR", "NO_COLOR", "ATTN_DEBUG", "PYTHONUNBUFFERED")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "COLUMNS": "100", **extra}


# --- a closed or full standard output -------------------------------------------------------------


@needs_script
@pytest.mark.parametrize("args", [["softmax", "1", "2", "3"], ["softmax", "1", "2", "--json"], ["model", "info", str(G)]])
def test_a_closed_stdout_is_one_line_and_exit_1(args):
    done = subprocess.run([ATTN, *args], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=process_env(),
                          preexec_fn=lambda: os.close(1), timeout=60)
    assert (done.returncode, done.stderr.decode()) == (1, BAD_FD)


@needs_script
def test_a_closed_pipe_stays_quiet():
    """`| head -1`: the reader has what it wanted, and attn stops without a word (exit 1)."""
    lines = b"the cat sat\n" * 2000
    script = f"'{ATTN}' inspect - --jsonl --head identity --neighbors 0 | head -c 1 >/dev/null; echo ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", script], input=lines, capture_output=True, env=process_env(), timeout=120)
    assert done.stdout.decode().strip() == "1" and done.stderr == b""


@needs_script
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args, stdin", [
    (["softmax", "1", "2", "--json"], b""), (["model", "info", str(G)], b""),
    (["inspect", "-", "--jsonl", "--head", "identity"], b"the cat\nthe dog\n"), (["softmax", "1", "2"], b""),
])  # fmt: skip
def test_a_full_disk_is_one_line_and_exit_1_when_stdout_is_buffered(args, stdin):
    """Without PYTHONUNBUFFERED (as a user's shell runs it), what is still in stdout's buffer must not
    fail a second time at exit ("Exception ignored in: <_io.TextIOWrapper ...>", exit 120)."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run([ATTN, *args], input=stdin, stdout=full, stderr=subprocess.PIPE, env=process_env(), timeout=60)
    assert (done.returncode, done.stderr.decode()) == (1, FULL)


# --- OSError messages -----------------------------------------------------------------------------


LONG_NAMES = ["x" * 300 + "\x1b[31mRED\nline2", "y" * 300 + "\x1b]0;pwned\x07", "\x9b31m" + "z" * 400]


@pytest.mark.parametrize("name", LONG_NAMES)
@pytest.mark.parametrize("command", [["model", "info", "{p}"], ["inspect", "the cat", "--vectors", "{p}"], ["vectors", "convert", "{p}", "out"],
                                     ["similarity", "cat", "dog", "--vectors", "{p}"]])
def test_an_oserror_names_its_file_printably_and_shortly(tmp_path, monkeypatch, name, command):
    monkeypatch.chdir(tmp_path)
    out = one_line(attn(*[c.format(p=name) for c in command]), 1, "File name too long")
    assert all(c not in out.stderr[:-1] for c in CONTROLS), out
    assert len(out.stderr) < MAX_SHOWN_PATH + 100, out
    assert f"({len(name):,} characters)" in out.stderr
    assert not (tmp_path / "out").exists()


@given(st.text(max_size=400))
def test_a_shown_path_is_one_bounded_printable_line(text):
    shown = shown_path(text)
    assert all(c not in shown for c in CONTROLS)
    assert len(shown) <= MAX_SHOWN_PATH + len(f" ({len(text):,} characters)")
    if len(printable(text)) <= MAX_SHOWN_PATH:
        assert shown == printable(text)


# --- Ctrl-C ---------------------------------------------------------------------------------------


def ctrl_c(args: list[str], delay: float, stdin=subprocess.DEVNULL) -> tuple[int, str]:
    """Start a real `attn`, send it SIGINT `delay` seconds later: (exit status, stderr)."""
    child = subprocess.Popen([ATTN, *args], stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=process_env())
    time.sleep(delay)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=120)
    return child.returncode, err.decode("utf-8", "replace")


ENTRY = Path(attn_cli.__file__).parent / "__main__.py"
HANDLER_LINE = next(n for n, line in enumerate(ENTRY.read_text().splitlines(), 1) if line.startswith("    _signal.signal(_signal.SIGINT"))
FRAME = re.compile(r'File "([^"]*attn_cli[/\\][^"]*)", line (\d+), in (\S+)')


def before_the_handler(code: int, err: str) -> bool:
    """The signal came before attn's handler was in place (Python's own start-up, the loading of attn's
    entry module up to the handler's line): the process killed outright, or Python's KeyboardInterrupt,
    which attn's handler never raises (a traceback, a fatal start-up error, or one Python reported and
    went on from: a .pth file site could not run, "Exception ignored" in an import's callback). Never an
    exception of attn's, nor a frame of attn's code past that line."""
    if re.search(r"(?m)^(\S+\.)?Interrupted\b", err) or "internal error" in err:  # attn's exception, or its message of a bug
        return False
    for path, line, where in FRAME.findall(err):
        if not (path.endswith("__init__.py") or (Path(path).name == "__main__.py" and where == "<module>" and int(line) <= HANDLER_LINE)):
            return False
    python_start = err.startswith("Fatal Python error: init_")  # its core initialization cut short (init_sys_streams...): no attn code ran
    return "KeyboardInterrupt" in err or python_start or (code == -signal.SIGINT and err == "")


HALF_BUILT = """
import sys
import attn_cli.__main__ as entry
sys.unraisablehook = entry._unraisable
class HalfBuilt:  # as a ZipFile whose __init__ a Ctrl-C cut short: its __del__ fails
    def __del__(self):
        self._writing
held = [HalfBuilt()]
try:
    entry._stop_interrupted()
finally:
    held.clear()  # freed on the way out, after the one line
"""


def test_what_is_freed_after_the_interrupted_line_reports_nothing():
    done = subprocess.run([sys.executable, "-c", HALF_BUILT], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, INTERRUPTED)


def check_ctrl_c(outcomes: list[tuple[float, int, str]]) -> None:
    """Every run ended in one `attn: interrupted` line and exit 130, had finished, or was stopped before attn's handler was in place."""
    for delay, code, err in outcomes:
        assert (code, err) in ((130, INTERRUPTED), (0, "")) or before_the_handler(code, err), f"SIGINT at {delay * 1000:.0f} ms: exit {code}\n{err}"
    assert sum(code == 130 for _, code, _ in outcomes) >= len(outcomes) // 4, outcomes  # most signals land in attn's own start


def run_time(args: list[str]) -> float:
    """Seconds a real `attn` takes from launch to exit, measured here and now (the machine may be busy)."""
    start = time.monotonic()
    subprocess.run([ATTN, *args], stdin=subprocess.DEVNULL, capture_output=True, env=process_env(), timeout=120)
    return time.monotonic() - start


def moments(args: list[str], n: int) -> list[float]:
    """n delays spread over the whole run of `args`, from its launch, and the 30-40 ms after it."""
    whole = run_time(args)
    return [whole * i / n for i in range(n)] + [0.03, 0.035, 0.04]


@needs_script
@pytest.mark.slow
def test_ctrl_c_at_any_moment_of_the_start_is_one_line_and_exit_130():
    delays = moments(["softmax", "1", "2"], 12)
    check_ctrl_c([(d, *ctrl_c(["softmax", "1", "2"], d)) for d in delays * 2])


@needs_script
@pytest.mark.slow
def test_ctrl_c_at_any_moment_many_times():
    commands = [["softmax", "1", "2"], ["inspect", "the cat sat", "--json"], ["model", "info", str(G)], ["heads", "list"]]
    check_ctrl_c([(d, *ctrl_c(command, d)) for command in commands for d in moments(command, 50)])


@needs_script
def test_ctrl_c_while_reading_stdin_is_one_line_and_exit_130():
    child = subprocess.Popen([ATTN, "inspect", "-", "--jsonl", "--head", "identity"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=process_env())
    child.stdin.write(b"the cat sat\n")
    child.stdin.flush()
    first = json.loads(child.stdout.readline())  # answered: attn now waits for the next line
    child.send_signal(signal.SIGINT)
    rest, err = child.communicate(timeout=60)
    assert first["line"] == 1 and rest == b""
    assert (child.returncode, err.decode()) == (130, INTERRUPTED)


@needs_script
@pytest.mark.slow
def test_ctrl_c_during_convert_leaves_the_destination_as_it_was(tmp_path):
    source, out = tmp_path / "source", tmp_path / "out"
    fast.write_fast(Vectors([f"w{i}" for i in range(300_000)], np.ones((300_000, D), np.float32)), source)  # 60 MB to write
    out.mkdir()
    fast.write_fast(Vectors(["old"], np.ones((1, D), np.float32)), out / "glove")
    before = {p.name: p.read_bytes() for p in (out / "glove").iterdir()}
    writer = subprocess.Popen([ATTN, "vectors", "convert", source, out / "glove", "--force"], stderr=subprocess.PIPE, env=process_env())
    deadline = time.monotonic() + 60
    while writer.poll() is None and time.monotonic() < deadline and len(list(out.iterdir())) < 2:
        time.sleep(0.001)
    writer.send_signal(signal.SIGINT)  # mid-write: its temporary folder is there
    _, err = writer.communicate(timeout=60)
    assert (writer.returncode, err.decode()) == (130, INTERRUPTED)
    assert [p.name for p in out.iterdir()] == ["glove"]  # the temporary folder removed on the way out
    assert {p.name: p.read_bytes() for p in (out / "glove").iterdir()} == before


# --- lines of stdin: blank, or on damaged data ----------------------------------------------------


@pytest.fixture
def nan_vectors(tmp_path) -> Path:
    """word2vec text in which 'cat' is a row of NaN."""
    rows = {"the": np.linspace(0.1, 1, D), "dog": np.linspace(1, 0.1, D), "cat": np.r_[np.nan, np.ones(D - 1)], "mat": np.linspace(-1, 1, D)}
    path = tmp_path / "nan.txt"
    path.write_text(f"{len(rows)} {D}\n" + "".join(k + " " + " ".join(repr(float(v)) for v in r) + "\n" for k, r in rows.items()))
    return path


def test_blank_lines_are_counted_in_constant_memory():
    n = 200_000
    source = Lines((number, b"") for number in range(1, n + 1))
    tracemalloc.start()
    assert list(source.results(lambda text: None)) == []
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert source.blank == n and source.first_blank == list(range(1, BLANK_LISTED + 1))
    assert peak < 64 * 1024, peak  # a list of their numbers would hold 200,000 ints (> 5 MB)
    assert source.blank_note() == "skipped 200,000 blank lines (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...)"


def test_blank_lines_are_said_once():
    out = check(attn("inspect", "-", "--jsonl", "--head", "identity", stdin=b"\n" * 1500 + b"the cat\n\n"))
    assert out.code == 0 and [json.loads(line)["line"] for line in out.text.splitlines()] == [1501]
    assert out.stderr == "attn: skipped 1,501 blank lines (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...)\n"


@pytest.mark.parametrize("fmt", ["--jsonl", "--json", "--csv", None])
def test_a_line_on_damaged_data_fails_alone_and_the_stream_goes_on(nan_vectors, fmt):
    out = check(attn("inspect", "-", "--vectors", nan_vectors, "--head", "identity", *([fmt] if fmt else []), stdin=b"the dog\nthe cat\nthe mat\n"))
    assert out.code == 1, out
    error = f"{nan_vectors}: the vector of 'cat' holds NaN or infinite values"
    if fmt == "--jsonl":
        objects = [json.loads(line) for line in out.text.splitlines()]
        assert [o["line"] for o in objects] == [1, 2, 3] and objects[1] == {"line": 2, "error": error} and "heads" in objects[2]
    elif fmt == "--json":
        assert [o.get("error") for o in json.loads(out.text)] == [None, error, None]
    elif fmt == "--csv":
        assert {row["line"] for row in csv.DictReader(io.StringIO(out.text))} == {"1", "3"}
    said = [f"attn: line 2: {error}"] if fmt in ("--csv", None) else []  # JSON carries it in the line's object
    assert out.stderr.splitlines() == [*said, "attn: 1 of 3 lines failed (1 on damaged data)"]


def test_lines_that_fail_on_their_own_text_alone_exit_2(nan_vectors):
    out = check(attn("inspect", "-", "--vectors", nan_vectors, "--head", "identity", "--jsonl", stdin=b"the dog\nzzqx\n"))
    assert out.code == 2 and out.stderr.endswith("attn: 1 of 2 lines failed\n")


def test_lines_mark_which_failures_met_damaged_data():
    def compute(text):
        if text == "bad data":
            raise DataError("damaged")
        if text == "bad line":
            raise InputError("refused")
        return text

    source = Lines(enumerate(["ok", "bad line", "bad data", "ok"], 1))
    assert [(line.number, line.error) for line in source.results(compute)] == [(1, None), (2, "refused"), (3, "damaged"), (4, None)]
    assert (source.read, source.damaged, source.exit_code()) == (4, 1, 1)


# --- a model's lines: bounded before its tokenizer sees them --------------------------------------


def peak_memory_mb(args: list[str], stdin: bytes) -> tuple[int, bytes, float]:
    """(exit status, stdout, peak resident memory in MB) of a real `attn` given `stdin`, measured by a
    process of its own, whose only child it is."""
    probe = ("import resource, subprocess, sys\n"
             f"done = subprocess.run({[ATTN, *args]!r}, stdin=sys.stdin, capture_output=True)\n"
             "sys.stderr.write(f'{done.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n')\n"
             "sys.stdout.buffer.write(done.stdout)\n")
    done = subprocess.run([sys.executable, "-c", probe], input=stdin, capture_output=True, env=process_env(), timeout=300)
    code, kilobytes = done.stderr.split()[-2:]
    return int(code), done.stdout, int(kilobytes) / 1024


@needs_script
def test_a_huge_model_line_is_refused_before_the_tokenizer_sees_it():
    """A 10 MB line cost the tokenizer 2.4 GB (and 30 MB aborted it under a 4 GB limit): refused by its
    length, it costs what reading it does, and the next line is answered."""
    code, out, peak = peak_memory_mb(["inspect", "-", "--model", str(G), "--jsonl"], b"a " * 5_000_000 + b"\nthe cat\n")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 2 and [line["line"] for line in lines] == [1, 2] and "tokens" in lines[1]
    assert lines[0]["error"].startswith("a line of 10,000,000 characters, more than the 2,048 (32 for each of the 64 positions)")
    assert peak < 600, f"{peak:.0f} MB"


@needs_script
def test_a_huge_links_line_for_heads_find_is_refused_before_the_tokenizer_sees_it(tmp_path):
    links = tmp_path / "links.tsv"
    links.write_text("the small cat\tcat\tsmall\n" + "a " * 5_000_000 + "red car\tcar\tred\n")
    code, out, peak = peak_memory_mb(["heads", "find", str(links), "--model", str(G)], b"")
    assert code == 2 and peak < 600, f"{peak:.0f} MB"
    one_line(attn("heads", "find", links, "--model", G), 2, "links.tsv line 2: a line of 10,000,007 characters, more than the 2,048")


def test_a_model_line_is_bounded_at_exactly_its_characters_per_position():
    limit = 64 * CHARACTERS_PER_POSITION
    out = attn("inspect", "-", "--model", G, "--jsonl", stdin=("a" * limit + "\n" + "a" * (limit + 1) + "\n").encode())
    first, second = (json.loads(line)["error"] for line in out.text.splitlines())
    assert "positions tiny-gpt2 has" in first  # the tokenizer's own count says it is too long
    assert second.startswith(f"a line of {limit + 1:,} characters")  # refused before tokenizing


# --- --force and files added while attn works -----------------------------------------------------


def attn_folder(path: Path, keys: list[str]) -> Path:
    fast.write_fast(Vectors(keys, np.ones((len(keys), 4), np.float32)), path)
    return path


def test_force_keeps_a_folder_the_user_added_to_during_the_conversion(tmp_path):
    """The file arrives while convert reads its source, after the check made before the work."""
    source, dst = attn_folder(tmp_path / "source", ["a", "b", "c"]), attn_folder(tmp_path / "dst", ["old"])
    source_text = tmp_path / "source.txt"
    source_text.write_text("3 4\n" + "".join(f"{k} 1 2 3 4\n" for k in "abc"))
    before = {p.name: p.read_bytes() for p in dst.iterdir()}

    def user_adds_a_file(done: int) -> None:
        (dst / "notes.txt").write_text("precious\n")

    with pytest.raises(InputError, match=r"dst: notes.txt appeared in it while attn worked; left as it is, not replaced"):
        fast.convert(source_text, dst, force=True, on_bytes=user_adds_a_file)
    assert {p.name: p.read_bytes() for p in dst.iterdir()} == {**before, "notes.txt": b"precious\n"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dst", "source", "source.txt"]  # nothing half-written left beside it
    with pytest.raises(InputError, match="holding other files"):
        fast.convert(source, dst, force=True)  # the next run refuses it up front


@needs_script
@pytest.mark.slow
def test_force_keeps_a_file_added_while_a_real_conversion_runs(tmp_path):
    source, out = tmp_path / "source", tmp_path / "out"
    fast.write_fast(Vectors([f"w{i}" for i in range(300_000)], np.ones((300_000, D), np.float32)), source)
    out.mkdir()
    dst = attn_folder(out / "dst", ["old"])
    writer = subprocess.Popen([ATTN, "vectors", "convert", source, dst, "--force"], stderr=subprocess.PIPE, env=process_env())
    deadline = time.monotonic() + 60
    while writer.poll() is None and time.monotonic() < deadline and len(list(out.iterdir())) < 2:
        time.sleep(0.001)
    writer.send_signal(signal.SIGSTOP)  # held mid-write, so the file surely comes while it works
    (dst / "notes.txt").write_text("precious\n")
    writer.send_signal(signal.SIGCONT)
    _, err = writer.communicate(timeout=120)
    assert (writer.returncode, err.decode()) == (2, f"attn: {dst}: notes.txt appeared in it while attn worked; left as it is, not replaced\n")
    assert (dst / "notes.txt").read_text() == "precious\n" and store.load_fast(dst).index_to_key == ["old"]
    assert [p.name for p in out.iterdir()] == ["dst"]


def test_only_the_files_attn_wrote_are_removed_from_an_old_folder(tmp_path):
    old = attn_folder(tmp_path / "old", ["a"])
    (old / "late.txt").write_text("came through a folder still open\n")
    assert not remove_written(old, FAST_FILES)
    assert [p.name for p in old.iterdir()] == ["late.txt"]
    (old / "late.txt").unlink()
    assert remove_written(old, FAST_FILES) is True and not old.exists()


def test_a_stale_old_folder_holding_a_users_file_is_kept(tmp_path):
    dst = attn_folder(tmp_path / "dst", ["new"])
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    aside = tmp_path / f".dst.{child.pid}.0123abcd.old"
    attn_folder(aside, ["old"])
    (aside / "notes.txt").write_text("precious\n")
    assert clean_stale(dst, FAST_FILES) == []
    assert [p.name for p in aside.iterdir()] == ["notes.txt"]  # attn's files gone, the user's kept


def test_replacing_a_folder_that_holds_only_attns_files_still_works(tmp_path):
    dst = attn_folder(tmp_path / "dst", ["old"])
    new = attn_folder(temporary_name(dst), ["new"])
    move_into_place(new, dst, replace=True, written=FAST_FILES)
    assert store.load_fast(dst).index_to_key == ["new"] and [p.name for p in tmp_path.iterdir()] == ["dst"]


# --- --steps --------------------------------------------------------------------------------------


@pytest.mark.parametrize("steps", ["9223372036854775808", "100001"])
def test_steps_beyond_the_maximum_are_a_usage_error(tmp_path, steps):
    out = attn("heads", "train", Path(__file__).parents[1] / "data" / "heads" / "adjective_train.tsv", tmp_path / "h.npz", "--steps", steps)
    check(out)
    assert out.code == 2 and out.stderr.splitlines()[-1] == f"attn: invalid value for '--steps': {steps} is not in the range 1<=x<=100000"
    assert not (tmp_path / "h.npz").exists()
    assert "at most 100,000" in attn("heads", "train", "--help").text


# --- CSV and TSV cells ----------------------------------------------------------------------------


@pytest.fixture
def odd_vectors(tmp_path) -> Path:
    keys = ["cat", "dog", "\x1b]0;pwned\x07", "=1+1", "@SUM(A1)", "+x", "-lrb-", "\x9b31mred"]
    path = tmp_path / "odd.txt"
    rng = np.random.default_rng(0)
    path.write_text(f"{len(keys)} 4\n" + "".join(k + " " + " ".join(f"{v:.4f}" for v in rng.normal(size=4)) + "\n" for k in keys))
    return path


def rows_of(out, delimiter=",") -> list[dict]:
    return list(csv.DictReader(io.StringIO(out.text), delimiter=delimiter))


@pytest.mark.parametrize("fmt, delimiter", [("--csv", ","), ("--tsv", "\t")])
def test_control_characters_in_cells_are_escaped(odd_vectors, fmt, delimiter):
    keys = ["cat", "\x1b]0;pwned\x07", "\x9b31mred"]
    out = check(attn("similarity", *keys, "--vectors", odd_vectors, fmt))
    assert out.code == 0 and not set(out.text) & (set(CONTROLS) - {"\n", delimiter})
    assert [(r["a"], r["b"]) for r in rows_of(out, delimiter)] == [("cat", "\\x1b]0;pwned\\x07"), ("cat", "\\x9b31mred"), ("\\x1b]0;pwned\\x07", "\\x9b31mred")]
    out = check(attn("inspect", "the \x1b[31mcat", "--oov", "zero", "--head", "identity", fmt))
    assert "\\x1b" in {r["key_token"] for r in rows_of(out, delimiter)}


def test_formula_cells_are_left_alone_unless_asked_for_a_spreadsheet(odd_vectors):
    words = ["cat", "=1+1", "@SUM(A1)", "+x", "-lrb-"]
    plain = rows_of(check(attn("similarity", "--vectors", odd_vectors, "--csv", "--", *words)))
    assert {r["b"] for r in plain} == {"=1+1", "@SUM(A1)", "+x", "-lrb-"}  # for pandas and R, cells as they are
    quoted = rows_of(check(attn("similarity", "--vectors", odd_vectors, "--csv", "--spreadsheet", "--", *words)))
    assert {r["b"] for r in quoted} == {"'=1+1", "'@SUM(A1)", "'+x", "'-lrb-"}
    assert [r["dot"] for r in quoted] == [r["dot"] for r in plain] and any(r["dot"].startswith("-") for r in plain)  # numbers untouched
    out = check(attn("softmax", "-1", "-2", "--tsv", "--spreadsheet"))
    assert [r["value"] for r in rows_of(out, "\t")] == ["-1.0", "-2.0"]


@pytest.mark.parametrize("args", [["softmax", "1", "2", "--spreadsheet"], ["similarity", "cat", "dog", "--json", "--spreadsheet"]])
def test_spreadsheet_without_csv_is_a_usage_error(args):
    out = check(attn(*args))
    assert out.code == 2 and out.stderr.endswith("attn: --spreadsheet applies to --csv and --tsv output\n")


def test_spreadsheet_is_offered_only_where_there_are_rows():
    for command in (["softmax"], ["inspect"], ["similarity"], ["analogy"], ["heads", "eval"], ["heads", "detect"], ["heads", "stats"], ["senses", "eval"], ["predict"]):
        assert "--spreadsheet" in attn(*command, "--help").text, command
    for command in (["model", "info"], ["vectors", "info"], ["vectors", "convert"], ["heads", "list"], ["heads", "train"], ["heads", "find"]):
        assert "--spreadsheet" not in attn(*command, "--help").text, command


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.text(st.sampled_from(["=", "+", "-", "@", "a", " ", "\t", "\r", "\n", "\x1b", "\x9b", "\x7f"]))), st.booleans())
def test_a_text_cell_holds_no_control_character_but_layout_and_a_quoted_one_never_starts_a_formula(text, as_text):
    layout = {"\n", "\t"}  # a line break and a tab are text's own, held in a quoted cell; the rest act on a terminal
    escaped = "".join(repr(c)[1:-1] if c in CONTROLS and c not in layout else c for c in text)  # escaped, nothing else changed
    cell = writers.cell(text, as_text)
    assert cell == ("'" + escaped if as_text and escaped[:1] in ("=", "+", "-", "@", "\t") else escaped)
    assert not set(cell) & (set(CONTROLS) - layout) and not (as_text and cell.startswith(writers.FORMULA_START))
    assert writers.cell(-0.5, as_text) == "-0.5" and writers.cell(-3, as_text) == -3


# --- colour in a pipe -----------------------------------------------------------------------------


@needs_script
@pytest.mark.slow
def test_force_color_colours_a_piped_view_and_never_data():
    assert b"\x1b[" not in attn_process("softmax", "1", "2").stdout
    assert b"\x1b[" in attn_process("softmax", "1", "2", env={"FORCE_COLOR": "1"}).stdout  # for `| less -R`, as README says
    for data in (["--json"], ["--csv"], ["--jsonl"]):
        out = attn_process("softmax", "1", "2", *data, env={"FORCE_COLOR": "1"})
        assert out.code == 0 and b"\x1b" not in out.stdout, data
