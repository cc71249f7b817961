"""Every analysis checked on every family: one matrix, so that adding a fixture adds all of these checks.

The fixtures are the committed tiny checkpoints of each family (tests/fixtures/models): Llama, Mistral (the tiny Llama's
weights under a Mistral config, as Mistral 7B v0.1's with its window of 4,096 keys), Qwen2, Qwen3, Phi-3 (without longrope, and with it over an
original context of 64), Gemma 2 (soft-caps), Gemma 3 (local and global layers), a SentencePiece Llama in GGUF, GPT-2
and a BERT with a masked-LM head. Each check compares two ways of computing the same number, within float32 rounding:

- explain's parts sum to the model's logit (before a soft-cap), and to the logit difference with a versus token;
- the lens at the last layer is predict's own prediction;
- ablating nothing (edits on an empty set of positions, through the edit machinery) is predict's pass;
- an ablation gives the same logits under predict and explain;
- patch's clean and corrupt metrics are predict's logit differences, soft-cap included;
- patching every position's stream back from the clean run gives back the clean metric, at every layer;
- every cached generation step is a full pass over the same ids (past the windows; past Phi-3's original context);
- attention rows sum to 1, and the cells a query may not see (later keys, keys outside its window) are exactly 0.
"""

import json
import shutil
from functools import cache

import numpy as np
import pytest

from tests import checkpoints

F = checkpoints.FIXTURES
RELATIVE = 1e-4  # a sum of float64 parts against the float32 pass's own logit
LOGITS = 1e-4  # two float32 passes of the same numbers computed in another order (a cache, a batch, an edit)
TEXT = "The cat sat on the warm stone wall by the old mill, and the"  # longer than the tiny Gemmas' windows of 8 keys
SWAPS = ("car", "dog", "man", "can")  # a corrupt text: "cat" swapped for the first of these of as many tokens


def variant(name: str, source: str, change: dict):
    """A committed folder with its config changed (a family the same weights also make), copied once per session."""
    def make(tmp):
        folder = tmp / name
        if not folder.exists():
            shutil.copytree(F / source, folder)
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            (folder / "config.json").write_text(json.dumps(config | change), encoding="utf-8")
        return folder
    return make


FIXTURES = {
    "llama": lambda tmp: F / "tiny-llama",
    "mistral": variant("tiny-mistral", "tiny-llama", {"model_type": "mistral", "architectures": ["MistralForCausalLM"], "sliding_window": 4096,
                                                      "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}),
    "qwen2": lambda tmp: F / "tiny-qwen2",
    "qwen3": lambda tmp: F / "tiny-qwen3",
    "phi3": variant("tiny-phi3-short", "tiny-phi3", {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}),
    "phi3-longrope": lambda tmp: F / "tiny-phi3",
    "gemma2": lambda tmp: F / "tiny-gemma2",
    "gemma3": lambda tmp: F / "tiny-gemma3",
    "llama-spm": lambda tmp: F / "gguf" / "llama2-spm.F16.gguf",
    "gpt2": lambda tmp: F / "tiny-gpt2",
    "bert": lambda tmp: F / "tiny-bert-mlm",
}
DECODERS = [name for name in FIXTURES if name != "bert"]


@pytest.fixture(scope="session")
def family_models(tmp_path_factory):
    from attn_cli.models.loading import load

    tmp = tmp_path_factory.mktemp("families")
    return cache(lambda name: load(str(FIXTURES[name](tmp))))


def text_for(m) -> str:
    return TEXT if m.predicts == "next" else "The cat sat on the [MASK] stone wall by the old mill."


def close(a: float, b: float, tolerance: float = LOGITS) -> bool:
    return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))


def predicted(m, text: str, **kw):
    from attn_cli.analysis.predict import PredictSettings, predict

    return predict(m, text, PredictSettings(top=3, **kw))


def two_tokens(m) -> list[str]:
    """Two ids the model ranks differently, as --target and --versus: its top two at the position."""
    best = predicted(m, text_for(m)).predictions
    return [f"id:{best[0].id}", f"id:{best[1].id}"]


@pytest.mark.parametrize("name", DECODERS)
def test_explain_parts_sum_to_the_logit_and_to_the_difference(family_models, name):
    from attn_cli.analysis.explain import ExplainSettings, explain

    m = family_models(name)
    target, versus = two_tokens(m)
    for settings in (ExplainSettings(target=target), ExplainSettings(target=target, versus=versus)):
        result = explain(m, TEXT, settings)
        assert close(result.total, result.logit, RELATIVE), (result.total, result.logit)
        own = result.target["logit"] - (0 if result.versus is None else result.versus["logit"])  # the model's, after any soft-cap
        assert close(own, result.logit if m.spec.final_softcap is None else result.capped)
        if m.spec.final_softcap is not None:
            cap = m.spec.final_softcap
            assert result.versus is not None or close(result.capped, cap * np.tanh(result.logit / cap))
        assert sum(p.kind == "head" for p in result.components) == m.n_layers * m.n_heads


def test_explain_refuses_a_masked_lm_in_one_line(family_models):
    from attn_cli.analysis.explain import ExplainSettings, explain
    from attn_cli.errors import InputError

    with pytest.raises(InputError, match="not linear"):
        explain(family_models("bert"), text_for(family_models("bert")), ExplainSettings())


@pytest.mark.parametrize("name", FIXTURES)
def test_the_lens_at_the_last_layer_is_the_prediction(family_models, name):
    m = family_models(name)
    result = predicted(m, text_for(m), lens=True)
    last = result.lens[-1]
    assert last["layer"] == m.n_layers and last["final_rank"] == 1
    assert [p.id for p in last["top"][:3]] == [p.id for p in result.predictions]
    for lens, own in zip(last["top"], result.predictions):
        assert close(lens.logit, own.logit) and close(lens.probability, own.probability)


