"""Issue 12's reproducers, each as a regression test: bad input of every kind gets one `attn: ...`
line and exit 1 or 2, never a traceback, a warning dump, a silent wrong answer, unbounded work,
or a file of the user's replaced or half-written.

In-process through the real entry point where that shows it (tests/oracle.py `attn`), in a
real subprocess where only a process shows it (closed descriptors, argument bytes, the locale,
file-size limits, a killed writer).
"""

import json
import math
import os
import resource
import signal
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_cli.vectors import fast as fast_format
from attn_cli.heads import registry as heads
from attn_cli.io import memory
from attn_cli.cli.softmax import split_numbers
from attn_cli.lesson.softmax import softmax_result as compute_softmax
from attn_cli.errors import DataError, InputError
from attn_cli.io.atomic import check_writable, clean_stale, move_into_place, temporary_name, write_atomic
from attn_cli.io.files import decode_utf8, printable
from attn_cli.vectors.loading import load
from attn_cli.vectors.store import Vectors
from tests.oracle import ATTN, agrees, attn, attn_process, check, one_line, softmax_reference

needs_script = pytest.mark.skipif(ATTN is None, reason="the attn console script is not installed")
D = 50


@pytest.fixture
def weird_vectors(tmp_path):
    """word2vec text with a zero row (the), a NaN row, an infinite row and a row near float32's limit."""
    rows = {"cat": np.linspace(0.1, 1, D), "dog": np.linspace(1, 0.1, D), "the": np.zeros(D), "nan": np.r_[np.nan, np.ones(D - 1)],
            "inf": np.r_[np.inf, np.ones(D - 1)], "big": np.full(D, 1e38), "[/x]": np.linspace(-1, 1, D)}
    path = tmp_path / "weird.txt"
    path.write_text(f"{len(rows)} {D}\n" + "".join(k + " " + " ".join(repr(float(v)) for v in r) + "\n" for k, r in rows.items()))
    return path


# --- tracebacks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["vectors", "info", "{v}"], ["inspect", "the cat", "--vectors", "{v}"], ["similarity", "cat", "dog", "--vectors", "{v}"],
    ["analogy", "cats", "cat", "--vectors", "{v}"], ["heads", "list", "--vectors", "{v}"],
])  # fmt: skip
def test_an_npz_saved_as_vectors_npy_is_one_line_in_every_command(tmp_path, command):
    folder = tmp_path / "v"
    folder.mkdir()
    with open(folder / "vectors.npy", "wb") as f:
        np.savez(f, a=np.zeros((2, 3)))
    (folder / "keys.txt").write_text("a\nb\n")
    one_line(attn(*[c.format(v=folder) for c in command]), 1, "vectors.npy", "zip archive")


def test_similarity_and_analogy_on_zero_nan_and_infinite_rows(weird_vectors):
    out = check(attn("similarity", "cat", "dog", "the", "--vectors", weird_vectors))
    assert out.code == 0 and "undefined" in out.text and "nan" not in out.text
    one_line(attn("similarity", "cat", "nan", "--vectors", weird_vectors), 1, "'nan' holds NaN or infinite values")
    one_line(attn("similarity", "inf", "cat", "--vectors", weird_vectors), 1, "'inf' holds NaN or infinite values")
    out = check(attn("analogy", "dog", "the", "-p", "cat", "--vectors", weird_vectors))
    assert out.code == 0 and " nan " not in out.text and " inf " not in out.text  # never anyone's nearest key


def test_zero_vector_cosine_is_undefined_not_nan(weird_vectors):
    data = json.loads(check(attn("similarity", "cat", "the", "--vectors", weird_vectors, "--json")).text)
    assert data["pairs"][0]["cosine"] is None and data["pairs"][0]["alignment"] == "undefined"
    shown = attn("similarity", "cat", "the", "--vectors", weird_vectors).text
    assert "cosine = undefined" in shown and "no direction" in shown


# --- Rich markup and control characters -------------------------------------------------------------


