"""No test compares recomputed floats exactly: a recomputed float depends on the BLAS kernel, the thread count and
where in memory its inputs lie (a hidden state 5.4e-6 apart when a model's layers were held in other memory).

Read from the tests' source: every exact comparison a float could reach (np.array_equal, assert_array_equal, `==`
against a float literal, an elementwise `==` reduced by all(), a printed figure looked for in a command's output)
must have a stated tolerance, go through tests/exact.py (values copied, never computed; ids, counts and masks), or
be listed below with the reason it is exact by construction. The misaligned copies of `.ci/run`'s last pass
(ATTN_TEST_MISALIGN, tests/conftest.py) are checked here too.
"""

import ast
import os
import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import conftest
from tests.exact import assert_copied

TESTS = Path(__file__).resolve().parent
EXACT_CALLS = {"array_equal", "array_equiv", "assert_array_equal", "assert_equal", "equal"}  # equal: torch.equal
FIGURE = re.compile(r"\d\.\d{3,}|\d\.\d+e[-+]?\d+")  # a number printed to 3 decimals or more, or in scientific notation

MASKED = "a weight the mask forbids is 0 by construction (exp(-inf) = 0; sums of products with it stay 0): exactly 0 is the claim"
PRINTED = ("a figure printed to 4 decimals from float64 arithmetic: {}, ~1e10 times float64's rounding error from the "
           "nearest rounding boundary, so no kernel or thread count can move it")
