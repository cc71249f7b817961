"""`attn heads eval` and the functions behind it: link metrics with their baselines, sense metrics with theirs."""

import numpy as np
import pytest

from attn_cli.heads import evaluation
from attn_cli.heads import senses as sense_eval
from attn_cli.heads import registry as heads
from attn_cli.analysis import senses
from attn_cli.heads import links as link_files
from attn_cli.core.attention import Head, Mask, causal_mask, run_head
from attn_cli.core.blocks import input_embeddings
from attn_cli.errors import InputError
from attn_cli.vectors.tokens import tokenize
from attn_cli.vectors.words import FUNCTION_WORDS, is_content
from conftest import parse_json

LINKS = """# adjectives before their nouns
sentence\tquery\tkey
the fluffy dog ran .\tdog\tfluffy
a red car stopped .\tcar\tred
the old tall man sat .\tman\told
the old tall man sat .\tman\ttall
the dog ran .\tthe\tdog
"""

CASES = """sentence\tword\tsense\tcontext
# a small hand-made set
american shrew mole\tmole\tanimal\tbefore
take a biopsy of the mole\tmole\tskin\tbefore
one mole of carbon dioxide\tmole\tchemistry\tafter
the river bank\tbank\triver\tbefore
the loan from the bank\tbank\tmoney\tbefore
"""


@pytest.fixture
def links_file(tmp_path):
    path = tmp_path / "links.tsv"
    path.write_text(LINKS)
    return path


@pytest.fixture
def cases_file(tmp_path):
    path = tmp_path / "cases.tsv"
    path.write_text(CASES)
    return path


def examples(text, glove, source="<links>"):
    return link_files.links_to_examples(link_files.parse_links(text.splitlines(), source), glove, "none", source)


# --- link metrics ------------------------------------------------------------------------------------


def test_previous_token_baseline_is_exact_on_a_constructed_case():
    """Keys one token back: the previous-token pattern serves every query fully; two back: never."""
    e = np.random.default_rng(0).normal(size=(5, 4))
    one_back = [link_files.Example(list("abcde"), e, e, {2: [1], 4: [3]}, "none")]
    two_back = [link_files.Example(list("abcde"), e, e, {2: [0], 4: [2]}, "none")]
    hit = evaluation.link_metrics(evaluation.previous_token, one_back, "causal")
    assert hit == {"queries": 2, "dropped": 0, "top_on_key": 1.0, "exact_top": 1.0, "key_weight": 1.0, "others_on_self": 1 / 3}
    miss = evaluation.link_metrics(evaluation.previous_token, two_back, "causal")
    assert miss == {"queries": 2, "dropped": 0, "top_on_key": 0.0, "exact_top": 0.0, "key_weight": 0.0, "others_on_self": 1 / 3}
    weights = evaluation.previous_token(e, causal_mask(5))
    assert weights[0, 0] == 1 and all(weights[i, i - 1] == 1 for i in range(1, 5))


def test_even_baseline_weight_is_keys_over_visible_tokens():
    e = np.zeros((6, 3))
    ex = [link_files.Example(list("abcdef"), e, e, {3: [0, 1], 5: [4]}, "none")]
    causal = evaluation.link_metrics(evaluation.even_visible, ex, "causal")
    assert causal["key_weight"] == pytest.approx(np.mean([2 / 4, 1 / 6]))
    assert causal["top_on_key"] == pytest.approx(0.0, abs=1e-12)  # a tie with the other tokens is a miss
    none = evaluation.link_metrics(evaluation.even_visible, ex, "none")
    assert none["key_weight"] == pytest.approx(np.mean([2 / 6, 1 / 6]))


def test_causal_mask_drops_links_to_later_keys_and_counts_them():
    e = np.random.default_rng(1).normal(size=(4, 3))
    ex = [link_files.Example(list("abcd"), e, e, {1: [3], 2: [0, 3]}, "none")]
    causal = evaluation.link_metrics(evaluation.previous_token, ex, "causal")
    assert causal["queries"] == 1 and causal["dropped"] == 2
    assert evaluation.link_metrics(evaluation.previous_token, ex, "none")["dropped"] == 0


