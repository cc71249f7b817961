"""Loading every supported vectors format, `attn vectors info|convert`, and their failures.

The files are tiny and written by each test with gensim, so what is read back can be compared
with what was written.
"""

import io
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import parse_json
from tests.exact import assert_copied
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attn_cli.vectors import formats
from attn_cli.vectors import text as text_format
from attn_cli.vectors import fast as fast_format
from attn_cli.errors import DataError, InputError
from attn_cli.vectors.loading import load
from attn_cli.vectors.store import Vectors

KEYS = ["the", "cat", "sat", "on", "mat", "naïve"]
MATRIX = (np.arange(len(KEYS) * 5, dtype=np.float32).reshape(len(KEYS), 5) - 7.0) / 3.0  # [6, 5]
INFO_KEYS = {"path", "format", "keys", "dimension", "dtype", "file_bytes", "load_seconds"}
CONVERT_KEYS = {"source", "source_format", "destination", "keys", "dimension", "dtype", "file_bytes", "seconds"}


def keyed_vectors(keys=KEYS, matrix=MATRIX):
    from gensim.models import KeyedVectors

    kv = KeyedVectors(matrix.shape[1])
    kv.add_vectors(keys, matrix)
    return kv


def write_word2vec_text(path):
    keyed_vectors().save_word2vec_format(str(path))
    return path


def write_glove_text(path):
    keyed_vectors().save_word2vec_format(str(path), write_header=False)
    return path


def write_word2vec_bin(path):
    keyed_vectors().save_word2vec_format(str(path), binary=True)
    return path


def write_fast(path):
    fast_format.write_fast(Vectors(KEYS, MATRIX), path)
    return path


WRITERS = {  # format -> (file name, writer)
    formats.WORD2VEC_TEXT: ("words.txt", write_word2vec_text),
    formats.GLOVE_TEXT: ("glove.txt", write_glove_text),
    formats.WORD2VEC_BIN: ("words.bin", write_word2vec_bin),
    formats.FASTTEXT_VEC: ("words.vec", write_word2vec_text),
    "attn": ("words-attn", write_fast),
}


@pytest.fixture(params=list(WRITERS))
def vectors_file(request, tmp_path):
    """(path, format) of a tiny vectors file in each supported format but fastText .bin."""
    name, writer = WRITERS[request.param]
    return writer(tmp_path / name), request.param


@pytest.fixture(scope="session")
def fasttext_model():
    from gensim.models import FastText

    sentences = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "sat", "on", "a", "log"]] * 5
    return FastText(sentences, vector_size=8, min_count=1, bucket=500, min_n=2, max_n=4, epochs=2, seed=1, workers=1)


@pytest.fixture
def fasttext_bin(tmp_path, fasttext_model):
    from gensim.models.fasttext import save_facebook_model

    path = tmp_path / "words.bin"
    save_facebook_model(fasttext_model, str(path))
    return path


def assert_one_line_error(result, code, *needles):
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attn: "), result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr


# --- loading each format ----------------------------------------------------------------------


def test_detects_and_loads_each_format(vectors_file):
    path, fmt = vectors_file
    assert formats.detect_format(path) == fmt
    vectors = load(path)
    assert vectors.format == fmt
    assert vectors.index_to_key == KEYS
    np.testing.assert_allclose(vectors.vectors, MATRIX, rtol=1e-6)
    np.testing.assert_allclose(vectors.get_vector("naïve"), MATRIX[-1], rtol=1e-6)
    with pytest.raises(KeyError):
        vectors.get_vector("dog")


def test_limit_keeps_the_first_keys(vectors_file, run):
    path, fmt = vectors_file
    vectors = load(path, limit=2)
    assert vectors.index_to_key == KEYS[:2]
    np.testing.assert_allclose(vectors.vectors, MATRIX[:2], rtol=1e-6)
    info = parse_json(run("vectors", "info", path, "--limit", 2, "--json"))
    assert (info["keys"], info["dimension"], info["format"]) == (2, 5, fmt)


