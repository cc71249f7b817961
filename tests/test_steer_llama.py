"""Steering with a control vector as llama.cpp does: attn against llama-cpp-python's llama_set_adapter_cvec on SmolLM2.

tests/fixtures/models/steer-smollm2-llama.json (make_steer_fixture.py) holds llama.cpp's greedy continuations of four
prompts, unsteered and steered by plural-smollm2.cvec.gguf (attn's own `direction -o` file) at a scale: the prompt's
ids, the new ids, every step's top-2 margin and its 5 best logits. llama.cpp quantizes the activations of its
products (its logits differ from attn's float32 ones by up to about 0.5), so:
- free running, attn's greedy continuation is llama.cpp's token for token up to the first step where attn's top-2
  margin is under 0.5 (llama_peer.agreed);
- along llama.cpp's continuation (teacher forcing: one pass over the prompt and llama.cpp's tokens), at every step
  where attn's margin is at least 0.5 attn's top token is the one llama.cpp chose, and attn's logits of llama.cpp's 5
  best tokens are within LOGITS of llama.cpp's. This checks all 24 steps of every case, not only those before the
  first close call.
The same file shifted by one layer (direction.l added after layer l - 1) fits llama.cpp's logits worse in every steered
case: the test can tell where the vector is added.
"""

import json
from functools import cache

import numpy as np
import pytest

from tests import checkpoints
from tests.benchmarks.attn_worker import forced, steer
from tests.benchmarks.llama_peer import MARGIN, agreed

FIXTURE = checkpoints.FIXTURES / "steer-smollm2-llama.json"
LOGITS = 1.0  # llama.cpp's logits against attn's, over its 5 best tokens (measured: up to 0.76)


@cache
def fixture() -> dict:
    return json.loads(FIXTURE.read_text())


@cache
def smollm2():
    from attn_cli.models.loading import load

    return load(str(checkpoints.smollm2_gguf()))


def op(case: dict, cvec=None) -> dict:
    steered = case["scale"] is not None
    return {"cvec": str(cvec or checkpoints.FIXTURES / fixture()["cvec"]) if steered else None, "scale": case["scale"], "text": case["text"],
            "steps": fixture()["steps"], "prompt_ids": case["prompt_ids"], "ids": case["ids"], "top": [[j for j, _ in t] for t in case["top"]]}


def disagreements(found: dict, case: dict) -> tuple[list[int], float, float]:
    """The confident steps (attn's margin >= MARGIN) where attn's top token is not llama.cpp's, and the largest and the mean
    difference of attn's logits from llama.cpp's over its 5 best tokens at every step."""
    wrong = [s for s, (m, j) in enumerate(zip(found["margins"], found["argmax"])) if m >= MARGIN and j != case["ids"][s]]
    diffs = [abs(a - v) for mine, theirs in zip(found["logits_at"], case["top"]) for a, (_, v) in zip(mine, theirs)]
    return wrong, max(diffs), float(np.mean(diffs))


CASES = range(len(fixture()["cases"]))


@pytest.mark.slow
@pytest.mark.floats
@pytest.mark.parametrize("index", CASES)
def test_greedy_continuation_is_llama_cpps_up_to_the_first_step_of_margin_under_half_a_logit(index):
    case = fixture()["cases"][index]
    found = steer(smollm2(), op(case))
    assert found["prompt_ids"] == case["prompt_ids"]  # the same ids from attn's tokenizer and llama.cpp's
    compared, same = agreed(found["ids"], found["margins"], case["ids"])
    assert same, (compared, found["ids"][:compared], case["ids"][:compared])


@pytest.mark.slow
@pytest.mark.floats
@pytest.mark.parametrize("index", CASES)
def test_along_llama_cpps_continuation_every_confident_step_picks_its_token(index):
    case = fixture()["cases"][index]
    found = forced(smollm2(), op(case))
    wrong, diff, _ = disagreements(found, case)
    assert sum(m >= MARGIN for m in found["margins"]) >= fixture()["steps"] // 2  # most steps are checked
    assert not wrong, [(s, found["argmax"][s], case["ids"][s], found["margins"][s]) for s in wrong]
    assert diff <= LOGITS


@pytest.mark.slow
@pytest.mark.floats
def test_steering_moves_the_text_and_a_vector_one_layer_early_is_told_apart(tmp_path):
    from attn_cli.io.control_vector import read_control_vector, write_control_vector

    cases = fixture()["cases"]
    by_text = {}
    for case in cases:
        by_text.setdefault(case["text"], {})[case["scale"]] = case["ids"]
    assert all(len(set(map(tuple, runs.values()))) == len(runs) for runs in by_text.values())  # each scale writes its own text
    hint, vectors = read_control_vector(checkpoints.FIXTURES / fixture()["cvec"])
    shifted = np.zeros((smollm2().n_layers, smollm2().d_model), np.float32)
    for l, v in vectors.items():
        shifted[l - 1] = v  # direction.l after layer l - 1: direction.1 is lost (layer 0 is never steered)
    early = write_control_vector(tmp_path / "early.gguf", shifted, hint, force=True)
    for case in (c for c in cases if c["scale"] is not None):  # the file as llama.cpp reads it fits its logits better, every time
        right, off = disagreements(forced(smollm2(), op(case)), case), disagreements(forced(smollm2(), op(case, early)), case)
        assert off[0] or off[2] > right[2], (case["text"], case["scale"], right, off)  # measured: mean 0.11-0.14 against 0.14-0.31