def test_probe_words_are_printed_literally():
    out = check(attn("analogy", "cat", "dog", "-p", "[/x]", "-p", "the", "-p", "[red]hi", "-p", ":smile:", "--oov", "zero"))
    assert out.code == 0
    for literal in ("[/x]", "[red]hi", ":smile:"):
        assert literal in out.text


def test_keys_that_look_like_markup_or_escapes_print_literally(weird_vectors, tmp_path):
    out = check(attn("similarity", "[/x]", "cat", "--vectors", weird_vectors))
    assert out.code == 0 and "[/x]" in out.text
    shown = check(attn("inspect", "cat dog", "--head", "identity", "--vectors", weird_vectors, "--neighbors", "3")).text
    assert "[/x]" in shown  # a nearest key
    folder = tmp_path / "escapes"
    fast_format.write_fast(Vectors(["cat", "\x1b[31mred", "dog"], np.eye(3, D, dtype=np.float32) + 0.1), folder)
    shown = check(attn("inspect", "cat dog", "--head", "identity", "--vectors", folder, "--neighbors", "2")).text
    assert "\\x1b[31mred" in shown and "\x1b" not in shown


def test_file_names_in_messages_stay_on_one_line(tmp_path):
    one_line(attn("vectors", "info", str(tmp_path / "two\nlines\x1b[31m.txt")), 1, "two\\nlines\\x1b[31m.txt")


# --- non-finite vectors, lying headers, duplicates ------------------------------------------------------


def test_a_nan_row_is_never_used_silently(weird_vectors):
    one_line(attn("inspect", "cat nan", "--head", "identity", "--json", "--vectors", weird_vectors), 1, "weird.txt", "'nan'")


def test_vectors_near_float32_limit_give_no_overflow_warning(weird_vectors):
    out = check(attn("inspect", "cat big", "--head", "identity", "--json", "--vectors", weird_vectors, "--neighbors", "2"))
    assert out.code == 0
    assert all(abs(sum(row) - 1) < 1e-6 for row in json.loads(out.text)["heads"][0]["weights"])