def test_info_takes_vectors_as_every_command_does(tmp_path, run):
    """`vectors info --vectors FILE` is `vectors info FILE`; the argument wins over $ATTN_VECTORS,
    and two different files are a usage error."""
    path = write_word2vec_text(tmp_path / "words.txt")
    by_option = parse_json(run("vectors", "info", "--vectors", path, "--json"))
    by_argument = parse_json(run("vectors", "info", path, "--json"))
    by_both = parse_json(run("vectors", "info", path, "--vectors", path, "--json"))
    for info in (by_option, by_argument, by_both):
        assert (info["path"], info["format"], info["keys"]) == (str(path), formats.WORD2VEC_TEXT, len(KEYS))
    from_env = parse_json(run("vectors", "info", path, "--json", env={"ATTN_VECTORS": str(tmp_path / "nowhere")}))
    assert from_env["keys"] == len(KEYS)
    clash = run("vectors", "info", path, "--vectors", tmp_path / "other.txt")
    assert clash.exit_code == 2 and clash.stdout == ""
    assert clash.stderr.splitlines()[-1].startswith("attn: ") and "--vectors" in clash.stderr


def test_convert_round_trip(vectors_file, tmp_path, run):
    path, fmt = vectors_file
    dst = tmp_path / "out"
    result = run("vectors", "convert", path, dst)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert f"converted 6 keys x 5 ({fmt} -> float32)" in result.stderr
    assert sorted(p.name for p in dst.iterdir()) == ["attn.json", "keys.txt", "norms.npy", "vectors.npy"]
    converted, original = load(dst), load(path)
    assert converted.format == "attn"
    assert converted.index_to_key == original.index_to_key == KEYS
    assert_copied(converted.vectors, original.vectors)
    assert converted.vectors.dtype == np.float32


def test_convert_limit_and_json(vectors_file, tmp_path, run):
    path, fmt = vectors_file
    dst = tmp_path / "out"
    result = run("vectors", "convert", path, dst, "--limit", 3, "--json")
    report = parse_json(result)
    assert set(report) == CONVERT_KEYS
    assert report["source_format"] == fmt
    assert (report["keys"], report["dimension"], report["dtype"]) == (3, 5, "float32")
    assert report["file_bytes"] == sum(p.stat().st_size for p in dst.iterdir())
    assert result.stderr == ""
    assert load(dst).index_to_key == KEYS[:3]


def test_fasttext_vec_is_word2vec_text_by_another_name(tmp_path):
    vec = write_word2vec_text(tmp_path / "words.vec")
    txt = write_word2vec_text(tmp_path / "words.txt")
    assert formats.detect_format(vec) == "fasttext-vec"
    assert formats.detect_format(txt) == "word2vec-text"


def test_fasttext_bin_gives_subword_vectors_to_unknown_words(fasttext_bin, fasttext_model):
    assert formats.detect_format(fasttext_bin) == "fasttext-bin"
    vectors = load(fasttext_bin)
    assert vectors.format == "fasttext-bin"
    assert vectors.index_to_key == fasttext_model.wv.index_to_key
    np.testing.assert_allclose(vectors.vectors, fasttext_model.wv.vectors, rtol=1e-6)
    assert "cats" not in vectors and vectors.has_vector("cats")
    oov = vectors.get_vector("cats")  # built from the n-grams of "cats"
    np.testing.assert_allclose(oov, fasttext_model.wv.get_vector("cats"), rtol=1e-5)
    assert np.linalg.norm(oov) > 0
    assert load(fasttext_bin, limit=3).index_to_key == fasttext_model.wv.index_to_key[:3]


def test_fasttext_bin_converts_its_keys(fasttext_bin, fasttext_model, tmp_path, run):
    report = parse_json(run("vectors", "convert", fasttext_bin, tmp_path / "out", "--json"))
    assert report["source_format"] == "fasttext-bin"
    converted = load(tmp_path / "out")
    assert converted.index_to_key == fasttext_model.wv.index_to_key
    assert_copied(converted.vectors, fasttext_model.wv.vectors)


def test_float16_stays_float16(tmp_path, run):
    fast_format.write_fast(Vectors(KEYS, MATRIX.astype(np.float16)), tmp_path / "half")
    assert load(tmp_path / "half").vectors.dtype == np.float16
    report = parse_json(run("vectors", "convert", tmp_path / "half", tmp_path / "copy", "--json"))
    assert report["dtype"] == "float16"
    assert_copied(load(tmp_path / "copy").vectors, MATRIX.astype(np.float16))


def test_fast_format_keys_survive_odd_characters(tmp_path):
    keys = ["", " ", "tab\tkey", "ünïcødé", "'s", "last"]
    fast_format.write_fast(Vectors(keys, MATRIX), tmp_path / "odd")
    assert load(tmp_path / "odd").index_to_key == keys