ECHO = "the input, parsed and echoed, not computed"
INFINITE = "infinite scores: -inf gets exactly 0, +inf ones share the weight in exact parts, exp(0) = 1 over a sum of 1"
SIMILARITY = PRINTED.format("cat · dog = 19.739068 and cosine 0.921800 (1.9e-5 and 4.5e-5 from a boundary)")
THREADS = "each row of a product is one thread's sum in one order, whichever thread takes it: threads split rows, so the bits are the claim"
ALLOWED = {
    ("test_products.py", "test_threads_split_rows_without_changing_a_value",
     "np.array_equal(products.product(x, blocks, dtype, threads=threads), one)"): THREADS,
    ("test_products.py", "test_a_forked_child_runs_products_on_threads_of_its_own",
     "np.array_equal(products.product(x, blocks, 'Q4_0', threads=2), want)"): THREADS,
    ("test_products.py", "test_many_calls_in_a_row_on_threads_give_each_its_own_rows",
     "np.array_equal(products.product(cases[j][1], cases[j][0], 'Q8_0', threads=2 + i % 2), want[j])"): THREADS,
    ("test_products.py", "test_products_from_several_python_threads_at_once_are_each_right", "np.array_equal(run, want[i % 8])"): THREADS,
    ("test_quants.py", "test_the_c_decoder_gives_numpys_bits_on_any_bytes", "np.array_equal(ours.view(np.uint32), steps.view(np.uint32))"):
        "two decoders doing the same float32 operations in the same order, no BLAS or reduction: the bits are the claim, NaN payloads too",
    ("test_attention.py", "test_a_fully_masked_row_takes_nothing_and_never_gives_nan", "out.weights[2] == 0.0"): MASKED,
    ("test_attention.py", "test_a_fully_masked_row_takes_nothing_and_never_gives_nan", "out.delta[2] == 0.0"): MASKED,
    ("test_attention.py", "test_every_row_sums_to_one_and_masked_weights_are_exactly_zero",
     "out.weights[np.triu_indices(n, 1)] == 0.0"): MASKED,
    ("test_attention.py", "test_self_and_context_parts_match_the_loop_and_add_up_to_delta", "out.delta_context[0] == 0.0"): MASKED,
    ("test_attention.py", "test_float32_rows_sum_to_one_and_masked_weights_are_exactly_zero", "out.weights[~sees] == 0.0"): MASKED,
    ("test_attention.py", "test_float32_rows_sum_to_one_and_masked_weights_are_exactly_zero", "out.weights[~mask] == 0.0"): MASKED,
    ("test_inspect.py", "test_json_has_exactly_the_documented_keys_and_true_weights", "weights[np.triu_indices(n, 1)] == 0"): MASKED,
    ("test_models.py", "test_causal_weights_are_exactly_zero_above_the_diagonal_and_rows_sum_to_one",
     "weights[:, ~np.tri(n, dtype=bool)] == 0"): MASKED,
    ("test_flow.py", "test_rollout_of_an_encoder_and_a_decoder_matches_a_plain_loop", "np.triu(got[-1], 1) == 0"):
        MASKED + " (a product of lower-triangular matrices is lower-triangular)",
    ("test_softmax.py", "test_log_json_writes_minus_inf_as_null", "data['probabilities'][0] == 0.0"): MASKED,
    ("test_softmax.py", "test_infinities", "np.testing.assert_array_equal(softmax([-np.inf, 0.0, 0.0]), [0.0, 0.5, 0.5])"):
        "exp(-inf) = 0 and exp(0) = 1 exactly, so the weights are exact halves",
    ("test_softmax.py", "test_infinities", "np.testing.assert_array_equal(softmax([np.inf, 3.0, np.inf, -np.inf]), [0.5, 0.0, 0.5, 0.0])"):
        "infinite scores: the infinite ones share the weight in exact halves, the others get exactly 0",
    ("test_softmax.py", "test_infinities", "np.testing.assert_array_equal(softmax([-np.inf, -np.inf]), [0.0, 0.0])"):
        "a fully masked row is set to 0, not computed",
    ("test_softmax.py", "test_json_keys_and_values", "data['temperature'] == 1.0"): ECHO,
    ("test_softmax.py", "test_json_keys_and_values", "data['values'] == [1.0, 2.0, 3.0]"): ECHO,
    ("test_softmax.py", "test_negative_numbers_as_arguments", "data['values'] == [-1.0, 2.0]"): ECHO,
    ("test_softmax.py", "test_stdin", "data['values'] == [1.0, 2.0, 3.0, 4.0, 5.0]"): ECHO,
    ("test_softmax.py", "test_negative_infinity_spelled_out_is_a_value_not_option_t", "data['probabilities'] == [0.0, 1.0]"): INFINITE,
    ("test_softmax.py", "test_minus_infinity_is_exactly_zero_and_plus_infinities_share",
     "parse_json(run('softmax', '--json', '-inf', '0'))['probabilities'] == [0.0, 1.0]"): INFINITE,
    ("test_softmax.py", "test_minus_infinity_is_exactly_zero_and_plus_infinities_share",
     "parse_json(run('softmax', '--json', 'inf', '5', 'inf', '-inf'))['probabilities'] == [0.5, 0.0, 0.5, 0.0]"): INFINITE,
    ("test_hardening.py", "test_plus_infinity_takes_all_the_mass_whatever_the_temperature",
     "json.loads(out.text)['probabilities'] == [1.0, 0.0]"): INFINITE,
    ("test_predict.py", "test_predictions_are_the_softmax_of_the_last_positions_logits", "[x.probability for x in cold.predictions] == [1.0, 0.0]"):
        "temperature 0 is the argmax: the probabilities are set to 1 and 0, not computed",
    ("test_softmax.py", "test_tiny_probabilities_shown_in_scientific_notation", "'2.06e-09' in out"):
        "exp(-20) / (1 + exp(-20)) = 2.0611536e-09 in float64, printed to 3 digits: far from a rounding boundary",
    ("test_families.py", "test_model_info_lists_local_and_global_layers_with_their_window_and_rope_bases",
     "[(row['layer'], row['window'], row['rope_base']) for row in out['attention_layers']] == [*((l, 8, 10000.0) for l in range(5)), (5, None, 1000000.0), (6, 8, 10000.0)]"):
        "a rope base read from the file's config, not computed",
    ("test_families.py", "test_model_info_lists_local_and_global_layers_with_their_window_and_rope_bases", "row['rope_base'] == 1000000.0"):
        "a rope base read from the file's config, not computed",
    ("fixtures/models/make_family_fixtures.py", "_make_folder", "torch.equal(back.state_dict()[key], value)"):
        "a model saved and loaded back: a copy",
    ("test_gguf.py", "test_smollm2_config_and_tensors",
     "(c['vocab_size'], c['tie_word_embeddings'], c['rope_theta'], c['rms_norm_eps'], c['head_dim']) == (49152, True, 100000.0, 1e-05, 64)"):
        "metadata read from the file, not computed",
    ("test_heads.py", "test_small_budget_rebuild_of_the_context_head", "[t['ridge'] for t in training['tried']] == [0.01, 1.0]"):
        "settings from a grid of literals, not computed",
    ("test_inspect.py", "test_significant_digits_print_short",
     "significant(np.array([0.123456789, 1.0, -2.5e-09, 123456.7]), 6).tolist() == [0.123457, 1.0, -2.5e-09, 123457.0]"):
        "rounding to 6 digits must give the float nearest the decimal printed; the inputs are far from a rounding boundary",
    ("test_detect.py", "transformer_lens_patterns", "np.equal(repeated, repeated.T)"): "token ids, compared to build the reference pattern",
    ("fixtures/models/make_decoder_fixtures.py", "_make_folder", "torch.equal(back.state_dict()[key], value)"):
        "a model saved and loaded back: a copy",
    ("test_softmax.py", "test_temperature_zero_is_argmax", "data['temperature'] == 0.0"): "the input, parsed and echoed, not computed",
    ("test_json_output.py", "test_only_a_list_holding_inf_or_nan_is_gone_through_for_null", "seen[0] == [1.0, math.nan]"):
        "the document's own values passed through, not computed",
    ("test_json_output.py", "test_only_a_list_holding_inf_or_nan_is_gone_through_for_null", "seen[0][0] == 1.0"):
        "the document's own values passed through, not computed",
    ("test_heads.py", "test_small_budget_rebuild_of_the_context_head", "choice['mix'] == 0.0"):
        "a setting picked from a grid of literals, not computed",
    ("test_gguf.py", "test_quantized_tensors_match_a_per_block_loop", "np.array_equal(got, expected)"):
        "d·q + m of a float16 scale and a 4- or 8-bit integer is exact in float32 and float64 alike, then rounded once: "
        "both sides are the correctly rounded value, whatever the order of the loop",
    ("test_stats.py", "test_partials_merge_to_the_very_same_sums_whatever_the_split", "merged.sums[name] == whole.sums[name]"):
        "the sums are Python ints (fixed point), and each sentence's pass is the same in every split",
    ("test_hardening.py", "test_columns_zero_still_shows_the_view", "'0.6652' in out.text"):
        PRINTED.format("softmax(1, 2, 3) = 0.665241 (9e-6 from a boundary)"),
    ("test_hardening.py", "test_columns_zero_still_shows_the_view", "'1.000000' in out.text"):
        "the sum of probabilities, 1 within 1e-15, printed to 6 decimals",
    ("test_softmax.py", "test_overflow_free_example", "shown in out"):
        PRINTED.format("0.0900306, 0.244728, 0.665241 (1.9e-5, 2.2e-5 and 9e-6 from a boundary)"),
    ("test_similarity.py", "test_similarity_json_and_view", "'cat · dog = 19.7391   cosine = 0.9218   aligned' in view"): SIMILARITY,
    ("test_similarity.py", "test_similarity_json_and_view", "'sum: 19.7391' in view"): SIMILARITY,
    ("test_views.py", "test_a_table_that_cannot_fit_says_so_and_lists_its_rows",
     "'cat dog aligned dot: 19.7391 cosine: 0.9218' in text"): SIMILARITY,
    ("test_views.py", "test_a_table_that_cannot_fit_says_so_and_lists_its_rows", "'19.7391' in wide"): SIMILARITY,
    ("fixtures/models/npz_files.py", "savez", "np.array_equal(back[key], value)"): "a file read back after writing it",
    ("fixtures/models/make_fixtures.py", "_check_gpt2_hidden", "np.array_equal(hidden[-1], last)"):
        "the same tensor recorded twice by transformers (hidden_states[-1] is last_hidden_state)",
    ("fixtures/models/make_decoder_fixtures.py", "_record_gguf", "torch.equal(hf[key], value)"):
        "transformers' own tensors loaded twice: a copy",
    ("fixtures/models/make_decoder_fixtures.py", "_record_gguf", "np.array_equal(original[key.removeprefix('F32_')], value)"):
        "a model's float32 tensors read from two files holding the same bytes",
    ("benchmarks/bench_vectors.py", "main", "np.array_equal(loaded.vectors, matrix)"): "a file read back after writing it",
}