def test_a_header_smaller_than_the_file_is_refused(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text("3000 4\n" + "".join(f"w{i} 1 2 3 4\n" for i in range(6000)))
    one_line(attn("vectors", "info", path), 1, "announces 3,000 keys", "6,000 rows", "--limit 3000")
    assert check(attn("vectors", "info", path, "--limit", "3000", "--json")).code == 0


def test_duplicate_keys_are_said_and_the_first_vector_kept(tmp_path):
    path = tmp_path / "dups.txt"
    path.write_text("3 2\na 1 2\na 3 4\nb 5 6\n")
    out = check(attn("vectors", "info", path, "--json"))
    assert out.code == 0 and json.loads(out.text)["keys"] == 2
    assert "1 key found more than once ('a'); each keeps its first vector" in out.stderr
    vectors = load(path)
    assert vectors.index_to_key == ["a", "b"] and vectors.get_vector("a").tolist() == [1, 2]
    check(attn("vectors", "convert", path, tmp_path / "out"))
    assert load(tmp_path / "out").index_to_key == ["a", "b"]


def test_an_attn_folder_with_a_repeated_key_uses_its_first_row(tmp_path):
    folder = tmp_path / "v"
    fast_format.write_fast(Vectors(["a", "b", "c"], np.arange(6, dtype=np.float32).reshape(3, 2)), folder)
    (folder / "keys.txt").write_text("a\nb\na\n")
    vectors = load(folder)
    assert vectors.get_vector("a").tolist() == [0, 1] and vectors.duplicate_keys() == ["a"]
    assert "found more than once" in check(attn("vectors", "info", folder)).stderr


# --- softmax at the edges ---------------------------------------------------------------------------


def test_plus_infinity_takes_all_the_mass_whatever_the_temperature():
    out = check(attn("softmax", "inf", "1e308", "-t", "0.5", "--json"))
    assert json.loads(out.text)["probabilities"] == [1.0, 0.0]


def test_softmax_of_x_over_t_without_overflow():
    out = check(attn("softmax", "1e308", "-1e308", "-t", "1e308", "--json"))
    assert json.loads(out.text)["probabilities"] == pytest.approx([0.8807970779778823, 0.11920292202211755], rel=1e-12)
    out = check(attn("softmax", "-", "--temperature", "0", "--log", stdin=b"1e308 -1e308 1e308"))  # no overflow warning
    assert out.code == 0 and "-inf" in out.text


@pytest.mark.parametrize("args, message", [
    (["1", " ", "2"], "argument 2 is blank"), (["1", ""], "argument 2 is blank"), (["1,,2"], "an empty value"),
    (["1e999"], "beyond float64's range"), (["-", "-"], "given twice"),
])  # fmt: skip
def test_blank_and_out_of_range_numbers_are_errors(args, message):
    one_line(attn("softmax", *args), 2, message)


def test_a_huge_softmax_view_is_cut_with_a_note():
    numbers = " ".join(str(i % 1000) for i in range(100_000)).encode()
    out = check(attn("softmax", "-", stdin=numbers))
    assert out.code == 0
    assert "99,800 more values not shown (100,000 in all); --json prints every one" in out.text
    assert out.text.count("\n") < 250


# --- warnings -------------------------------------------------------------------------------------


def test_a_head_with_d_k_zero_is_refused(tmp_path):
    np.savez(tmp_path / "dk0.npz", w_q=np.zeros((D, 0)), w_k=np.zeros((D, 0)), w_v=np.eye(D))
    one_line(attn("inspect", "the cat sat", "--head", tmp_path / "dk0.npz", "--json"), 2, "dk0.npz", "at least 1")


def test_meta_untrained_must_be_a_boolean(tmp_path):
    np.savez(tmp_path / "h.npz", w_q=np.ones((D, 2)), w_k=np.ones((D, 2)), w_v=np.eye(D), meta=np.array('{"untrained": "no"}'))
    one_line(attn("inspect", "the cat", "--head", tmp_path / "h.npz"), 2, "'untrained' must be true or false")


# --- bytes that are not UTF-8, blank input ----------------------------------------------------------------


def test_invalid_utf8_on_stdin_is_a_line_error_naming_the_byte():
    out = check(attn("inspect", "-", "--jsonl", "--oov", "skip", stdin=b"caf\xe9 the cat\nthe cat\n\xa3\xbe\x12e]\n"))
    lines = [json.loads(line) for line in out.text.splitlines()]
    assert lines[0] == {"line": 1, "error": "not UTF-8 text: byte 0xe9 at byte offset 3"}
    assert lines[1]["tokens"] == ["the", "cat"]
    assert lines[2] == {"line": 3, "error": "not UTF-8 text: byte 0xa3 at byte offset 0"}
    assert out.code == 2 and out.stderr == "attn: 2 of 3 lines failed\n"


@needs_script
def test_invalid_utf8_under_a_strict_locale_fails_that_line_only():
    out = check(attn_process("inspect", "-", "--jsonl", "--head", "identity", stdin=b"the \xff cat\nthe cat\n",
                             env={"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}))
    first, second = (json.loads(line) for line in out.text.splitlines())
    assert first == {"line": 1, "error": "not UTF-8 text: byte 0xff at byte offset 4"} and second["tokens"] == ["the", "cat"]


@needs_script
def test_invalid_utf8_in_an_argument_names_the_byte():
    one_line(attn_process("inspect", b"caf\xe9 the cat", "--json"), 2, "TEXT: not UTF-8 text: byte 0xe9 at byte offset 3")
    one_line(attn_process("similarity", b"cat", b"d\xffg"), 2, "word 2: not UTF-8 text: byte 0xff at byte offset 1")


def test_one_sentence_with_jsonl_fails_as_with_json():
    for flag in ("--json", "--jsonl"):
        out = one_line(attn("inspect", flag, "catzz"), 2, "unknown word: 'catzz'")
        assert out.stdout == b""
    one_line(attn("inspect", "--jsonl", ""), 2, "no words in the input")
    one_line(attn("inspect", "--jsonl", "\x1b[31m"), 2, "'\\x1b'")


# --- bounded work --------------------------------------------------------------------------------


def test_neighbors_are_capped():
    out = check(attn("inspect", "the cat", "--neighbors", "472813"))
    assert out.code == 2 and "--neighbors" in out.stderr and "0<=x<=100" in out.stderr


def test_did_you_mean_stays_small_for_huge_words():
    import tracemalloc

    vectors = load()
    tracemalloc.start()
    assert vectors.close_spelling("a" * 8000) is None
    assert vectors.close_spelling("catz") == "cat"
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20_000_000  # the key index, not n^2 edits
    out = check(attn("inspect", "-", "--jsonl", stdin=b"x" * 100_000 + b"\nthe cat\n"))
    first = json.loads(out.text.splitlines()[0])
    assert "(100,000 characters)" in first["error"] and len(first["error"]) < 200


def test_max_tokens_beyond_memory_is_refused_up_front(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 2 * 1024**3)
    one_line(attn("inspect", "the cat", "--max-tokens", "1000000"), 2, "--max-tokens 1,000,000 is more than memory allows",
             "about 2.0 GB is free, enough for 1,638 tokens (--max-tokens 1638)")  # half of it, 200 bytes a cell, 2 heads


def test_a_sentence_beyond_memory_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 64 * 1024**2)
    out = one_line(attn("inspect", " ".join(["the cat"] * 250), "--json"), 2, "500 tokens need about 95.4 MB", "at most 289 tokens fit")
    assert out.stdout == b""


def test_a_short_sentence_does_not_ask_for_free_memory(monkeypatch):
    """Matrices far below any machine's free memory are not checked: a stream of sentences reads no /proc file per line."""
    def refuse():
        raise AssertionError("available_memory() called for a short sentence")

    monkeypatch.setattr(memory, "available_memory", refuse)
    memory.check_memory(100, 2, "2 heads")  # 4 MB of matrices
    with pytest.raises(AssertionError):
        memory.check_memory(300, 2, "2 heads")  # 36 MB: checked


def test_similarity_of_too_many_words_is_refused():
    one_line(attn("similarity", *["the"] * 1000), 2, "1,000 words make 499,500 pairs", "at most 200")


# --- closed descriptors ---------------------------------------------------------------------------


@needs_script
@pytest.mark.parametrize("args", [["softmax", "1", "2", "3"], ["inspect", "the cat sat", "--json"]])
def test_closed_stdout_is_exit_1_and_one_line(args):
    done = subprocess.run([ATTN, *args], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1), timeout=60)
    assert done.returncode == 1 and done.stderr == b"attn: cannot write to standard output (Bad file descriptor)\n"


@needs_script
def test_closed_stdout_and_stderr_and_stdin(tmp_path):
    script = f"'{ATTN}' softmax 1 2 3 >&- 2>{tmp_path / 'err'}; echo $?; '{ATTN}' softmax - <&- 2>&1; echo $?; '{ATTN}' softmax 1 2>&-; echo $?"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    lines = done.stdout.splitlines()
    assert lines[0] == "1" and (tmp_path / "err").read_text() == "attn: cannot write to standard output (Bad file descriptor)\n"
    assert lines[1] == "attn: no numbers given: pass them as arguments, or '-' to read them from stdin" and lines[2] == "2"
    assert lines[-1] == "0"


# --- never replacing what is not ours, atomic writes, leftovers --------------------------------------------


def test_force_never_replaces_a_device_a_fifo_or_a_link(tmp_path):
    source = tmp_path / "src"
    fast_format.write_fast(Vectors(["a", "b"], np.eye(2, dtype=np.float32)), source)
    with pytest.raises(InputError, match="is a device; --force replaces only a regular file"):
        check_writable("/dev/full", True)  # only looked at, never written
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    one_line(attn("vectors", "convert", source, fifo, "--force"), 2, "is a named pipe")
    assert fifo.is_fifo()
    (tmp_path / "target.txt").write_text("mine\n")
    (tmp_path / "link").symlink_to(tmp_path / "target.txt")
    one_line(attn("vectors", "convert", source, tmp_path / "link", "--force"), 2, "is a symbolic link")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "target.txt").read_text() == "mine\n"


def test_force_replaces_only_a_folder_attn_wrote(tmp_path):
    source = tmp_path / "src"
    fast_format.write_fast(Vectors(["a", "b"], np.eye(2, dtype=np.float32)), source)
    old = tmp_path / "old-style"
    old.mkdir()
    np.save(old / "vectors.npy", np.eye(2, dtype=np.float32))
    (old / "keys.txt").write_text("x\ny\n")
    one_line(attn("vectors", "convert", source, old, "--force"), 2, "attn did not write (no attn.json)")
    assert (old / "keys.txt").read_text() == "x\ny\n"
    assert check(attn("vectors", "convert", source, tmp_path / "ours")).code == 0
    assert check(attn("vectors", "convert", source, tmp_path / "ours", "--force")).code == 0
    assert json.loads((tmp_path / "ours" / "attn.json").read_text())["format"] == "attn"


def test_svg_to_a_dangling_link_creates_nothing(tmp_path):
    (tmp_path / "link.svg").symlink_to(tmp_path / "nowhere.svg")
    one_line(attn("inspect", "the cat", "--svg", tmp_path / "link.svg"), 2, "exists; pass --force")
    one_line(attn("inspect", "the cat", "--svg", tmp_path / "link.svg", "--force"), 2, "is a symbolic link")
    assert not (tmp_path / "nowhere.svg").exists()


@needs_script
def test_a_failed_export_leaves_the_old_file_whole(tmp_path):
    picture = tmp_path / "view.svg"
    picture.write_text("the old picture\n")

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    out = attn_process("inspect", "the cat sat", "--svg", picture, "--force", preexec_fn=small_files)
    one_line(out, 1, "view.svg", "File too large")
    assert picture.read_text() == "the old picture\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["view.svg"]


def test_write_atomic_keeps_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "h.npz"
    path.write_text("old\n")

    def fail(f):
        f.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(DataError, match="No space left on device"):
        write_atomic(path, fail, force=True)
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["h.npz"]


def test_a_file_that_appears_meanwhile_is_not_overwritten(tmp_path):
    new = tmp_path / "new"
    new.write_text("ours\n")
    (tmp_path / "dst").write_text("appeared while we worked\n")
    with pytest.raises(InputError, match="exists"):
        move_into_place(new, tmp_path / "dst", replace=False)
    assert (tmp_path / "dst").read_text() == "appeared while we worked\n"


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_leftovers_of_a_killed_run_are_removed_by_the_next_write(tmp_path):
    dst = tmp_path / "glove50"
    stale = tmp_path / f".glove50.{dead_pid()}.0123abcd.tmp"
    stale.mkdir()
    (stale / "vectors.npy").write_bytes(b"half")
    alive = tmp_path / f".glove50.{os.getpid()}.89abcdef.tmp"  # a writer still at work: left alone
    alive.mkdir()
    fast_format.write_fast(Vectors(["a"], np.ones((1, 2), np.float32)), dst)
    assert not stale.exists() and alive.exists()


def test_an_old_copy_set_aside_by_a_killed_run_is_put_back(tmp_path):
    dst = tmp_path / "out.svg"
    aside = tmp_path / f".out.svg.{dead_pid()}.0123abcd.old"
    aside.write_text("the user's picture\n")
    assert clean_stale(dst) == [aside]
    assert dst.read_text() == "the user's picture\n"


@needs_script
@pytest.mark.slow
def test_sigkill_during_convert_leaves_nothing_the_next_run_keeps(tmp_path):
    import time

    source = tmp_path / "source"
    fast_format.write_fast(Vectors([f"w{i}" for i in range(400_000)], np.ones((400_000, D), np.float32)), source)  # 80 MB to write
    out = tmp_path / "out"
    out.mkdir()
    writer = subprocess.Popen([ATTN, "vectors", "convert", source, out / "glove"], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while writer.poll() is None and time.monotonic() < deadline and not any(out.iterdir()):
        time.sleep(0.001)
    writer.send_signal(signal.SIGKILL)  # mid-write: its temporary folder is there
    writer.wait()
    left = [p.name for p in out.iterdir()]
    assert left and all(name.startswith(".glove.") and name.endswith(".tmp") for name in left), left  # never a half-written glove
    assert check(attn("vectors", "convert", source, out / "glove")).code == 0
    assert [p.name for p in out.iterdir()] == ["glove"]


def test_saved_heads_are_written_atomically_and_only_over_regular_files(tmp_path):
    head = heads.identity_head(D)
    os.mkfifo(tmp_path / "h.npz")
    with pytest.raises(InputError, match="named pipe"):
        heads.save_head(head, tmp_path / "h.npz")
    heads.save_head(head, tmp_path / "ok.npz")
    heads.save_head(head, tmp_path / "ok.npz")  # replacing its own regular file is fine
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert temporary_name(tmp_path / "ok.npz").name.startswith(f".ok.npz.{os.getpid()}.")


# --- the house style of usage errors ---------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["softmax", "--bogus"], "attn: no such option: --bogus"),
    (["inspect"], "attn: missing argument 'TEXT'"),
    (["softmax", "-t", "abc", "1"], "attn: invalid value for '--temperature' / '-t': 'abc' is not a valid float"),
    (["vectors", "info", "--limit", "0"], "attn: invalid value for '--limit': 0 is not in the range x>=1"),
    (["frob"], "attn: no such command 'frob'"),
])  # fmt: skip
def test_click_usage_errors_are_a_usage_line_and_one_attn_line(args, message):
    out = check(attn(*args))
    assert out.code == 2 and out.stdout == b""
    usage, line = out.stderr.splitlines()
    assert usage.startswith("Usage: attn") and line.startswith(message)