# --- pickles ----------------------------------------------------------------------------------


def test_gensim_pickle_refused_without_trust(tmp_path, run):
    path = tmp_path / "words.kv"
    keyed_vectors().save(str(path))
    with pytest.raises(InputError, match="--trust-pickle"):
        formats.detect_format(path)
    assert_one_line_error(run("vectors", "info", path), 2, "--trust-pickle", "pickle", str(path))
    assert_one_line_error(run("vectors", "convert", path, tmp_path / "out"), 2, "--trust-pickle")
    assert not (tmp_path / "out").exists()


def test_gensim_pickle_loaded_with_trust(tmp_path, run):
    path = tmp_path / "words.kv"
    keyed_vectors().save(str(path))
    info = parse_json(run("vectors", "info", path, "--trust-pickle", "--json"))
    assert (info["format"], info["keys"], info["dimension"]) == ("gensim-kv", 6, 5)
    report = parse_json(run("vectors", "convert", path, tmp_path / "out", "--trust-pickle", "--json"))
    assert report["source_format"] == "gensim-kv"
    assert load(tmp_path / "out").index_to_key == KEYS


def test_gensim_model_file_gives_its_vectors(tmp_path, fasttext_model):
    path = tmp_path / "model.model"
    fasttext_model.save(str(path))
    vectors = load(path, trust=True)
    assert vectors.format == "gensim-kv"
    assert vectors.index_to_key == fasttext_model.wv.index_to_key
    np.testing.assert_allclose(vectors.get_vector("cats"), fasttext_model.wv.get_vector("cats"), rtol=1e-5)


# --- detection errors and damaged files -------------------------------------------------------


def test_not_a_vectors_file_is_bad_input(tmp_path, run):
    path = tmp_path / "notes.txt"
    path.write_text("Dear diary,\ntoday I read about attention.\n")
    with pytest.raises(InputError, match="not a word-vectors file"):
        formats.detect_format(path)
    assert_one_line_error(run("vectors", "info", path), 2, "not a word-vectors file", "notes.txt")
    binary = tmp_path / "noise.bin"
    binary.write_bytes(bytes(range(7, 256)) * 10)
    assert_one_line_error(run("vectors", "info", binary), 2, "not a word-vectors file")


def test_folder_without_matrix_is_bad_input(tmp_path, run):
    (tmp_path / "empty-folder").mkdir()
    assert_one_line_error(run("vectors", "info", tmp_path / "empty-folder"), 2, "vectors.npy")


def test_missing_and_empty_files_fail_at_run_time(tmp_path, run):
    assert_one_line_error(run("vectors", "info", tmp_path / "nowhere.txt"), 1, "nowhere.txt")
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(DataError, match="empty"):
        formats.detect_format(tmp_path / "empty.txt")
    assert_one_line_error(run("vectors", "info", tmp_path / "empty.txt"), 1, "empty.txt", "empty")


def cut(path, keep):
    """Keep the first `keep` bytes (a negative `keep`: drop that many from the end)."""
    data = path.read_bytes()
    path.write_bytes(data[:keep])
    return path


def damaged_word2vec_text(tmp_path):
    return cut(write_word2vec_text(tmp_path / "cut.txt"), -40)


def damaged_glove_text(tmp_path):
    return cut(write_glove_text(tmp_path / "cut-glove.txt"), -12)


def damaged_word2vec_bin(tmp_path):
    return cut(write_word2vec_bin(tmp_path / "cut.bin"), -10)


def damaged_header(tmp_path):
    path = tmp_path / "header.txt"
    path.write_text("6 5\nthe 0.1 0.2\n")
    return path


def damaged_value(tmp_path):
    path = tmp_path / "value.txt"
    path.write_text("2 3\nthe 0.1 0.2 0.3\ncat 0.1 zero 0.3\n")
    return path


