"""Small word lists the library needs: English function words, and what counts as a content token.

A content token is a token with a letter or digit that is not a function word: the words that
carry a sentence's topic ("mole", "carbon", "biopsy"), not "the", "of", "was" or punctuation.
"""

FUNCTION_WORDS = frozenset(
    """
    a an the this that these those some any each every either neither no another such what which
    whose whatever whichever all both half several many much more most few fewer less least enough
    i me my mine myself you your yours yourself yourselves he him his himself she her hers herself
    it its itself we us our ours ourselves they them their theirs themselves one ones someone
    anyone everyone something anything everything nothing nobody somebody anybody everybody who
    whom whoever
    be am is are was were been being have has had having do does did doing done
    will would shall should can could may might must ought 'll 'd 's 're 've 'm n't not
    of in on at by for with from to into onto upon about above below over under between among
    through during before after since until till against across along around behind beside
    besides beyond near off out up down within without toward towards via per than like unlike
    despite throughout
    and or but nor so yet if then else when whenever where wherever while whereas because
    although though unless whether as once how why
    there here very too also just only even still already again ever never always often
    quite rather almost perhaps maybe however thus therefore hence indeed else
    own same other others
    """.split()
)


def is_content(token: str) -> bool:
    """A token that carries meaning of its own: it has a letter or digit and is not a function word."""
    return any(c.isalnum() for c in token) and token not in FUNCTION_WORDS
