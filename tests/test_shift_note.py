"""The shift table says when the update outweighs E, with figures computed from the result; and the development-set
figures docs/inspect.md gives for a smaller update, recomputed."""

import re

import numpy as np
import pytest

from attn_cli.analysis.inspect import inspect_text
from attn_cli.core.attention import Head, Mask
from attn_cli.heads.registry import resolve_heads
from attn_cli.models.glove import Settings
from attn_cli.views.shift import UPDATE_DOMINATES, dominance_note
from tests import docs

LESSON = "A fluffy blue creature roamed the verdant forest."


def test_the_default_view_says_when_the_update_outweighs_e(run):
    out = run("inspect", LESSON, env={"COLUMNS": "400"}).stdout
    assert "ΔE outweighs E here" in out and "nearest to E′ of many tokens" not in out  # the default view searches no keys
    out = run("inspect", LESSON, "--neighbors", "3", env={"COLUMNS": "400"}).stdout
    line = next(line for line in out.splitlines() if line.startswith("ΔE outweighs E here"))
    ratio, top, token = re.search(r"‖ΔE‖ is ([\d.]+)× ‖E‖ on average \(up to ([\d.]+)×, (\w+)\)", line).groups()
    doc = run("inspect", LESSON, "--json").stdout
    import json

    numbers = json.loads(doc)
    ratios = [d / e for d, e in zip(numbers["delta_norms"], numbers["input_norms"])]
    assert float(ratio) == pytest.approx(np.mean(ratios), abs=0.05) and float(top) == pytest.approx(max(ratios), abs=0.05)
    assert token == numbers["tokens"][int(np.argmax(ratios))]
    shared = [keys for keys in numbers["neighbors"]["output"] if "fluffy" in keys]
    assert f"fluffy for {len(shared)} of {len(numbers['tokens'])}" in line
    low = int(np.argmin(numbers["cosines"]))
    assert f"least: {numbers['tokens'][low]}, {numbers['cosines'][low]:.3f}" in line


def test_no_note_when_the_update_is_smaller_than_e(run, glove):
    out = run("inspect", LESSON, "--head", "identity").stdout
    assert "outweighs" not in out
    result = inspect_text(LESSON, glove, resolve_heads(["identity"], 50, 0)[0], Settings())
    assert np.mean(result.delta_norms / result.input_norms) < UPDATE_DOMINATES and dominance_note(result) is None


@pytest.mark.slow
@pytest.mark.floats
def test_the_smaller_update_figures_in_the_docs_are_recomputed(glove):
    """docs/inspect.md: scaling the context head's update by k, the dev function words' mean cos(E, E') and the dev resolution."""
    from attn_cli.analysis.senses import read_sense_set
    from attn_cli.heads import evaluation
    from attn_cli.vectors.words import FUNCTION_WORDS

    text = " ".join(docs.text().split())
    found = re.findall(r"(0\.\d{3}) and (0\.\d{3}) / (0\.\d{3}) (?:as shipped \(k = 1\)|at k = (\d\.\d+))", text)
    assert len(found) == 4
    adjective, context = resolve_heads(None, 50, 0)[0]
    folder = docs.README.parent / "data" / "heads" / "dev"
    cases = evaluation.parse_sense_cases((folder / "senses.tsv").read_text(encoding="utf-8").splitlines())
    sense_set = read_sense_set(folder / "sense_words.tsv")
    for cos, causal, none, k in found:
        k = float(k or 1)
        heads = [adjective, Head(context.name, context.w_q, context.w_k, k * context.w_v, b_q=context.b_q, distance=context.distance,
                                 sink=context.sink)]
        function = []
        for case in cases:
            result = inspect_text(case.sentence, glove, heads, Settings(mask=Mask.causal))
            function += [c for t, c in zip(result.tokens, result.cosines) if t in FUNCTION_WORDS]
        assert f"{np.mean(function):.3f}" == cos
        for mask, want in (("causal", causal), ("none", none)):
            assert f"{evaluation.sense_metrics(heads, cases, sense_set, glove, mask)['heads']['after']:.3f}" == want