def test_link_metrics_of_a_head_against_a_loop(glove):
    exs = examples(LINKS, glove)
    head = heads.random_head(50, seed=3)
    got = evaluation.link_metrics(head, exs, "none")
    top, exact, weight, on_self = [], [], [], []
    for ex in exs:
        w = run_head(ex.e, head, None).weights
        on_self += [w[i, i] for i in range(len(ex.tokens)) if i not in ex.links]
        for q, keys in ex.links.items():
            ranked = sorted((j for j in range(len(ex.tokens)) if j != q), key=lambda j: -w[q, j])
            top.append(ranked[0] in keys)
            exact.append(set(ranked[: len(keys)]) == set(keys))
            weight.append(sum(w[q, k] for k in keys))
    assert got["queries"] == len(top) == 4
    assert got["top_on_key"] == pytest.approx(np.mean(top))
    assert got["exact_top"] == pytest.approx(np.mean(exact))
    assert got["key_weight"] == pytest.approx(np.mean(weight))
    assert got["others_on_self"] == pytest.approx(np.mean(on_self))


# --- sense metrics ------------------------------------------------------------------------------------


def word_scores(x, word_senses, glove):
    """{sense: mean cosine of x with its probes}, one probe at a time."""
    out = {}
    for name, probes in word_senses.items():
        out[name] = np.mean([x @ glove.get_vector(p) / np.linalg.norm(x) / np.linalg.norm(glove.get_vector(p)) for p in probes])
    return out


def test_sense_metrics_against_an_independent_computation(glove):
    table = senses.read_sense_set(senses.SENSES_DIR / "lesson.tsv")
    cases = sense_eval.parse_sense_cases(CASES.splitlines())
    identity = heads.identity_head(50)
    got = sense_eval.sense_metrics([identity], cases, table, glove, "none")
    assert got["cases"] == 5 and got["skipped"] == 0
    before, after, ratios, context_ratios, content_mix = [], [], [], [], []
    for case in cases:
        tokens = tokenize(case.sentence)
        e = input_embeddings(np.array([glove.get_vector(t) for t in tokens]))
        i = tokens.index(case.word)
        w = run_head(e, identity, None).weights
        delta = w[i] @ e
        context = delta - w[i, i] * e[i]
        for x, hits in ((e[i], before), (e[i] + delta, after)):
            scores = word_scores(x, table[case.word], glove)
            hits.append(all(scores[case.sense] > v for k, v in scores.items() if k != case.sense))
        ratios.append(np.linalg.norm(delta) / np.linalg.norm(e[i]))
        context_ratios.append(np.linalg.norm(context) / np.linalg.norm(e[i]))
        others = [j for j, t in enumerate(tokens) if j != i and t not in FUNCTION_WORDS and any(c.isalnum() for c in t)]
        content_mix.append(np.linalg.norm(e[others].mean(axis=0)) / np.linalg.norm(e[i]) if others else 0.0)
    for row in ("heads", "identity"):
        assert got[row]["before"] == pytest.approx(np.mean(before))
        assert got[row]["after"] == pytest.approx(np.mean(after))
        assert got[row]["mean_delta_ratio"] == pytest.approx(np.mean(ratios))
        assert got[row]["mean_context_ratio"] == pytest.approx(np.mean(context_ratios))
    for row in ("even_content", "even_all"):  # the update-size-matched references
        assert got[row]["mean_delta_ratio"] == pytest.approx(got["heads"]["mean_delta_ratio"])
        assert got[row]["mean_context_ratio"] == pytest.approx(got["heads"]["mean_delta_ratio"])
        assert got[row]["before"] == got["heads"]["before"]
    assert got["even_content"]["scale"] == pytest.approx(np.mean(ratios) / np.mean(content_mix))


