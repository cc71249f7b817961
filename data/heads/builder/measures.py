"""The figures of the shipped cards: links and senses measured by attn_cli.heads.evaluation, the code of `attn heads eval`."""

from pathlib import Path

import numpy as np

import sentences as grammar
from attn_cli.analysis.senses import read_sense_set
from attn_cli.core.attention import Mask
from attn_cli.heads import evaluation, links as link_files, senses as sense_eval
from attn_cli.vectors.tokens import tokenize
from builder.settings import LONG_TOKENS, MASKS


def link_figures(heads, links_file, vectors) -> dict:
    """{mask: {row name: figures}} for the heads and the baselines, as `attn heads eval` reports them."""
    links = link_files.read_links(links_file) if isinstance(links_file, Path) else links_file
    exs = link_files.links_to_examples(links, vectors, Mask.none, str(links_file), strict=False)
    return {mask: {row.pop("name"): row for row in evaluation.link_rows(heads, exs, mask, vectors.vector_size)}
            for mask in MASKS}


def long_links(links_file: Path) -> list[link_files.Link]:
    """The links of the file's sentences of LONG_TOKENS tokens or more."""
    return [link for link in link_files.read_links(links_file) if len(tokenize(link.sentence)) >= LONG_TOKENS]


def sense_figures(heads, cases_file, words_file, vectors) -> dict:
    """sense_eval.sense_metrics under both masks, without the case-by-case rows (`attn heads eval --cases` shows them)."""
    cases = sense_eval.parse_sense_cases(cases_file.read_text(encoding="utf-8").splitlines(), str(cases_file))
    sense_set = read_sense_set(words_file)
    figures = {mask: sense_eval.sense_metrics(heads, cases, sense_set, vectors, mask) for mask in MASKS}
    for f in figures.values():
        del f["case_rows"]
    return figures


def sense_cases(cases_file, words_file, vectors) -> tuple[list, dict]:
    """A sense set's cases, and each word's sense names with their probe centroids: {word: ([names], [s, d])}."""
    from attn_cli.analysis.senses import probe_matrix, sense_centroids

    cases = sense_eval.parse_sense_cases(cases_file.read_text(encoding="utf-8").splitlines(), str(cases_file))
    sense_set = read_sense_set(words_file)
    return cases, {w: (list(table), sense_centroids([probe_matrix(p, vectors) for p in table.values()])) for w, table in sense_set.items()}


def even_through_value_map(adjective, context, cases_file, words_file, vectors) -> dict:
    """The context head's attention replaced by even weights over the other content words the word can
    see, through the head's own W_V (the adjective head as it is): what the value map does without
    the head's choice of where to look. The weight spread is what the head gives to tokens (1 less
    its sink's). {mask: share of cases resolved}."""
    from attn_cli.analysis.inspect import inspect_text
    from attn_cli.models.glove import Settings
    from attn_cli.vectors.words import is_content

    cases, senses = sense_cases(cases_file, words_file, vectors)
    out = {}
    for mask in MASKS:
        rows, centroids, intended = [], [], []
        for case in cases:
            if mask == Mask.causal and not case.context_before:
                continue
            result = inspect_text(case.sentence, vectors, [adjective, context], Settings(mask=Mask(mask)))
            i = result.tokens.index(case.word)
            seen = [j for j in range(len(result.tokens)) if j != i and is_content(result.tokens[j]) and (mask == Mask.none or j < i)]
            share = 1.0 if context.sink is None else 1.0 - result.heads[1].sink_weights[i]  # the weight the head gives to tokens
            mix = share * result.e[seen].mean(axis=0) @ context.w_v if seen else 0.0  # [d]
            rows.append(result.e[i] + result.heads[0].delta[i] + mix)  # [d]: the adjective head's update as it is
            names, c = senses[case.word]
            centroids.append(c)
            intended.append(names.index(case.sense))
        out[mask] = sense_eval._share_correct(np.array(rows), centroids, intended)  # the rule `attn heads eval` counts by
    return out


def unambiguous(s: grammar.Sentence) -> bool:
    """Every labelled noun and adjective occurs once: a links file names words, not positions."""
    labelled = [s.tokens[i] for q, ks in s.adjectives.items() for i in (q, *ks)]
    return all(s.tokens.count(w) == 1 for w in labelled)


def sentence_links(sentences) -> list[link_files.Link]:
    """The sentences' noun -> adjective links as a links file would give them (sentences whose
    labelled words repeat are left out)."""
    return [link_files.Link(s.text, s.tokens[q], s.tokens[k], 0) for s in sentences if unambiguous(s)
            for q, ks in s.adjectives.items() for k in ks]
