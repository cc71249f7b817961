"""The tokenizer (GloVe 6B's conventions) and what happens to words without a vector."""

import numpy as np
import pytest

from tests.exact import assert_copied

from attn_cli.errors import InputError, UnknownWordsError
from attn_cli.vectors.tokens import Oov, embed, tokenize
from attn_cli.vectors.store import Vectors

LESSON_SENTENCES = [
    "A fluffy blue creature roamed the verdant forest.",
    "American shrew mole",
    "One mole of carbon dioxide",
    "Take a biopsy of the mole",
    "The Eiffel tower",
    "A miniature tower",
]


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("A fluffy blue creature roamed the verdant forest.", "a fluffy blue creature roamed the verdant forest ."),
        ("Hello, world! Is it (really) you?", "hello , world ! is it ( really ) you ?"),
        ("Wait... no -- yes; maybe: ok", "wait ... no -- yes ; maybe : ok"),
        ("John's dog isn't here", "john 's dog is n't here"),
        ("I can't, you won't, they don't", "i ca n't , you wo n't , they do n't"),
        ("they're we've I'll he'd I'm", "they 're we 've i 'll he 'd i 'm"),
        ("a well-known state-of-the-art idea", "a well-known state-of-the-art idea"),
        ("O'Neill said so", "o'neill said so"),
        ("1,000 people, 3.14 miles, 9/11 at 10:30", "1,000 people , 3.14 miles , 9/11 at 10:30"),
        ("the U.S. and e.g. 5 a.m.", "the u.s. and e.g. 5 a.m."),
        ("Mr. Smith met Dr. Jones", "mr. smith met dr. jones"),
        ("the end.", "the end ."),
        ("an mp3 from the g8", "an mp3 from the g8"),
        ("back in the '90s", "back in the '90s"),
        ("\u201cHello,\u201d she said, \u2018it\u2019s mine\u2019", "\" hello , \" she said , ' it 's mine '"),
        ("  MIXED   Case\tand\nlines ", "mixed case and lines"),
        ("meet at 9:30am, or 7pm, or 10:15 a.m.", "meet at 9:30 am , or 7 pm , or 10:15 a.m."),
        ("a 5amp fuse, 3d glasses", "a 5amp fuse , 3d glasses"),
        ("", ""),
    ],
)
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens.split()


@pytest.mark.parametrize("text", ["1990s", "3d", "24-year-old"])
def test_tokens_that_start_with_a_digit_stay_whole(text, glove):
    assert text in glove
    assert tokenize(text) == [text]


@pytest.mark.parametrize("sentence", LESSON_SENTENCES)
def test_lesson_sentences_are_all_known(sentence, glove):
    tokens = tokenize(sentence)
    assert tokens and all(t in glove for t in tokens)


def test_clitics_and_abbreviations_are_glove_keys(glove):
    tokens = tokenize("I can't believe Mr. Smith's U.S. trip isn't over, e.g. today.")
    assert {"ca", "n't", "'s", "mr.", "u.s.", "e.g."} <= set(tokens)
    assert all(t in glove for t in tokens)


# --- words without a vector --------------------------------------------------------------------


def test_oov_error_names_every_unknown_word_and_a_close_spelling(glove):
    tokens = tokenize("the fluffy creatrue roamed the qzxqzx forest and the creatrue")
    with pytest.raises(UnknownWordsError) as caught:
        embed(tokens, glove)
    error = caught.value
    assert error.words == ["creatrue", "qzxqzx"]  # each once, in order
    assert error.suggestions == {"creatrue": "creature"}
    message = str(error)
    assert "'creatrue' (did you mean 'creature'?)" in message
    assert "'qzxqzx'" in message and "--oov skip|zero" in message
    assert error.exit_code == 2 and isinstance(error, InputError) and isinstance(error, KeyError)


def test_oov_skip_drops_unknown_words(glove):
    embedded = embed(["the", "qzxqzx", "forest"], glove, Oov.skip)
    assert embedded.tokens == ["the", "forest"]
    assert embedded.unknown == ["qzxqzx"]
    assert_copied(embedded.vectors, [glove.get_vector("the"), glove.get_vector("forest")])


def test_oov_zero_keeps_their_place(glove):
    embedded = embed(["the", "qzxqzx", "forest"], glove, Oov.zero)
    assert embedded.tokens == ["the", "qzxqzx", "forest"]
    assert embedded.unknown == ["qzxqzx"]
    assert embedded.vectors.shape == (3, 50) and embedded.vectors.dtype == np.float64
    assert_copied(embedded.vectors[1], np.zeros(50))
    assert_copied(embedded.vectors[2], glove.get_vector("forest"))


def test_subword_vectors_are_not_unknown():
    vectors = Vectors(["cat"], np.ones((1, 3), dtype=np.float32), oov_vector=lambda word: np.full(3, len(word)))
    embedded = embed(["cat", "cats"], vectors)
    assert embedded.unknown == []
    assert_copied(embedded.vectors, [[1, 1, 1], [4, 4, 4]])


def test_unknown_words_exit_2_through_the_cli(run):
    result = run("similarity", "cat", "creatrue", "qzxqzx")
    if result.exit_code == 2 and "No such command" in result.stderr:
        pytest.skip("no command that takes words yet")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "'creatrue' (did you mean 'creature'?)" in result.stderr and "'qzxqzx'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_time_and_its_am_are_known_and_get_no_far_fetched_spelling(glove, run):
    assert run("inspect", "meet at 9:30am", "--json").exit_code == 0  # 9:30 and am are GloVe keys
    assert glove.close_spelling("30am") == "30km"  # what 9:30am split as 9 : 30am used to be offered


@pytest.mark.parametrize("word", ["😀", "→", "♥♥", "x" * 41])
def test_a_word_with_no_letters_gets_no_suggestion(glove, word):
    assert glove.close_spelling(word) is None


def test_the_emoji_error_names_the_word_and_suggests_nothing(run):
    result = run("inspect", "😀")
    assert result.exit_code == 2 and result.stderr == "attn: unknown word: '😀'; use --oov skip|zero to go on without them\n"


def test_a_suggestion_shares_a_letter_with_the_word(glove):
    for word in ("q", "zx", "ĳ"):
        found = glove.close_spelling(word)
        assert found is None or set(found) & set(word), (word, found)
