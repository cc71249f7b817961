"""What the build chooses between and the bars it holds its choices to: every constant of the build, in one place."""

from pathlib import Path

from attn_cli.core.attention import Mask
from attn_cli.heads import training

HERE = Path(__file__).resolve().parent.parent  # data/heads

SEED = 2024
MASKS = tuple(m.value for m in Mask)  # "causal", "none": every figure is measured under both
LONG_TOKENS = 25  # a long sentence has at least this many tokens, as in eval/adjectives_long.tsv
HELDOUT_SHARE = 0.2  # of the lexicon's adjectives and nouns, never in a training sentence

ADJECTIVE_CONFIG = training.TrainConfig(d_k=2, steps=0, seed=SEED, self_weight=0.05)  # W_V's fit: value_scale, value_ridge, self_weight
ADJECTIVE_D_K = 2
ADJECTIVE_SENTENCES = 1500  # grammar sentences for W_V, each seen under both masks
ADJECTIVE_SHAPES = {  # candidates for the score's shape (see adjective_qk), chosen on the dev set
    "alpha": (1.5, 2.0, 3.0), "beta": (2.0, 3.0, 4.0), "bias": (0.25, 0.5, 1.0), "gamma": (4.0, 16.0), "self": (0.0, 2.0, 4.0, 8.0)}
TEMPERATURES = (1.0, 1.5, 2.0, 3.0, 4.0)  # chosen on the dev set after the shape (see build_adjective)
HAND_WEIGHT = 10.0  # a hand-written word (pos_words.tsv) counts this many times a lexicon word in the classifiers: its label is sure
AFTER_FACTOR = 3.0  # a key after the noun costs this many times more per token than one before it
MIN_KEY_WEIGHT = 0.6  # the chosen shape keeps the dev set's mean weight on own adjectives at least this
FUNCTION_KEYS = 300  # the most frequent GloVe keys, as function words when no lexicon word
CLASSIFIER_POSITIONS = 64  # the word classifiers see each word at random positions below this
POSITION_COPIES = 4
CONTEXT_RARITY = (0.5, 0.75, 1.0, 1.5, 2.0)  # candidates for beta, how strongly the context head prefers rare keys; chosen on the dev set
CONTEXT_SELF_COSTS = (0.0, 8.0, 16.0)  # candidates for the cost of attending to oneself; chosen on the dev set
CONTEXT_VALUE_SCALES = (4.0, 5.0, 6.0, 7.0, 8.0)  # candidates for s in W_V = s (I - m m^T); chosen on the dev set
RANK_OFFSET = 10.0  # rarity is fitted to log(rank + this): the first keys' ranks (0, 1, 2...) do not dominate
MIN_COSINE = 0.6  # the chosen s keeps the dev set's mean cos(E, E') of the ambiguous word at least this
SINK_RANKS = (None, 1_000, 3_000, 10_000, 30_000, 100_000)  # candidates for the sink's score: that of a key of this frequency rank (None: no sink); chosen on the dev set
SINK_BOOSTS = (1.0, 1.5, 2.0, 2.5, 3.0)  # candidates for the factor on W_V that comes with the sink (weight on the sink shrinks every update); chosen on the dev set
MIN_ALONE_COSINE = 0.8  # the chosen sink keeps the mean cos(E, E') of the dev words with no content word before them (causal mask) at least this
MEAN_WORDS = 20_000  # m: the unit mean of the most frequent word vectors, a direction every word shares
CORPUS = "lee_background.cor"  # gensim's copy of the Lee background corpus, in its test data (see corpus_sentences)
CORPUS_SHA256 = "5d78d6dafd953bbf65797bef09a9ffb9ec430583381be705f8fd460000f370fb"
CORPUS_RIDGE = 1.0  # of the closed-form fit of the corpus map (the dev figures are the same from 0.01 to 100)
CORPUS_MIN_SEEN = 3  # a corpus word is a training row when its head sees at least this many other tokens
CORPUS_MIXES = (0.0, 0.25, 0.5, 0.75, 1.0)  # candidates for mu in W_V = s (mu C + (1 - mu) (I - m m^T)); chosen on the dev set
VALUE_RIDGES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, None)  # candidates for the pull of the trained W_V toward its start (None: left as it starts); chosen by cross-validation on dev
VALUE_FOLDS = 5  # the dev words are split into this many groups; each is predicted by a map trained on the others
VALUE_STEPS, VALUE_LEARNING_RATE = 400, 0.02  # Adam on the value map's sense margins (converged: 1000 steps give the same choice)
MIN_VALUE_COSINE = 0.55  # the chosen ridge keeps the mean cos(E, E') of words it was not trained on at least this (the bar is 0.5)

SETS = {  # name -> (file, sense words or None); dev is the tuning set
    "natural": (HERE / "eval" / "adjectives_natural.tsv", None),
    "long": (HERE / "eval" / "adjectives_long.tsv", None),
    "natural3": (HERE / "eval" / "adjectives_natural3.tsv", None),  # written blind, after the heads were built
    "dev": (HERE / "dev" / "adjectives.tsv", None),
    "senses": (HERE / "eval" / "senses_natural.tsv", HERE / "eval" / "sense_words.tsv"),
    "senses_dev": (HERE / "dev" / "senses.tsv", HERE / "dev" / "sense_words.tsv"),
    "senses2": (HERE / "eval" / "senses_natural2.tsv", HERE / "eval" / "sense_words2.tsv"),  # 12 words of no other set
    "senses3": (HERE / "eval" / "senses_natural3.tsv", HERE / "eval" / "sense_words3.tsv"),  # 12 more, written after the head was built
}
HELDOUT_SENSES = {"senses": "held-out", "senses2": "held-out, 12 other words", "senses3": "held-out, 12 more words"}  # name -> label
SENSE_SETS = (*HELDOUT_SENSES, "senses_dev")