def damaged_utf8(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("2 3\nthe 0.1 0.2 0.3\ncafé 0.1 0.2 0.3\n".encode("latin-1"))
    return path


def damaged_pickle(tmp_path):
    path = tmp_path / "cut.kv"
    keyed_vectors().save(str(path))
    return cut(path, 60)


@pytest.mark.parametrize(
    "damage",
    [damaged_word2vec_text, damaged_glove_text, damaged_word2vec_bin, damaged_header, damaged_value, damaged_utf8, damaged_pickle],
)
def test_damaged_files_fail_with_one_line(damage, tmp_path, run):
    path = damage(tmp_path)
    with pytest.raises(DataError):
        load(path, trust=True)
    assert_one_line_error(run("vectors", "info", path, "--trust-pickle"), 1, path.name)
    assert_one_line_error(run("vectors", "convert", path, tmp_path / "out", "--trust-pickle"), 1, path.name)
    assert not (tmp_path / "out").exists()


def test_truncated_fasttext_bin(fasttext_bin, run):
    cut(fasttext_bin, fasttext_bin.stat().st_size // 2)
    assert_one_line_error(run("vectors", "info", fasttext_bin), 1, "words.bin", "fastText")


# --- convert: never overwrite, never half-written ---------------------------------------------


def test_convert_refuses_to_overwrite(tmp_path, run):
    src = write_word2vec_text(tmp_path / "words.txt")
    dst = tmp_path / "precious"
    dst.write_text("mine\n")
    assert_one_line_error(run("vectors", "convert", src, dst), 2, "--force")
    assert dst.read_text() == "mine\n"
    result = run("vectors", "convert", src, dst, "--force")
    assert result.exit_code == 0, result.stderr
    assert load(dst).index_to_key == KEYS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious", "words.txt"]


def test_convert_force_replaces_a_folder(tmp_path, run):
    src = write_word2vec_text(tmp_path / "words.txt")
    fast_format.write_fast(Vectors(["old"], MATRIX[:1]), tmp_path / "out")
    assert run("vectors", "convert", src, tmp_path / "out", "--force").exit_code == 0
    assert load(tmp_path / "out").index_to_key == KEYS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "words.txt"]


def test_convert_into_a_missing_folder_is_bad_input(tmp_path, run):
    src = write_word2vec_text(tmp_path / "words.txt")
    assert_one_line_error(run("vectors", "convert", src, tmp_path / "no" / "out"), 2, "no such folder")


def fail_after(calls, exc):
    """A stand-in for _write_keys (path, keys), once the matrix is written, or for _append_rows
    (matrix file, keys file, keys, block), with the files open: it fails mid-way."""

    def write_keys(path, *rest):
        calls.append(path)
        if isinstance(path, Path):
            assert (path.parent / "vectors.npy").stat().st_size > 0  # truly mid-way
        raise exc

    return write_keys


@pytest.mark.parametrize(
    "writer, step",
    [(write_word2vec_bin, "_write_keys"), (write_word2vec_text, "_append_rows")],  # loaded then written; streamed
)
def test_failed_conversion_leaves_nothing(tmp_path, run, monkeypatch, writer, step):
    src = writer(tmp_path / "words")
    calls = []
    monkeypatch.setattr(fast_format, step, fail_after(calls, OSError(28, "No space left on device")))
    assert_one_line_error(run("vectors", "convert", src, tmp_path / "out"), 1, "No space left on device")
    assert calls
    assert sorted(p.name for p in tmp_path.iterdir()) == ["words"]


def test_interrupted_conversion_keeps_the_old_destination(tmp_path, monkeypatch):
    fast_format.write_fast(Vectors(["old"], MATRIX[:1]), tmp_path / "out")
    monkeypatch.setattr(fast_format, "_write_keys", fail_after([], KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        fast_format.write_fast(Vectors(KEYS, MATRIX), tmp_path / "out", force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert load(tmp_path / "out").index_to_key == ["old"]


def test_keys_with_line_breaks_are_refused(tmp_path, run):
    path = tmp_path / "odd.kv"
    keyed_vectors(["fine", "two\nlines"], MATRIX[:2]).save(str(path))
    assert_one_line_error(run("vectors", "convert", path, tmp_path / "out", "--trust-pickle"), 1, "line break")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["odd.kv"]
    with pytest.raises(DataError, match="line break"):
        fast_format.write_fast(Vectors(["a\rb"], MATRIX[:1]), tmp_path / "out")


def test_write_fast_reports_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(fast_format, "ROWS_PER_CHUNK", 4)
    seen = []
    fast_format.write_fast(Vectors(KEYS, MATRIX), tmp_path / "out", on_rows=lambda done, total: seen.append((done, total)))
    assert seen == [(4, 6), (6, 6)]


def test_load_foreign_reports_bytes_read(tmp_path):
    path = write_glove_text(tmp_path / "glove.txt")
    seen = []
    vectors = formats.load_foreign(path, on_bytes=seen.append)
    assert vectors.index_to_key == KEYS
    assert seen[-1] == path.stat().st_size


# --- info and where vectors come from ---------------------------------------------------------


def test_info_json_keys_for_the_default_vectors(run):
    info = parse_json(run("vectors", "info", "--json"))
    assert set(info) == INFO_KEYS
    assert info["format"] == "attn"
    assert (info["keys"], info["dimension"], info["dtype"]) == (100_000, 50, "float32")
    assert info["file_bytes"] > 100_000 * 50 * 4
    assert 0 <= info["load_seconds"] < 5


def test_info_for_a_person(tmp_path, run):
    path = write_word2vec_bin(tmp_path / "words.bin")
    result = run("vectors", "info", path)
    assert result.exit_code == 0, result.stderr
    for text in ("word2vec-bin", "keys", "6", "dimension", "5", "float32"):
        assert text in result.stdout


def test_attn_vectors_env_var(tmp_path, run, monkeypatch):
    path = write_glove_text(tmp_path / "glove.txt")
    info = parse_json(run("vectors", "info", "--json", env={"ATTN_VECTORS": str(path)}))
    assert (info["path"], info["format"], info["keys"]) == (str(path), "glove-text", 6)
    assert load(None).format == "attn"
    monkeypatch.setenv("ATTN_VECTORS", str(path))
    assert load(None).index_to_key == KEYS
    assert load(tmp_path / "glove.txt", limit=1).index_to_key == KEYS[:1]


def test_info_and_convert_json_are_plain_json(tmp_path, run):
    src = write_word2vec_text(tmp_path / "words.txt")
    result = run("vectors", "convert", src, tmp_path / "out", "--json")
    assert json.loads(result.stdout)["keys"] == 6
    assert "\x1b" not in result.stdout


def test_force_never_replaces_a_folder_of_other_files(tmp_path, run):
    src = write_word2vec_text(tmp_path / "words.txt")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.md").write_text("keep me\n")
    assert_one_line_error(run("vectors", "convert", src, tmp_path / "project", "--force"), 2, "notes.md")
    assert (tmp_path / "project" / "notes.md").read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project", "words.txt"]


def test_convert_to_the_current_folder_is_refused(tmp_path, run, monkeypatch):
    src = write_word2vec_text(tmp_path / "words.txt")
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(run("vectors", "convert", src, ".", "--force"), 2, "words.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["words.txt"]


@pytest.mark.parametrize("ending", [b"\n", b""])
def test_glove_text_with_or_without_a_last_newline(tmp_path, ending):
    path = tmp_path / "glove.txt"
    path.write_bytes(b"the 0.5 -1\r\ncat 2 3e-1\r\nsat 1 1" + ending)
    vectors = load(path)
    assert vectors.index_to_key == ["the", "cat", "sat"]
    np.testing.assert_allclose(vectors.vectors, [[0.5, -1], [2, 0.3], [1, 1]])
    assert load(path, limit=2).index_to_key == ["the", "cat"]


def test_conversion_progress_tracks_bytes_then_rows(tmp_path):
    from rich.console import Console
    from rich.progress import Progress

    from attn_cli.cli.vectors import ConversionProgress

    path = write_word2vec_text(tmp_path / "words.txt")
    with Progress(console=Console(file=io.StringIO())) as bars:
        progress = ConversionProgress(bars, path)
        reading = bars.tasks[0]
        assert reading.total is None  # pulsing until gensim starts reading
        formats.load_foreign(path, on_bytes=progress.on_bytes)
        assert (reading.completed, reading.total) == (path.stat().st_size, path.stat().st_size)
        fast_format.write_fast(Vectors(KEYS, MATRIX), tmp_path / "out", on_rows=progress.on_rows)
        writing = bars.tasks[1]
        assert (writing.completed, writing.total) == (6, 6)


# --- properties -------------------------------------------------------------------------------

any_key = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=12)
word = st.text(st.characters(whitelist_categories=("L", "N"), max_codepoint=0x2FF), min_size=1, max_size=10)
finite = st.floats(-1e6, 1e6, width=32, allow_subnormal=False)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n_keys=st.integers(1, 8), d=st.integers(1, 6))
def test_fast_format_round_trips_any_keys(data, n_keys, d):
    keys = data.draw(st.lists(any_key, min_size=n_keys, max_size=n_keys, unique=True))  # a repeated key is written once
    matrix = data.draw(arrays(np.float32, (n_keys, d), elements=finite))
    with tempfile.TemporaryDirectory() as tmp:
        fast_format.write_fast(Vectors(keys, matrix), f"{tmp}/out")
        loaded = load(f"{tmp}/out")
        assert loaded.index_to_key == keys
        assert_copied(loaded.vectors, matrix)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), n_keys=st.integers(1, 6), d=st.integers(2, 5), fmt=st.sampled_from(list(WRITERS)[:4]))
def test_foreign_formats_round_trip_any_words(data, n_keys, d, fmt):
    keys = data.draw(st.lists(word, min_size=n_keys, max_size=n_keys, unique=True))
    matrix = data.draw(arrays(np.float32, (n_keys, d), elements=finite))
    name, _ = WRITERS[fmt]
    kv = keyed_vectors(keys, matrix)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/{name}"
        kv.save_word2vec_format(path, binary=fmt == "word2vec-bin", write_header=fmt != "glove-text")
        assert formats.detect_format(path) == fmt
        loaded = load(path)
        assert loaded.index_to_key == keys
        np.testing.assert_allclose(loaded.vectors, matrix, rtol=1e-6)


def test_binary_records_whose_floats_read_as_text_are_binary(tmp_path):
    """217453.0 is the bytes b"@[TH": four records of such floats, with no line break, are still binary word2vec."""
    path = tmp_path / "words.bin"
    matrix = np.full((4, 2), 217453.0, dtype=np.float32)
    keyed_vectors(["0", "1", "2", "3"], matrix).save_word2vec_format(str(path), binary=True)
    assert formats.detect_format(path) == "word2vec-bin"
    assert_copied(load(str(path)).vectors, matrix)


def test_detection_and_the_default_vectors_do_not_import_gensim(tmp_path):
    import subprocess
    import sys

    path = write_word2vec_bin(tmp_path / "words.bin")
    code = (
        "import sys; from attn_cli.vectors import formats; from attn_cli.vectors.loading import load; "
        f"print(formats.detect_format({str(path)!r}), len(load())); "
        "print(sorted(m for m in ('gensim', 'scipy', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["word2vec-bin 100000", "[]"]


def test_a_fast_folder_answers_a_few_words_without_building_its_key_index(tmp_path):
    """Look-ups scan keys.txt's bytes (first occurrence wins, as in the index), rows are named from
    the line offsets, and searches read the matrix a block at a time: the same answers as in memory."""
    from attn_cli.core import neighbors as search
    from attn_cli.lesson import directions as nb
    from attn_cli.vectors import store as vectors_module

    keys = ["the", "cat", "naïve", "", "cat", "mat"]
    matrix = np.arange(len(keys) * 3, dtype=np.float32).reshape(len(keys), 3) - 4.0  # [6, 3]
    folder = tmp_path / "odd"
    folder.mkdir()
    np.save(folder / "vectors.npy", matrix)
    (folder / "keys.txt").write_text("\n".join(keys), encoding="utf-8")  # no newline after the last key
    loaded = load(folder)
    assert [loaded.row(k) for k in ("the", "cat", "naïve", "", "mat", "dog", "ca", "a\nb", "\ud800")] == [0, 1, 2, 3, 5, None, None, None, None]
    assert [loaded.key_at(i) for i in range(len(keys))] == keys
    assert "key_to_index" not in vars(loaded) and "index_to_key" not in vars(loaded)
    assert loaded.index_to_key == keys and loaded.key_to_index["cat"] == 1
    in_memory = Vectors(keys, matrix)
    for size in (1, 4, 100):  # blocks that split the matrix, and one that holds it all
        blocks = [(start, block.copy()) for start, block in load(folder).blocks(size)]
        assert [start for start, _ in blocks] == list(range(0, len(keys), size))
        assert_copied(np.concatenate([b for _, b in blocks]), matrix)
    query = dict(positive=["mat", "naïve"], negative=["the"], topn=3)
    assert nb.most_similar(load(folder), **query) == nb.most_similar(in_memory, **query)
    assert nb.most_similar_cosmul(load(folder), **query) == nb.most_similar_cosmul(in_memory, **query)
    limited = load(folder, limit=2)
    assert (len(limited), limited.row("naïve"), limited.key_at(1), limited.index_to_key) == (2, None, "cat", ["the", "cat"])
    many = load(folder)
    for i in range(vectors_module.SCANS_BEFORE_INDEX + 1):
        many.row(f"word{i}")
    assert "key_to_index" in vars(many) and many.row("mat") == 5  # many look-ups: the index pays for itself


@pytest.fixture(params=["pyarrow", "numpy"])
def text_reader(request, monkeypatch):
    """Text files read by pyarrow's CSV reader when it is installed, and by NumPy's (always there)."""
    if request.param == "pyarrow":
        pytest.importorskip("pyarrow.csv")
    else:
        monkeypatch.setattr(text_format.TextVectors, "arrow", lambda self: None)
    return request.param


def test_text_reader_reads_numbers_as_gensim_does(tmp_path, run, text_reader):
    """Any spelling of a number gensim's reader takes gives the same float32 here; CRLF and trailing
    spaces are fine; a file streamed by `convert` holds exactly what `load` reads, key order kept."""
    from gensim.models import KeyedVectors

    spellings = ["0.418", "-0.00066023", "1e-05", "-1.2345E+03", "+3", ".5", "5.", "-0", "4.0071", "123456789.123456789",
                 "1.00000000000000000001", "3.4028235e38", "nan", "-inf", "7"]  # fmt: skip
    rows = [spellings[i : i + 5] for i in range(0, len(spellings), 5)]
    lines = [f"w{i} {' '.join(r)}{' ' if i == 1 else ''}\r\n" for i, r in enumerate(rows)]
    path = tmp_path / "odd.txt"
    path.write_bytes(f"{len(rows)} 5\n{''.join(lines)}".encode())
    ours = load(path)
    theirs = KeyedVectors.load_word2vec_format(str(path))
    assert ours.index_to_key == theirs.index_to_key == ["w0", "w1", "w2"]
    assert_copied(ours.vectors, theirs.vectors)
    assert run("vectors", "convert", path, tmp_path / "out").exit_code == 0
    assert_copied(load(tmp_path / "out").vectors, theirs.vectors)


@pytest.mark.parametrize("name, writer", [("words.txt", write_word2vec_text), ("glove.txt", write_glove_text)])
def test_both_text_readers_agree_and_name_a_bad_line(tmp_path, run, text_reader, name, writer):
    """Plain rows: the same keys and float32 values as gensim wrote; a line with a key and no values
    is named by its line number, whichever reader met it first."""
    path = writer(tmp_path / name)
    loaded = load(path)
    assert loaded.index_to_key == KEYS
    assert_copied(loaded.vectors, keyed_vectors().vectors)
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3].split(b" ")[0]
    path.write_bytes(b"\n".join(lines))
    assert_one_line_error(run("vectors", "convert", path, tmp_path / "out"), 1, "line 4 has 0 values")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def norms_cases():
    """norms.npy files that do not hold the matrix's norms: each must be ignored, the norms computed."""
    rows = len(KEYS)
    right = np.sqrt(np.einsum("ij,ij->i", MATRIX, MATRIX, dtype=np.float64))
    return {
        "stale (another matrix)": lambda p: np.save(p, right + 1.0),
        "one row stale": lambda p: np.save(p, np.where(np.arange(rows) == rows - 1, right + 1e-9, right)),
        "float32": lambda p: np.save(p, right.astype(np.float32)),
        "big-endian": lambda p: np.save(p, right.astype(">f8")),
        "wrong length": lambda p: np.save(p, right[:-1]),
        "2-d": lambda p: np.save(p, right[:, None]),
        "pickled objects": lambda p: np.save(p, np.array([{"a": 1}] * rows, dtype=object), allow_pickle=True),
        "truncated": lambda p: (np.save(p, right), p.write_bytes(p.read_bytes()[:-8])),
        "not an array": lambda p: p.write_bytes(b"not numpy"),
        "a folder": lambda p: p.mkdir(),
    }


def test_convert_stores_each_rows_norm_and_searches_use_them(tmp_path):
    """norms.npy holds the float64 norms a search would compute (to the bit), and a search with
    them gives the same scores, to the bit, as one that computes them (an older folder without the file)."""
    from attn_cli.core import neighbors as search
    from attn_cli.lesson import directions as nb
    from attn_cli.vectors.store import row_norms

    folder = write_fast(tmp_path / "v")
    stored = np.load(folder / "norms.npy", allow_pickle=False)
    assert stored.dtype == np.float64 and stored.shape == (len(KEYS),)
    np.testing.assert_allclose(stored, row_norms(MATRIX), rtol=1e-14, atol=0)  # recomputed: summed in another order perhaps
    with_norms = load(folder)
    assert with_norms.norms is not None
    (folder / "norms.npy").unlink()
    without = load(folder)
    assert without.norms is None
    queries = np.random.default_rng(0).standard_normal((5, MATRIX.shape[1])).astype(np.float32)
    for t in (1, 3, 5):  # einsum and BLAS paths of key_scores
        np.testing.assert_allclose(search.key_scores(with_norms, queries[:t]), search.key_scores(without, queries[:t]), rtol=1e-6, atol=1e-6)
    query = dict(positive=["mat", "naïve"], negative=["the"], topn=3)
    (stored_keys, stored_scores), (fresh_keys, fresh_scores) = (zip(*nb.most_similar(v, **query)) for v in (with_norms, without))
    assert stored_keys == fresh_keys and stored_scores == pytest.approx(fresh_scores, abs=1e-6)
    np.testing.assert_allclose(load(write_fast(tmp_path / "w"), limit=2).norms, row_norms(MATRIX[:2]), rtol=1e-14, atol=0)


@pytest.mark.parametrize("case", list(norms_cases()))
def test_a_norms_file_that_does_not_fit_the_matrix_is_ignored(tmp_path, case, run):
    folder = write_fast(tmp_path / "v")
    expected = run("analogy", "the", "cat", "sat", "--vectors", folder, "--json").stdout
    (folder / "norms.npy").unlink()
    norms_cases()[case](folder / "norms.npy")
    assert load(folder).norms is None
    result = run("analogy", "the", "cat", "sat", "--vectors", folder, "--json")
    assert (result.exit_code, result.stdout, result.stderr) == (0, expected, "")


def test_shipped_norms_are_the_norms_of_the_shipped_vectors(glove):
    from attn_cli.vectors.store import row_norms

    assert glove.norms is not None
    np.testing.assert_allclose(glove.norms, row_norms(np.asarray(glove.vectors)), rtol=1e-14, atol=0)  # recomputed here


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 1 << 14])
def test_keys_are_checked_as_utf8_whatever_the_chunks(chunk):
    """A chunked check accepts exactly what bytes.decode accepts, characters cut between chunks included."""
    from attn_cli.vectors.store import is_utf8

    samples = ["naïve\ncafé\n", "€uro\n𝄞 clef\n", "plain\n"]
    bad = [b"caf\xe9\n", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"ok\xe2\x82", b"\x80", b"\xf0\x9d\x84"]
    for text in samples:
        assert is_utf8(text.encode(), chunk)
    for data in bad:
        assert not is_utf8(data, chunk) and not is_utf8(b"fine\n" + data + b"\nfine\n", chunk)