@pytest.mark.parametrize("mask", ["causal", "none"])
def test_case_pulls_against_a_loop_over_the_heads_and_tokens(glove, mask):
    """A case's pulls: each visible token's share of Delta E (sum over heads of w_ij v_j), added to E alone,
    and the margin it moves, recomputed token by token; the shares and the self parts add up to Delta E."""
    from attn_cli.analysis.inspect import inspect_text
    from attn_cli.models.glove import Settings

    table = senses.read_sense_set(senses.SENSES_DIR / "lesson.tsv")
    shipped = [heads.resolve_head(n, 50) for n in ("adjective", "context")]
    cases = [c for c in sense_eval.parse_sense_cases(CASES.splitlines()) if mask == "none" or c.context_before]
    rows = sense_eval.sense_metrics(shipped, cases, table, glove, mask)["case_rows"]
    for case, row in zip(cases, rows):
        result = inspect_text(case.sentence, glove, shipped, Settings(mask=Mask(mask)))
        i, e = result.tokens.index(case.word), result.e
        visible = [j for j in range(len(e)) if j != i and (mask == "none" or j < i)]
        shares = {j: sum(h.weights[i, j] * (e[j] @ head.w_v) for head, h in zip(shipped, result.heads)) for j in visible}
        assert np.allclose(sum(shares.values()) + result.delta_self[i], result.delta[i])

        def margin(x):
            scores = word_scores(x, table[case.word], glove)
            return scores[case.sense] - max(v for k, v in scores.items() if k != case.sense)

        moved = sorted(((margin(e[i] + share) - margin(e[i]), result.tokens[j]) for j, share in shares.items()), key=lambda m: -abs(m[0]))
        assert [(p["token"], pytest.approx(p["pull"])) for p in row["pulls"]] == [(t, m) for m, t in moved[:sense_eval.PULLS_SHOWN]]


def test_sense_metrics_under_the_causal_mask_skips_context_after(glove):
    table = senses.read_sense_set(senses.SENSES_DIR / "lesson.tsv")
    cases = sense_eval.parse_sense_cases(CASES.splitlines())
    got = sense_eval.sense_metrics([heads.identity_head(50)], cases, table, glove, "causal")
    assert got["cases"] == 4 and got["skipped"] == 1


def test_sense_metrics_takes_plain_cases_and_heads(glove):
    """What build scripts have: SenseCase items made in code (no line numbers) and bare Heads."""
    table = senses.read_sense_set(senses.SENSES_DIR / "lesson.tsv")
    parsed = sense_eval.parse_sense_cases(CASES.splitlines())
    cases = [sense_eval.SenseCase(c.sentence, c.word, c.sense, c.context_before) for c in parsed]
    head = Head("plain", np.eye(50), np.eye(50), 0.5 * np.eye(50))  # a bare Head, not a NamedHead
    a = sense_eval.sense_metrics([head], cases, table, glove, "none")
    b = sense_eval.sense_metrics([head], parsed, table, glove, "none")
    lines = [row.pop("line") for row in b["case_rows"]]
    assert [row.pop("line") for row in a["case_rows"]] == [None] * len(cases) and lines == [c.line for c in parsed]
    assert a == b and a["heads"]["names"] == ["plain"]


def test_sense_metrics_names_words_missing_from_the_set(glove):
    cases = sense_eval.parse_sense_cases(["the bat flew\tbat\tanimal\tbefore", "the river bank\tbank\tsky\tbefore"])
    with pytest.raises(InputError, match=r"'bat' \(line 1\); bank/sky \(line 2; the set has river / money\)"):
        sense_eval.sense_metrics([heads.identity_head(50)], cases, {"bank": {"river": ["river"], "money": ["money"]}}, glove)


def test_function_words_and_content_tokens():
    assert 120 <= len(FUNCTION_WORDS) <= 260
    assert not is_content("the") and not is_content(",") and not is_content("of")
    assert is_content("mole") and is_content("carbon") and is_content("1990")


# --- the command ---------------------------------------------------------------------------------------


def test_heads_eval_links_json(run, links_file):
    out = parse_json(run("heads", "eval", links_file, "--head", "identity", "--head", "random", "--json"))
    assert out["format"] == "links" and out["mask"] == "causal"
    assert out["queries"] == 3 and out["dropped"] == 1 and out["sentences"] == 4
    names = [row["name"] for row in out["rows"]]
    assert names == ["identity", "random", "previous", "even", "identity"]
    assert [row["kind"] for row in out["rows"]] == ["head", "head", "baseline", "baseline", "baseline"]
    for row in out["rows"]:
        assert {"top_on_key", "exact_top", "key_weight"} <= set(row)
        assert 0 <= row["key_weight"] <= 1
    assert out["rows"][0]["top_on_key"] == out["rows"][-1]["top_on_key"]  # the head and the baseline are the same head
    previous = out["rows"][2]
    assert previous["top_on_key"] == pytest.approx(1.0, abs=1e-12) and previous["key_weight"] == pytest.approx(1.0, abs=1e-12)  # every kept key is just before its noun
    assert previous["exact_top"] == pytest.approx(2 / 3)  # "man" has two keys; the previous token is only one of them
    none = parse_json(run("heads", "eval", links_file, "--head", "identity", "--mask", "none", "--json"))
    assert none["queries"] == 4 and none["dropped"] == 0