def _float_constant(node) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Constant):
        return isinstance(node.value, float)
    return isinstance(node, (ast.List, ast.Tuple)) and any(_float_constant(e) for e in node.elts)


def _text(node) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


def _is_approx(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "approx"


def _printed_figures(loop: ast.For) -> bool:
    """`for shown in ("0.6652", ...): assert shown in out`: figures looked for one by one."""
    return any(FIGURE.search(t) for node in ast.walk(loop.iter) if (t := _text(node)) is not None)


def exact_comparisons(source: str) -> list[tuple[int, str | None, str, str]]:
    """(line, enclosing function, the comparison's source, why it was flagged) for each exact comparison in `source`."""
    found = []

    def visit(node, function, looked_for):
        for child in ast.iter_child_nodes(node):
            inner, names = function, looked_for
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = child.name
            if isinstance(child, ast.For) and isinstance(child.target, ast.Name) and _printed_figures(child):
                names = looked_for | {child.target.id}
            if isinstance(child, ast.Call):
                name = getattr(child.func, "attr", getattr(child.func, "id", None))
                if name in EXACT_CALLS:
                    found.append((child.lineno, inner, ast.unparse(child), "an exact array comparison"))
                elif name in ("all", "any"):  # np.all(a == b), (a == b).all()
                    reduced = child.args if not isinstance(child.func, ast.Attribute) or getattr(child.func.value, "id", "") in ("np", "numpy") else [child.func.value]
                    for arg in reduced:
                        if isinstance(arg, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in arg.ops):
                            found.append((child.lineno, inner, ast.unparse(arg), "an elementwise == reduced by all()"))
            if isinstance(child, ast.Compare):
                sides = [child.left, *child.comparators]
                ops = child.ops
                if not any(_is_approx(s) for s in sides):
                    if any(isinstance(op, (ast.Eq, ast.NotEq)) for op in ops) and any(_float_constant(s) for s in sides):
                        found.append((child.lineno, inner, ast.unparse(child), "== against a float literal"))
                    elif any(isinstance(op, (ast.Eq, ast.In)) for op in ops) and any(
                            (t := _text(s)) is not None and FIGURE.search(t) for s in sides):
                        found.append((child.lineno, inner, ast.unparse(child), "a printed figure compared as text"))
                    elif any(isinstance(op, ast.In) for op in ops) and isinstance(child.left, ast.Name) and child.left.id in names:
                        found.append((child.lineno, inner, ast.unparse(child), "printed figures compared as text"))
            visit(child, inner, names)

    visit(ast.parse(source), None, frozenset())
    return sorted(set(found))


@cache
def every_exact_comparison():
    """{(file, function, comparison): "file:line why"} over every Python file of tests/ but tests/exact.py."""
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == "exact.py" or ".venv" in path.parts:
            continue
        where = path.relative_to(TESTS).as_posix()
        for line, function, code, why in exact_comparisons(path.read_text(encoding="utf-8")):
            found.setdefault((where, function, code), f"tests/{where}:{line}: {why}")
    return found


def test_no_new_exact_comparison_of_floats():
    found = every_exact_comparison()
    new = [f"{found[key]}: {key[2]}" for key in found if key not in ALLOWED]
    assert not new, ("compare recomputed floats with a stated tolerance (np.testing.assert_allclose, pytest.approx); "
                     "copies, ids and counts through tests/exact.py; or say in ALLOWED why it is exact:\n" + "\n".join(new))


def test_every_allowed_exception_still_exists_and_says_why():
    found = every_exact_comparison()
    assert [key for key in ALLOWED if key not in found] == []  # a stale entry would let a new comparison in unnoticed
    assert all(len(reason) > 20 for reason in ALLOWED.values())


@pytest.mark.parametrize("code", [
    "def t(a, b):\n    assert np.array_equal(a, b)",
    "def t(a, b):\n    np.testing.assert_array_equal(a, b)",
    "def t(x):\n    assert x == 0.5",
    "def t(x):\n    assert x['p'] != -1.0",
    "def t(x):\n    assert x == [0.0, 0.5]",
    "def t(a, b):\n    assert (a == b).all()",
    "def t(a, b):\n    assert np.all(a == b)",
    "def t(out):\n    assert '0.7725' in out",
    "def t(out):\n    assert f'p = 1.5e-09 of {out}' == out",
    "def t(out):\n    for shown in ('0.0900', '0.2447'):\n        assert shown in out",
])
def test_the_check_finds_an_exact_comparison(code):
    assert [function for _, function, _, _ in exact_comparisons(code)] == ["t"]


@pytest.mark.parametrize("code", [
    "def t(a, b):\n    np.testing.assert_allclose(a, b, rtol=1e-6)",
    "def t(x):\n    assert x == pytest.approx(0.5)",
    "def t(x):\n    assert x == 3 and x.shape == (2, 3)",
    "def t(a, b):\n    assert_same_ids(a, b)",
    "def t(out):\n    assert '0.0000' not in out and '3 layers' in out",
])
def test_the_check_leaves_tolerances_ids_and_absent_figures_alone(code):
    assert exact_comparisons(code) == []


# --- the misaligned copies of .ci/run's last pass -------------------------------------------------


@pytest.mark.parametrize("offset", [4, 8, 12, 20, 36])
def test_a_misaligned_copy_holds_the_same_values_at_another_address(offset):
    a = np.random.default_rng(offset).normal(size=(6, 10)).astype(np.float32)
    for original in (a, np.asfortranarray(a), a.T, a[0]):
        moved = conftest.misaligned(original, offset)
        assert moved.ctypes.data % 64 == offset % 64 and moved.flags.aligned  # aligned to its dtype, not to a cache line
        assert moved.shape == original.shape and moved.dtype == original.dtype
        assert moved.flags.c_contiguous == original.flags.c_contiguous and moved.flags.f_contiguous == original.flags.f_contiguous
        assert_copied(moved, original)


def test_the_last_ci_pass_moves_the_weights_it_reads():
    offset = conftest.misalign_offset()
    if offset is None:
        pytest.skip("ATTN_TEST_MISALIGN is not set (.ci/run's last pass sets it)")
    from attn_cli.models.loading import load
    from tests import checkpoints

    model = load(str(checkpoints.gguf_fixture("tiny-llama", "Q4_1")))
    layer = model.weights.layer(0)
    assert all(a.ctypes.data % 64 == offset % 64 for a in layer.values())
    assert os.environ["ATTN_TEST_MISALIGN"]
