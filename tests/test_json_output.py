"""The JSON writer: the text of json.dumps(indent=2) written piece by piece, and inspect's document streamed
block by block with the same bytes as the whole document written at once."""

import io
import json
import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_cli.io import output
from attn_cli.results import numbers
from attn_cli import results
from attn_cli.heads.registry import resolve_heads
from attn_cli.analysis.inspect import inspect_text
from attn_cli.core.attention import Stage
from attn_cli.models.glove import Settings
from attn_cli.io.output import Rows, json_line, write_json
from attn_cli.results import NUMBER_DIGITS, WEIGHT_DIGITS, significant
from tests.conftest import parse_json

LESSON = "A fluffy blue creature roamed the verdant forest."


def written(obj, **kwargs) -> str:
    out, saved = io.StringIO(), sys.stdout
    sys.stdout = out
    try:
        write_json(obj, **kwargs)
    finally:
        sys.stdout = saved
    return out.getvalue()


def reference(obj, indent=2) -> str:
    """What write_json wrote before it streamed: json.dumps of the whole object, inf and NaN as null."""
    return json.dumps(output._finite(obj), ensure_ascii=False, indent=indent) + "\n"


scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
keys = st.text(max_size=6) | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False) | st.booleans() | st.none()
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
                         | st.dictionaries(keys, inner, max_size=4), max_leaves=30)


@settings(max_examples=150, deadline=None)
@given(documents, st.sampled_from([2, 0, 4]))
def test_write_json_writes_what_json_dumps_writes(doc, indent):
    assert written(doc, indent=indent) == reference(doc, indent)
    assert written(doc, indent=None) == json_line(doc) + "\n"
    assert json.loads(json_line(doc)) == json.loads(reference(doc))


def test_rows_are_written_as_the_list_they_hold_and_can_be_written_again():
    matrix = [[1.5, None, math.inf], [], [-0.0, 2e-300, "x"]]
    rows = Rows(lambda: (matrix[i : i + 2] for i in range(0, len(matrix), 2)))
    doc = {"m": rows, "empty": Rows(lambda: iter([])), "nested": [rows]}
    plain = {"m": matrix, "empty": [], "nested": [matrix]}
    assert written(doc) == reference(plain)
    assert written(doc) == reference(plain)  # blocks() is called again
    assert json_line(doc) == json_line(plain)


def test_only_a_list_holding_inf_or_nan_is_gone_through_for_null(monkeypatch):
    doc = {"a": [[0.5] * 4 for _ in range(50)], "b": [[1.0, math.nan]]}
    expected = reference(doc)
    seen = []
    finite = output._finite
    monkeypatch.setattr(output, "_finite", lambda obj: seen.append(obj) or finite(obj))
    assert written(doc) == expected
    assert seen[0] == [1.0, math.nan] or (seen[0][0] == 1.0 and math.isnan(seen[0][1]))
    assert [0.5] * 4 not in seen


# --- inspect's document ----------------------------------------------------------------------------


def old_with_nulls(a, hidden) -> list:
    """results._with_nulls as it was, cell by cell."""
    rows = a.tolist()
    if hidden is None:
        return rows
    return [[None if h else v for v, h in zip(row, hrow)] for row, hrow in zip(rows, hidden.tolist())]


def old_document(result) -> dict:
    """InspectResult.to_dict as it was before streaming: every matrix rounded whole, scores through stage_matrix."""
    doc = result.to_dict()
    for head, out in zip(result.heads, doc["heads"]):
        out["weights"] = significant(head.weights, WEIGHT_DIGITS).tolist()
        if result.stage:
            key = "scores" if result.stage == "scores" else "masked"
            matrix = head.stage_matrix(key)
            out[key] = old_with_nulls(significant(matrix, NUMBER_DIGITS), None if head.allowed is None else ~head.allowed)
    return doc


@pytest.mark.parametrize(("sentence", "settings"), [
    (LESSON, Settings()),
    (LESSON, Settings(stage=Stage.masked, embeddings=True)),
    ("One mole of carbon dioxide.", Settings(stage=Stage.scores, mask="none", scale=False)),
    ("the river bank by the water , and the bank that lends money .", Settings(stage=Stage.weights, position=False)),
])
def test_the_streamed_document_is_the_whole_document_byte_for_byte(glove, monkeypatch, sentence, settings):
    from attn_cli.core.attention import Mask

    settings.mask = Mask(settings.mask)
    result = inspect_text(sentence, glove, resolve_heads(None, 50, 0)[0] + resolve_heads(["random"], 50, 3)[0], settings)
    monkeypatch.setattr(results, "MATRIX_BLOCK", 20)  # a few rows per block: many blocks even for a short sentence
    streamed = result.to_dict(stream=True)
    assert any(isinstance(h["weights"], Rows) for h in streamed["heads"])
    assert written(streamed) == reference(old_document(result)) == reference(result.to_dict())
    assert json_line(streamed) == json_line(old_document(result))


def test_inspect_json_is_the_indented_text_of_inspect_jsonl(run):
    """The single document (streamed) and the JSON line (written at once) carry the same numbers, byte for byte."""
    for options in ([], ["--stage", "masked", "--embeddings", "--neighbors", "2"], ["--mask", "none", "--stage", "scores", "--sense-set", "lesson"]):
        indented, line = run("inspect", LESSON, "--json", *options), run("inspect", LESSON, "--jsonl", *options)
        assert indented.stdout == json.dumps(parse_json(line), ensure_ascii=False, indent=2) + "\n"


def test_with_nulls_is_the_cell_by_cell_version():
    rng = np.random.default_rng(0)
    a = significant(rng.normal(size=(7, 5)), NUMBER_DIGITS)
    for hidden in (None, rng.random((7, 5)) < 0.4, np.ones((7, 5), bool), np.zeros((7, 5), bool)):
        assert numbers.with_nulls(a, hidden) == old_with_nulls(a, hidden)