def test_columns_zero_still_shows_the_view():
    out = check(attn("softmax", "1", "2", "3", env={"COLUMNS": "0"}))
    assert "0.6652" in out.text and "1.000000" in out.text


# --- more of the reproducers, and the invariants behind them ----------------------------------


def test_a_negative_seed_is_a_usage_error():
    for args in (["inspect", "the cat", "--head", "random", "--seed", "-1"], ["heads", "eval", "x.tsv", "--seed", "-5"]):
        out = check(attn(*args))
        assert out.code == 2 and "--seed" in out.stderr


@pytest.mark.slow
def test_twenty_thousand_probes_cost_a_look_up_each():
    probes = " ".join(f"w{i}" for i in range(20_000)).encode()
    out = check(attn("analogy", "cats", "cat", "--probes-file", "-", "--oov", "zero", "--json", stdin=probes))
    assert out.code == 0 and len(json.loads(out.text)["probes"]) == 20_000


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_printable_text_is_one_line_and_only_escapes_what_is_not_printable(text):
    shown = printable(text)
    assert "\n" not in shown and "\x1b" not in shown and all(c.isprintable() or c == " " for c in shown)
    if text.isprintable():
        assert shown == text


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_decoding_names_the_first_byte_that_is_not_utf8(raw):
    try:
        expected = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        with pytest.raises(InputError, match=f"byte 0x{raw[e.start]:02x} at byte offset {e.start}"):
            decode_utf8(raw, "stdin")
    else:
        assert decode_utf8(raw, "stdin") == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=False), st.sampled_from([1e308, -1e308, 5e-324])), min_size=1, max_size=20),
       st.one_of(st.floats(min_value=5e-324, max_value=1.7e308), st.just(0.0)))
def test_softmax_is_softmax_of_x_over_t_exactly_where_it_exists(values, temperature):
    if all(v == -math.inf for v in values):
        return
    result = compute_softmax(values, temperature, log=True)
    assert agrees(result.probabilities, softmax_reference(values, temperature))
    assert not any(math.isnan(x) for x in result.log_probabilities)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=8), st.sampled_from([",", ", ", " ", "\n", " ,\t"]))
def test_every_number_written_is_read_back_and_none_invented(values, separator):
    assert [float(t) for t in split_numbers(separator.join(map(repr, values)))] == values
