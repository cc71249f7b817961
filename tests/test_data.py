"""The shipped GloVe data: intact, real, and loaded without gensim."""

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from attn_cli.vectors.store import DEFAULT_VECTORS


def test_checksums_match_the_recorded_ones():
    for line in (DEFAULT_VECTORS / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((DEFAULT_VECTORS / name).read_bytes()).hexdigest() == digest, name


def test_shape_order_and_lesson_words(glove):
    assert glove.vectors.shape == (100_000, 50) and glove.vectors.dtype == np.float32
    assert glove.index_to_key[:4] == ["the", ",", ".", "of"]  # GloVe's frequency order
    for word in ["verdant", "biopsy", "shrew", "eiffel", "mole", "fluffy", "creature", "n't", "'s"]:
        assert word in glove


@pytest.mark.parametrize("word, dot", [("one", -2.40), ("two", 0.79), ("three", 1.27), ("four", 1.49)])
def test_plural_direction_matches_the_lesson(glove, word, dot):
    direction = glove.get_vector("cats") - glove.get_vector("cat")
    assert direction @ glove.get_vector(word) == pytest.approx(dot, abs=0.005)


def test_default_load_imports_neither_gensim_nor_scipy():
    code = "import sys; from attn_cli.vectors.loading import load; load(); print('gensim' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