def test_heads_eval_links_for_a_person(run, links_file):
    result = run("heads", "eval", links_file, "--head", "identity", env={"COLUMNS": "150"})
    assert result.exit_code == 0, result.stderr
    for text in ("previous", "even", "identity", "top on key", "3 linked queries", "1 link dropped", "mask causal"):
        assert text in result.stdout


def test_heads_eval_senses(run, cases_file):
    out = parse_json(run("heads", "eval", cases_file, "--head", "identity", "--sense-set", "lesson", "--mask", "none", "--json"))
    assert out["format"] == "senses" and out["cases"] == 5 and out["skipped"] == 0 and out["sense_set"] == "lesson"
    assert [row["name"] for row in out["rows"]] == ["identity", "identity", "even_content", "even_all"]
    heads_row, identity_row = out["rows"][0], out["rows"][1]
    assert {k: v for k, v in heads_row.items() if k not in ("kind", "about")} == {
        k: v for k, v in identity_row.items() if k not in ("kind", "about")
    }
    for row in out["rows"]:
        assert {"before", "after", "mean_cos", "mean_delta_ratio", "mean_context_ratio"} <= set(row)
    causal = parse_json(run("heads", "eval", cases_file, "--head", "identity", "--sense-set", "lesson", "--json"))
    assert causal["cases"] == 4 and causal["skipped"] == 1
    view = run("heads", "eval", cases_file, "--head", "identity", "--sense-set", "lesson", env={"COLUMNS": "150"})
    assert view.exit_code == 0
    assert "even_content" in view.stdout and "1 skipped" in view.stdout and "sense set lesson" in view.stdout


def test_heads_eval_cases_agree_with_the_summary_and_with_inspect(run, cases_file):
    args = ("heads", "eval", cases_file, "--sense-set", "lesson", "--mask", "none")
    out = parse_json(run(*args, "--json", "--cases"))
    cases = out["case_rows"]
    assert [c["line"] for c in cases] == [3, 4, 5, 6, 7] and len(cases) == out["cases"]
    assert np.mean([c["resolved"] for c in cases]) == pytest.approx(out["rows"][0]["after"])  # the rule the share counts
    assert np.mean([c["margin_before"] > 0 for c in cases]) == pytest.approx(out["rows"][0]["before"])
    assert np.mean([c["cos"] for c in cases]) == pytest.approx(out["rows"][0]["mean_cos"])
    for c in cases:  # each case as inspect's sense meter shows it, for the same sentence and mask
        meter = parse_json(run("inspect", c["sentence"], "--sense-set", "lesson", "--mask", "none", "--json"))
        row = next(r for r in meter["senses"] if r["token"] == c["word"])
        assert (row["nearest_before"], row["nearest_after"]) == (c["nearest_before"], c["nearest_after"])
        assert c["resolved"] == (c["margin_after"] > 0) and (c["nearest_after"] == c["sense"]) == c["resolved"]
    assert "case_rows" not in parse_json(run(*args, "--json"))  # only when asked
    view = run(*args, "--cases", env={"COLUMNS": "150"})
    assert view.exit_code == 0 and f"cases: {sum(c['resolved'] for c in cases)} resolved" in view.stdout
    assert "take a biopsy of the mole" in view.stdout


def test_heads_eval_csv_rows(run, cases_file, links_file):
    import csv
    import io

    per_case = list(csv.DictReader(io.StringIO(run("heads", "eval", cases_file, "--sense-set", "lesson", "--cases", "--csv").stdout)))
    assert len(per_case) == 4 and per_case[0]["mask"] == "causal" and per_case[0]["resolved"] in ("true", "false")  # the causal mask skips one
    summary = list(csv.DictReader(io.StringIO(run("heads", "eval", cases_file, "--sense-set", "lesson", "--tsv").stdout), delimiter="\t"))
    assert [r["kind"] for r in summary] == ["heads", "baseline", "baseline", "baseline"]
    assert summary[0]["scale"] == "" and float(summary[2]["scale"]) > 0  # one set of columns; empty where a pattern has none
    links = list(csv.DictReader(io.StringIO(run("heads", "eval", links_file, "--head", "identity", "--csv").stdout)))
    assert {r["name"] for r in links} >= {"identity", "previous", "even"} and all(r["top_on_key"] for r in links)