def test_vectors_info_cuts_a_long_path_in_the_middle(tmp_path, run):
    import shutil

    from tests import docs

    deep = tmp_path / ("a_long_folder_name_" * 3) / ("and_another_" * 3) / "glove_vectors_here"
    shutil.copytree(docs.ROOT / "data" / "glove.6B.50d", deep)
    shown = run("vectors", "info", deep, env={"COLUMNS": "80"}).stdout
    (line,) = [line for line in shown.splitlines() if line.strip().startswith("path")]
    path = line.split(maxsplit=1)[1].rstrip()
    assert "…" in path and len(line.rstrip()) <= 80
    head, tail = path.split("…")
    assert str(deep).startswith(head) and str(deep).endswith(tail) and tail.endswith("glove_vectors_here")
    assert parse_json(run("vectors", "info", deep, "--json"))["path"] == str(deep)  # the data keeps it whole


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=60), st.integers(0, 70))
def test_a_cut_keeps_the_start_and_the_end_within_the_width(text, width):
    from rich.cells import cell_len

    from attn_cli.views.vectors import cut_middle

    cut = cut_middle(text, width)
    assert cell_len(cut) <= width or cut == "…"[:width]
    if cell_len(text) <= width:
        assert cut == text
    elif width >= 3:
        head, _, tail = cut.partition("…")
        assert text.startswith(head) and text.endswith(tail) and len(head) + len(tail) >= 1
