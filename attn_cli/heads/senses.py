"""`attn heads eval` on sense cases: does the update E' of an ambiguous word land nearer its intended sense?

A case is `sentence<TAB>word<TAB>sense<TAB>before|after` (or without the context column, taken from
the word's position). `sense_metrics` runs the heads together exactly as `inspect` does and measures
the word's E and E' with the sense meter (attn_cli.analysis.senses), beside the identity head and
even attention over the other (content) tokens with an update of the same size.
"""

from dataclasses import dataclass

import numpy as np

from attn_cli.core.attention import Head, Mask
from attn_cli.errors import InputError
from attn_cli.heads.links import check_mask
from attn_cli.io.files import tsv_rows
from attn_cli.vectors.tokens import Oov, tokenize
from attn_cli.vectors.words import is_content

SENSE_HEADER = ["sentence", "word", "sense", "context"]
CONTEXTS = ("before", "after")


@dataclass
class SenseCase:
    """An ambiguous word in a sentence, the sense its context selects, and where that context is."""

    sentence: str
    word: str
    sense: str
    context_before: bool | None  # the selecting context precedes the word (visible under the causal mask); None: not known
    line: int = 0  # the line of the file it came from, for error messages (0: none)


def context_from_position(sentence: str, word: str) -> bool | None:
    """Where a case without a context column has its context, when the sentence alone says so: before
    the word when no content word follows it, after when none precedes it; None when there are content
    words on both sides (or the word is not a token: that is reported when the case is scored)."""
    tokens = tokenize(sentence)
    if word not in tokens:
        return None
    i = tokens.index(word)
    before, after = any(map(is_content, tokens[:i])), any(map(is_content, tokens[i + 1:]))
    return True if not after else False if not before else None


def parse_sense_cases(lines, source: str = "<cases>", fields: int = 4) -> list[SenseCase]:
    """Lines `sentence<TAB>word<TAB>sense<TAB>before|after` (or, with fields=3, without the context, which
    is then taken from the word's position: see context_from_position); '#' comments, blank lines and
    the header line `sentence<TAB>word<TAB>sense[<TAB>context]` are skipped. Bad lines raise InputError."""
    cases = []
    header, names = SENSE_HEADER[:fields], "sentence, word, sense" + (", before|after" if fields == 4 else "")
    for number, (sentence, word, sense, *where) in tsv_rows(lines, header, names, source):
        if where and where[0].lower() not in CONTEXTS:
            raise InputError(f"{source} line {number}: the context must be 'before' or 'after', not {where[0]!r}")
        before = where[0].lower() == "before" if where else context_from_position(sentence, word.lower())
        cases.append(SenseCase(sentence, word.lower(), sense, before, number))
    if not cases:
        raise InputError(f"{source}: no sense cases")
    return cases


def sense_index(sense: str, names: list[str]) -> int | None:
    """Where a case's sense is among the set's sense names: the same name, else the only one that differs in case alone."""
    if sense in names:
        return names.index(sense)
    folded = [i for i, name in enumerate(names) if name.casefold() == sense.casefold()]
    return folded[0] if len(folded) == 1 else None


def check_cases(cases: list, sense_set: dict, set_name: str = "the sense set") -> None:
    """Every case's word and sense must be in the set, with at least one other sense to tell it from."""
    problems = []
    for case in cases:
        where = f" (line {case.line})" if getattr(case, "line", 0) else ""
        senses = sense_set.get(case.word)
        if senses is None:
            problems.append(f"{case.word!r}{where}")
        elif sense_index(case.sense, list(senses)) is None:
            line = f"line {case.line}; " if getattr(case, "line", 0) else ""
            problems.append(f"{case.word}/{case.sense} ({line}the set has {' / '.join(senses)})")
        elif len(senses) < 2:
            problems.append(f"{case.word!r} has one sense only{where}")
    if problems:
        shown = "; ".join(dict.fromkeys(problems[:10])) + (f" and {len(problems) - 10} more" if len(problems) > 10 else "")
        raise InputError(f"not in {set_name}: {shown}")


def _share_correct(rows: np.ndarray, centroids: list[np.ndarray], intended: list[int]) -> float:
    """Share of rows [c, d] nearer (by the sense score) to their intended sense than to every other."""
    from attn_cli.analysis.senses import sense_scores

    hits = []
    for x, c, k in zip(rows, centroids, intended):
        scores = sense_scores(x[None, :], c)[0]  # [s]
        hits.append(scores[k] > np.delete(scores, k).max())
    return float(np.mean(hits)) if hits else float("nan")


PULLS_SHOWN = 3  # the tokens whose share of the update moves the margin most, per case


def token_shares(result, heads: list[Head], i: int) -> tuple[list[int], np.ndarray]:
    """What each other token wrote into token i's update, over all the heads: sum_h w^h_ij v^h_j (then
    W_O), for the tokens the mask lets i see. -> (their indices, [m, d]); with the self part, these add up to Delta E_i."""
    seen = [j for j in range(len(result.tokens)) if j != i and (result.heads[0].allowed is None or result.heads[0].allowed[i, j])]
    shares = np.zeros((len(seen), result.e.shape[1]))  # [m, d]
    for head, view in zip(heads, result.heads):
        v = result.e[seen] @ head.w_v  # [m, d_v]
        shares += view.weights[i, seen][:, None] * (v if head.w_o is None else v @ head.w_o)  # [m, d]
    return seen, shares


