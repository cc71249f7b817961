"""docs/senses.md's tables of resolution per layer, recomputed by the shipped code (attn_cli.analysis.meter_eval, behind
`attn senses eval`) on the development set and the held-out sets, for MiniLM and SmolLM2. Slow: every case of every set,
and SmolLM2's prototypes take thousands of forward passes."""

import re
from functools import lru_cache

import pytest

from attn_cli.analysis import meter_eval
from attn_cli.analysis.senses import read_sense_set
from attn_cli.models.loading import load
from tests import checkpoints, docs

PAGE = docs.README.parent / "docs" / "senses.md"
HEADS = docs.README.parent / "data" / "heads"
WORDS = {"dev/senses.tsv": "dev/sense_words.tsv", "eval/senses_natural.tsv": "eval/sense_words.tsv",
         "eval/senses_natural2.tsv": "eval/sense_words2.tsv", "eval/senses_natural3.tsv": "eval/sense_words3.tsv"}
MODELS = {"minilm": checkpoints.minilm_folder, "smollm2": checkpoints.smollm2_gguf}
READINGS = {"**in context**": ("full", "context"), "in context, 3 templates": ("short", "context"), "word alone": ("full", "alone"),
            "context masked": ("full", "masked")}


def tables() -> list[tuple[str, str, str, list[str], list[str]]]:
    """(model, cases file, reading, layer labels, cells) of every row of the page's figure tables."""
    rows = []
    for model, body in re.findall(r"<!-- senses-figures: (\w+) -->\n(.*?)(?:\n\n|\Z)", PAGE.read_text(encoding="utf-8"), re.S):
        lines = body.splitlines()
        labels = [c.strip() for c in lines[0].strip("|").split("|")][2:-1]
        current = None
        for line in lines[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            found = re.search(r"`([^`]+)`", cells[0])
            current = found.group(1) if found else current
            rows.append((model, current, cells[1], labels, cells[2:]))
    return rows


@lru_cache(maxsize=None)
def figures(model: str, cases: str, templates: str):
    path = HEADS / cases
    chosen = load(str(MODELS[model]()))
    words = str(HEADS / WORDS[cases])
    return meter_eval.evaluate(chosen, meter_eval.read_cases(path, read_sense_set(words), words), str(path), templates, words)


def test_the_page_has_both_models_tables():
    rows = tables()
    assert {(m, c) for m, c, *_ in rows} == {(m, c) for m in MODELS for c in WORDS}
    assert len(rows) == 4 * len(READINGS) + 4 * (len(READINGS) - 1)


@pytest.mark.slow
@pytest.mark.floats
@pytest.mark.parametrize("model, cases", [(m, c) for m in MODELS for c in WORDS])
def test_the_figures_are_what_the_code_computes(model, cases):
    for _, _, reading, labels, cells in [r for r in tables() if r[:2] == (model, cases)]:
        templates, control = READINGS[reading]
        result = figures(model, cases, templates)
        by_label = {r["label"]: r for r in result.layers}
        for label, cell in zip(labels, cells[:-1]):
            assert cell.strip("*") == f"{by_label[label][control]['resolved']:.3f}", (model, cases, reading, label)
        last = result.layers[-1][control]
        assert cells[-1] == f"{last['low']:.3f}-{last['high']:.3f}", (model, cases, reading)