@pytest.mark.parametrize(
    "content, args, message",
    [
        (CASES, (), "pass --sense-set"),
        (LINKS, ("--cases",), "--cases lists sense cases only"),
        (LINKS, ("--sense-set", "lesson"), "applies only to sense cases"),
        ("the bat flew\tbat\tanimal\tbefore\n", ("--sense-set", "lesson"), "not in sense set lesson: 'bat' (line 1)"),
        ("the river bank\tbank\tforest\tbefore\n", ("--sense-set", "lesson"), "bank/forest (line 1; the set has river / money)"),
        ("the river bank\tbank\triver\tsideways\n", ("--sense-set", "lesson"), "line 1: the context must be"),
        ("one\ttwo\n", (), "line 1: expected 3 tab-separated fields (links: sentence, query, key; or sense cases without a context column) or 4"),
        ("the fluffy dog ran .\tdog\tfluffy\n", ("--sense-set", "lesson"), "read as sentence, word, sense because --sense-set was given"),
        ("the moles dug\tmole\tanimal\tafter\n", ("--sense-set", "lesson"), "'mole' is not a token of 'the moles dug' (it has 'moles';"),
        ("the qxzvw bank\tbank\triver\tbefore\n", ("--sense-set", "lesson"), "line 1: unknown word: 'qxzvw'"),
        ("the dog ran .\tdog\tzebra\n", (), "line 1: key word 'zebra'"),
        ("the qxzvw dog ran .\tqxzvw\tdog\n", ("--oov", "skip"), "line 1: the query word 'qxzvw' has no vector"),
        ("the qxzvw dog ran .\tdog\tqxzvw\n", ("--oov", "zero"), "line 1: the key word 'qxzvw' has no vector"),
        ("the qxzvw dog ran .\tdog\tthe\n", (), "line 1: unknown word: 'qxzvw'; use --oov skip|zero"),
        ("# nothing\n", (), "nothing to evaluate"),
    ],
)
def test_heads_eval_errors_are_one_line_exit_2(run, tmp_path, content, args, message):
    path = tmp_path / "f.tsv"
    path.write_text(content)
    result = run("heads", "eval", path, "--head", "identity", *args)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr and str(path) in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""


def test_heads_eval_missing_file(run, tmp_path):
    result = run("heads", "eval", tmp_path / "nope.tsv", "--head", "identity")
    assert result.exit_code == 2 and "no such file" in result.stderr


def test_heads_eval_oov_skip_scores_the_sentences_without_those_words(run, tmp_path, links_file):
    """--oov skip is the file with the unknown words taken out (and names them); --oov zero keeps a
    zero vector in their place, so the figures move; without --oov they are an error."""
    unknown, plain = tmp_path / "unknown.tsv", tmp_path / "plain.tsv"
    unknown.write_text(CASES.replace("take a biopsy", "take a qxzvw biopsy").replace("the river bank", "the river zzqxw bank"))
    plain.write_text(CASES)
    args = ("--sense-set", "lesson", "--mask", "none", "--json", "--cases")
    error = run("heads", "eval", unknown, *args)
    assert error.exit_code == 2 and "unknown word: 'qxzvw'; use --oov skip|zero" in error.stderr
    skipped = parse_json(run("heads", "eval", unknown, *args, "--oov", "skip"))
    expected = parse_json(run("heads", "eval", plain, *args))
    assert skipped["unknown"] == ["qxzvw", "zzqxw"] and expected["unknown"] == []
    assert skipped["rows"] == expected["rows"]
    assert [{k: v for k, v in c.items() if k != "sentence"} for c in skipped["case_rows"]] == [
        {k: v for k, v in c.items() if k != "sentence"} for c in expected["case_rows"]]
    zeroed = parse_json(run("heads", "eval", unknown, *args, "--oov", "zero"))
    assert zeroed["unknown"] == ["qxzvw", "zzqxw"] and zeroed["rows"][0]["mean_cos"] != expected["rows"][0]["mean_cos"]
    view = run("heads", "eval", unknown, "--sense-set", "lesson", "--oov", "skip", env={"COLUMNS": "150"})
    assert view.exit_code == 0 and "without a vector (--oov): qxzvw, zzqxw" in view.stdout

    links = tmp_path / "links_unknown.tsv"
    links.write_text(links_file.read_text().replace("the fluffy dog", "the qxzvw fluffy dog"))
    skipped = parse_json(run("heads", "eval", links, "--oov", "skip", "--json"))
    expected = parse_json(run("heads", "eval", links_file, "--json"))
    assert skipped["unknown"] == ["qxzvw"] and skipped["rows"] == expected["rows"]