def case_rows(cases: list, e: np.ndarray, delta: np.ndarray, names: list[list[str]], centroids: list[np.ndarray], intended: list[int],
              shares: list | None = None) -> list[dict]:
    """One row per case (e, delta: [c, d]): the nearest sense of E and of E' = E + delta, whether E' is
    nearer the intended sense than every other (the rule `after` counts), and by how much (the
    intended sense's score less the best other's, before and after). With `shares` (per case: the
    (index, token) pairs and their token_shares), "pulls": the tokens whose share alone, added to E,
    moves that margin most, with the move."""
    from attn_cli.results import row_cosines
    from attn_cli.analysis.senses import sense_scores

    rows = []
    cosines = row_cosines(e, e + delta) if len(e) else []
    for n, (case, x, dx, sense_names, c, k, cos) in enumerate(zip(cases, e, delta, names, centroids, intended, cosines)):
        before, after = sense_scores(np.stack([x, x + dx]), c)  # [s] each
        margin = lambda scores: float(scores[k] - np.delete(scores, k).max())  # noqa: E731
        row = {"line": getattr(case, "line", 0) or None, "word": case.word, "sense": sense_names[k],
               "context": {True: "before", False: "after", None: "unknown"}[case.context_before],
               "nearest_before": sense_names[int(np.argmax(before))], "nearest_after": sense_names[int(np.argmax(after))],
               "resolved": margin(after) > 0, "margin_before": margin(before), "margin_after": margin(after),
               "cos": float(cos), "sentence": case.sentence}
        if shares is not None:
            tokens, parts = shares[n]
            moved = [margin(scores) - row["margin_before"] for scores in sense_scores(x + parts, c)] if len(tokens) else []  # [m]
            order = sorted(range(len(tokens)), key=lambda j: -abs(moved[j]))[:PULLS_SHOWN]
            row["pulls"] = [{"token": tokens[j][1], "index": tokens[j][0], "pull": moved[j]} for j in order]
        rows.append(row)
    return rows


def _measures(e: np.ndarray, delta: np.ndarray, context: np.ndarray, centroids, intended) -> dict:  # e, delta, context: [c, d]
    from attn_cli.results import row_cosines

    if not len(e):
        nan = float("nan")
        return dict.fromkeys(("before", "after", "mean_cos", "mean_delta_ratio", "mean_context_ratio"), nan)
    norms = np.linalg.norm(e, axis=1)  # [c]
    return {
        "before": _share_correct(e, centroids, intended),
        "after": _share_correct(e + delta, centroids, intended),
        "mean_cos": float(np.mean(row_cosines(e, e + delta))),
        "mean_delta_ratio": float(np.mean(np.linalg.norm(delta, axis=1) / norms)),
        "mean_context_ratio": float(np.mean(np.linalg.norm(context, axis=1) / norms)),
    }


SENSE_BASELINES = {
    "identity": "plain similarity",
    "even_content": "even over other content words",
    "even_all": "even over all other tokens",
}


def checked_cases(cases: list, sense_set: dict, vectors, mask: str, set_name: str) -> tuple[list, dict]:
    """The cases the mask scores, and each word's (sense names, centroids), after checking every case against the set and the vectors."""
    from attn_cli.analysis.senses import check_probes, probe_matrix, sense_centroids

    check_cases(cases, sense_set, set_name)
    used = [c for c in cases if mask != Mask.causal or c.context_before]
    vectors.key_to_index  # many sentences: look words up in the index, not by scanning the key list
    for case in cases:  # every case, also those the mask skips: a mistake in the file is one whatever the mask
        tokens = tokenize(case.sentence)
        if case.word not in tokens:
            where = f"line {case.line}: " if getattr(case, "line", 0) else ""
            near = [t for t in dict.fromkeys(tokens) if t.startswith(case.word) or case.word.startswith(t) and len(t) > 2]
            hint = f" (it has {', '.join(map(repr, near))}; the word column names a token exactly)" if near else ""
            raise InputError(f"{where}{case.word!r} is not a token of {case.sentence!r}{hint}")
    for case in used:
        if not vectors.has_vector(case.word):
            raise InputError(f"line {case.line}: the word {case.word!r} has no vector; a sense case's word needs one")
    centroids_of: dict[str, tuple[list[str], np.ndarray]] = {}
    for word in dict.fromkeys(c.word for c in used):
        probes = {name: list(entry) for name, entry in sense_set[word].items()}
        check_probes({f"{word}/{name}": p for name, p in probes.items()}, vectors, set_name)
        centroids_of[word] = (list(probes), sense_centroids([probe_matrix(p, vectors) for p in probes.values()]))
    return used, centroids_of