@pytest.mark.parametrize("name", FIXTURES)
def test_ablating_nothing_is_the_plain_pass(family_models, name):
    from attn_cli.models.points import Keep, Zero

    m = family_models(name)
    tokens = m.tokenize(text_for(m))
    keep = Keep(("resid_post",), layers=[m.n_layers - 1])
    plain = m.readout(m.forward(tokens, keep=keep).get("resid_post", m.n_layers - 1))
    nothing = [Zero("attn.z", l, head=h, positions=[]) for l in range(m.n_layers) for h in range(m.n_heads)]
    edited = m.readout(m.forward(tokens, keep=keep, edits=nothing).get("resid_post", m.n_layers - 1))
    np.testing.assert_allclose(edited, plain, rtol=0, atol=LOGITS * max(1.0, float(np.abs(plain).max())))


@pytest.mark.parametrize("name", DECODERS)
def test_an_ablation_gives_the_same_logits_under_predict_and_explain(family_models, name):
    from attn_cli.analysis.explain import ExplainSettings, explain

    m = family_models(name)
    heads = [f"0.{m.n_heads - 1}", f"{m.n_layers - 1}.0"]
    for mode in ("zero", "mean"):
        ablated = predicted(m, TEXT, ablate=heads, ablate_with=mode)
        top = ablated.predictions[0]
        result = explain(m, TEXT, ExplainSettings(target=f"id:{top.id}", ablate=heads, ablate_with=mode))
        assert close(result.target["logit"], top.logit), (mode, result.target["logit"], top.logit)
        assert close(result.total, result.logit, RELATIVE)
        assert ablated.before is not None and ablated.before["probabilities"][top.id] != pytest.approx(top.probability, abs=1e-9)


@pytest.mark.parametrize("name", FIXTURES)
def test_patch_metrics_are_predicts_and_patching_everything_gives_back_the_clean_run(family_models, name):
    from attn_cli.analysis.patch import LogitDifference, PatchSettings, patch
    from attn_cli.models.points import Keep, Patch

    m = family_models(name)
    clean = text_for(m)
    corrupt = next(c for swap in SWAPS if len(m.tokenize(c := clean.replace("cat", swap)).ids) == len(m.tokenize(clean).ids))
    target, versus = two_tokens(m)
    result = patch(m, clean, corrupt, PatchSettings(target, versus))
    for text, metric in ((clean, result.clean_logit_diff), (corrupt, result.corrupt_logit_diff)):
        asked = {p.id: p.logit for p, _ in predicted(m, text, asked=[target, versus]).asked}
        assert close(metric, asked[int(target[3:])] - asked[int(versus[3:])]), (text, metric)
    measure = LogitDifference(m, int(target[3:]), int(versus[3:]))
    ids = m.tokenize(corrupt).ids
    kept = m.forward(m.tokenize(clean), keep=Keep(("resid_pre",)))
    last = m.n_layers - 1
    for l in range(m.n_layers):
        edits = [Patch("resid_pre", l, value=kept.get("resid_pre", l))]
        patched = m.forward(ids, keep=Keep(("resid_post",), layers=[last]), edits=edits).get("resid_post", last)
        assert close(float(measure(patched[result.position : result.position + 1])[0]), result.clean_logit_diff), l


GENERATE_STEPS = {"phi3-longrope": (" the wall" * 20, 8)}  # a prompt of ~60 tokens, and steps past the original context of 64


@pytest.mark.parametrize("name", DECODERS)
def test_every_cached_generation_step_is_a_full_pass(family_models, name):
    from attn_cli.analysis.generate import GenerateSettings, Generation
    from attn_cli.models.points import Keep

    m = family_models(name)
    extra, steps = GENERATE_STEPS.get(name, ("", 6))
    run = Generation(m, TEXT + extra, GenerateSettings(steps=steps))
    list(run)
    ids = list(run.tokens.ids)
    assert name not in GENERATE_STEPS or len(ids) < int(m.spec.rope_scaling["original_max_position_embeddings"]) < len(ids) + steps
    keep = Keep(("resid_post",), layers=[m.n_layers - 1], rows=[-1])
    for step in run.steps:
        full = m.readout(m.forward(ids, keep=keep).get("resid_post", m.n_layers - 1))[0]
        assert close(step.logit, float(full[step.id])), (len(ids), step.logit, float(full[step.id]))
        assert step.id == int(np.argmax(full))
        ids.append(step.id)


@pytest.mark.parametrize("name", FIXTURES)
def test_attention_rows_sum_to_one_and_hidden_cells_are_exactly_zero(family_models, name):
    from attn_cli.models.points import Keep

    m = family_models(name)
    tokens = m.tokenize(text_for(m) + " and then the stone fell into the water")
    n = len(tokens.ids)
    trace = m.forward(tokens, keep=Keep(("attn.pattern",)))
    query, key = np.arange(n)[:, None], np.arange(n)[None, :]
    for l in range(m.n_layers):
        pattern = trace.get("attn.pattern", l)  # [H, n, n]
        np.testing.assert_allclose(pattern.sum(axis=-1), 1.0, rtol=0, atol=1e-5)
        window = m.window(l)
        hidden = (key > query if m.causal else np.zeros((n, n), bool)) | ((query - key >= window) if window else False)
        assert int(np.count_nonzero(pattern[:, hidden])) == 0, l