def test_heads_eval_a_sense_case_word_needs_a_vector(run, tmp_path):
    words, cases = tmp_path / "words.tsv", tmp_path / "cases.tsv"
    words.write_text("word\tsense\tprobes\nqxzvw\tanimal\tcat dog\nqxzvw\tplace\tcity town\n")
    cases.write_text("the qxzvw barked\tqxzvw\tanimal\tbefore\n")
    for oov in ("error", "skip", "zero"):
        result = run("heads", "eval", cases, "--sense-set", words, "--oov", oov)
        assert result.exit_code == 2 and "line 1: the word 'qxzvw' has no vector" in result.stderr


def test_heads_train_oov(run, tmp_path, links_file):
    links = tmp_path / "links.tsv"
    links.write_text(links_file.read_text().replace("the fluffy dog", "the qxzvw fluffy dog"))
    refused = run("heads", "train", links, tmp_path / "a.npz", "--steps", "3", "--mask", "none")
    assert refused.exit_code == 2 and "unknown word: 'qxzvw'; use --oov skip|zero" in refused.stderr
    assert not (tmp_path / "a.npz").exists()
    trained = run("heads", "train", links, tmp_path / "b.npz", "--steps", "3", "--mask", "none", "--oov", "skip", "--json")
    assert trained.exit_code == 0 and (tmp_path / "b.npz").exists()


def test_heads_eval_reads_files_as_editors_write_them(run, tmp_path):
    """A BOM, CRLF line ends, capitalised words, senses and contexts: the same cases as the plain file."""
    plain, edited = tmp_path / "plain.tsv", tmp_path / "edited.tsv"
    plain.write_text(CASES)
    lines = CASES.splitlines()
    edited.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(
        line if line.startswith(("#", "sentence")) else "\t".join(f.capitalize() for f in line.split("\t")) for line in lines
    ).encode() + b"\r\n")
    args = ("--sense-set", "lesson", "--mask", "none", "--cases", "--json")
    got, expected = parse_json(run("heads", "eval", edited, *args)), parse_json(run("heads", "eval", plain, *args))
    assert got["rows"] == expected["rows"]
    assert [(c["word"], c["sense"], c["context"]) for c in got["case_rows"]] == [(c["word"], c["sense"], c["context"]) for c in expected["case_rows"]]


@pytest.mark.parametrize("sentence, word, expected", [
    ("the river bank", "bank", True),  # nothing that could select a sense after the word
    ("the bank of the river .", "bank", False),  # nothing before it
    ("a mole dug the lawn", "mole", False),
    ("the old bank by the river", "bank", None),  # content words on both sides: the sentence alone cannot say
    ("the moles dug", "mole", None),  # not a token: reported when the case is scored
])
def test_context_from_position(sentence, word, expected):
    assert sense_eval.context_from_position(sentence, word) is expected


def test_heads_eval_sense_cases_without_a_context_column(run, tmp_path, cases_file):
    """Three fields (with the sense header, or with --sense-set and no header) are sense cases; where the
    sentence says where the context is, they score exactly as with the column; the others are scored
    under --mask none only, and the causal view says how many and why."""
    full, three, bare = tmp_path / "full.tsv", tmp_path / "three.tsv", tmp_path / "bare.tsv"
    cases = CASES + "the old bank by the river\tbank\triver\tbefore\n"
    full.write_text(cases)
    rows = [line.rsplit("\t", 1)[0] for line in cases.splitlines()]
    three.write_text("\n".join(rows) + "\n")
    bare.write_text("\n".join(r for r in rows if not r.startswith(("sentence", "#"))) + "\n")
    args = ("--sense-set", "lesson", "--cases", "--json")
    for path in (three, bare):
        none, expected = parse_json(run("heads", "eval", path, *args, "--mask", "none")), parse_json(run("heads", "eval", full, *args, "--mask", "none"))
        assert none["format"] == "senses" and none["rows"] == expected["rows"] and none["unplaced"] == 0
        assert [c["context"] for c in none["case_rows"]] == ["before", "before", "after", "before", "before", "unknown"]
        causal = parse_json(run("heads", "eval", path, *args))
        assert causal["cases"] == 4 and causal["skipped"] == 2 and causal["unplaced"] == 1
        assert causal["rows"] == parse_json(run("heads", "eval", cases_file, *args))["rows"]  # the file without the unplaced case
    view = run("heads", "eval", three, "--sense-set", "lesson", env={"COLUMNS": "150"})
    assert "1 of the skipped cases have no context column" in view.stdout
    as_links = run("heads", "eval", bare)  # no sense set, no header: links, as heads train reads them
    assert as_links.exit_code == 2 and "key word 'animal' is not a token" in as_links.stderr
    assert "read as links: sentence, query, key; for sense cases pass --sense-set" in as_links.stderr