def even_measures(mixes: dict, e: np.ndarray, target: float, centroids: list, intended: list) -> dict:
    """The even baselines: each case's mean of the other (content) words' E, scaled so that its mean |Delta E| / |E| is the heads'."""
    out = {}
    d = e.shape[1]
    for name, rows in mixes.items():
        mix = np.array(rows).reshape(-1, d)  # [c, d]
        raw = float(np.mean(np.linalg.norm(mix, axis=1) / np.linalg.norm(e, axis=1))) if len(e) else float("nan")
        s = target / raw if raw > 0 else 0.0 if raw == 0 else float("nan")  # nan: no case to size it on
        delta = s * mix  # all the weight is on other tokens: the whole update is context
        out[name] = {**_measures(e, delta, delta, centroids, intended), "scale": s}
    return out


def sense_metrics(heads: list[Head], cases: list, sense_set: dict, vectors, mask: Mask | str = Mask.causal,
                  set_name: str = "the sense set", oov: Oov = Oov.error) -> dict:
    """How often the heads, run together as `inspect` runs them, move an ambiguous word's E' to its intended sense.

    cases: SenseCase items; sense_set: {word: {sense: [probe words]}}
    (attn_cli.senses); mask:
    "causal" (only cases whose context comes before the word) or "none" (all). Returns
    {"mask", "cases", "skipped", "heads": {...}, "identity": {...}, "even_content": {...},
    "even_all": {...}}, each measure dict holding `before` (share of cases whose E is nearer
    the intended sense than every other, by the mean cosine with the probe words), `after`
    (the same for E'), `mean_cos` (cos(E, E')), `mean_delta_ratio` (|Delta E| / |E|) and
    `mean_context_ratio` (|Delta E context| / |E|); the even rows also hold `scale`, the s that
    makes their mean |Delta E| / |E| equal the heads'. "case_rows": the heads' result case by case
    (see case_rows). `oov`: what the sentences' other words without a vector get, as inspect's --oov;
    the ambiguous word must have one.
    """
    from attn_cli.analysis.inspect import inspect_text
    from attn_cli.heads.registry import identity_head
    from attn_cli.models.glove import Settings

    mask = check_mask(mask)
    used, centroids_of = checked_cases(cases, sense_set, vectors, mask, set_name)
    settings = Settings(mask=Mask(mask), oov=oov)
    identity = [identity_head(vectors.vector_size)]
    e_rows, centroids, intended, sense_names, shares = [], [], [], [], []
    parts = {name: ([], []) for name in ("heads", "identity")}  # name -> (delta rows, context rows)
    mixes = {"even_content": [], "even_all": []}  # unscaled sum_j w_ij E_j rows
    for case in used:
        try:
            result = inspect_text(case.sentence, vectors, heads, settings)
            plain = inspect_text(case.sentence, vectors, identity, settings)
        except InputError as e:
            raise InputError(f"line {case.line}: {e}" if getattr(case, "line", 0) else str(e)) from None
        i = result.tokens.index(case.word)  # a token: checked above
        names, c = centroids_of[case.word]
        e_rows.append(result.e[i])
        centroids.append(c)
        sense_names.append(names)
        intended.append(sense_index(case.sense, names))
        visible, share = token_shares(result, heads, i)
        shares.append(([(j, result.tokens[j]) for j in visible], share))
        for name, r in (("heads", result), ("identity", plain)):
            parts[name][0].append(r.delta[i])
            parts[name][1].append(r.delta_context[i])
        seen = [j for j in range(len(result.tokens)) if j != i and (mask != Mask.causal or j < i)]
        for name, keep in (("even_content", lambda j: is_content(result.tokens[j])), ("even_all", lambda j: True)):
            chosen = [j for j in seen if keep(j)]
            mixes[name].append(result.e[chosen].mean(axis=0) if chosen else np.zeros_like(result.e[i]))  # [d]
    d = vectors.vector_size
    e = np.array(e_rows).reshape(-1, d)  # [c, d]
    out: dict = {"mask": mask, "cases": len(used), "skipped": len(cases) - len(used)}
    for name, (delta, context) in parts.items():
        delta, context = np.array(delta).reshape(-1, d), np.array(context).reshape(-1, d)
        out[name] = _measures(e, delta, context, centroids, intended)
    out["heads"]["names"] = [h.name for h in heads]
    out["case_rows"] = case_rows(used, e, np.array(parts["heads"][0]).reshape(-1, d), sense_names, centroids, intended, shares)
    out.update(even_measures(mixes, e, out["heads"]["mean_delta_ratio"], centroids, intended))
    return out


def sense_rows(metrics: dict) -> list[dict]:
    """sense_metrics' result as table rows: the heads, then the baselines."""
    heads = metrics["heads"]
    rows = [{"name": " + ".join(heads["names"]), "kind": "heads", "about": "together, as inspect runs them",
             **{k: v for k, v in heads.items() if k != "names"}}]
    for name, about in SENSE_BASELINES.items():
        rows.append({"name": name, "kind": "baseline", "about": about, **metrics[name]})
    return rows