def test_sense_set_probes_may_be_separated_by_commas(run, tmp_path, cases_file):
    spaced, commas = tmp_path / "spaced.tsv", tmp_path / "commas.tsv"
    spaced.write_text("mole\tanimal\trat shrew burrow\nmole\tchemistry\tatom molecule gram\nmole\tskin\tskin wart\n"
                      "bank\triver\triver shore\nbank\tmoney\tloan cash\n")
    commas.write_text(spaced.read_text().replace(" ", ", "))
    assert senses.read_sense_set(commas) == senses.read_sense_set(spaced)
    got = [parse_json(run("heads", "eval", cases_file, "--sense-set", p, "--json", "--mask", "none")) for p in (commas, spaced)]
    assert got[0]["rows"] == got[1]["rows"]


def test_heads_eval_view_keeps_each_row_on_one_line_when_narrow(run, cases_file):
    """At 80 columns the rows' descriptions move under the table; at 150 they are its last column."""
    args = ("heads", "eval", cases_file, "--sense-set", "lesson", "--mask", "none")
    narrow, wide = run(*args, env={"COLUMNS": "80"}).stdout, run(*args, env={"COLUMNS": "150"}).stdout
    for name in ("identity", "even_content", "even_all"):
        row = next(line for line in narrow.splitlines() if line.strip().startswith(name + " "))
        assert len(row.split()) == 7, row  # the name and its six figures, nothing wrapped
        assert f"  {name}: " in narrow and f"  {name}: " not in wide
    assert "what" in wide.splitlines()[2] and "what" not in narrow.splitlines()[2]
    assert max(map(len, narrow.splitlines())) <= 80


def test_heads_eval_with_no_case_under_the_mask_shows_no_figure(run, tmp_path):
    """Every case hidden by the causal mask: no figure at all (not a scale of 0), and the view says why."""
    path = tmp_path / "after.tsv"
    path.write_text("one mole of carbon dioxide\tmole\tchemistry\tafter\n")
    out = parse_json(run("heads", "eval", path, "--sense-set", "lesson", "--json"))
    assert out["cases"] == 0 and out["skipped"] == 1
    assert all(v is None for row in out["rows"] for k, v in row.items() if k not in ("name", "kind", "about"))
    view = run("heads", "eval", path, "--sense-set", "lesson", env={"COLUMNS": "150"}).stdout
    assert "0 cases" in view and "1 skipped (context after the word" in view and "0.000" not in view


def test_heads_eval_and_train_read_stdin(run, tmp_path, cases_file, links_file):
    """'-' is standard input, as for every command: the same figures as the file, named 'stdin' in messages."""
    args = ("--sense-set", "lesson", "--mask", "none", "--json")
    piped = parse_json(run("heads", "eval", "-", *args, input=cases_file.read_text()))
    assert piped["rows"] == parse_json(run("heads", "eval", cases_file, *args))["rows"] and piped["file"] == "stdin"
    bad = run("heads", "eval", "-", "--sense-set", "lesson", input="the bat flew\tbat\tanimal\tbefore\n")
    assert bad.exit_code == 2 and bad.stderr.startswith("attn: stdin: not in sense set lesson")
    trained = run("heads", "train", "-", tmp_path / "h.npz", "--steps", "3", "--mask", "none", "--json", input=links_file.read_text())
    assert trained.exit_code == 0 and (tmp_path / "h.npz").exists()
