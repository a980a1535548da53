"""What a search query says besides its words: which of them carry meaning for keyword
search, and which memory tags it names.

Pure functions over text, no index or model access, so they are cheap and unit-testable.
"""
import re
from dataclasses import dataclass

# Function words that carry no topic of their own: question words, auxiliaries, pronouns,
# articles, prepositions, conjunctions. Written out here (rather than tantivy's short
# built-in list) because questions are mostly made of such words, and BM25 over short
# memories rewards a memory that merely repeats "what", "did" or "her".
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can cannot could did do does doing done down during each
either else ever every few for from further get gets got had has have having he her here
hers herself him himself his how i if in into is it its itself just let like me might mine
more most much must my myself neither no nor not now of off on once one only or other ought
our ours ourselves out over own per quite rather same shall she should so some such than
that the their theirs them themselves then there these they this those though through thus
to too under until up upon us very via was we were what whatever when whenever where
whereas wherever whether which while who whoever whom whose why will with within without
would yet you your yours yourself yourselves
s t d ll m re ve don didn doesn isn wasn aren weren hasn haven hadn won wouldn couldn
shouldn
""".split())

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class QueryAnalysis:
    text: str
    keywords: list[str]  # the words keyword search should use, in order
    words: set[str]      # every word of the query, lower-cased
    lowered: str = ""    # the query's words, lower-cased, single-spaced

    def names_tag(self, tag: str) -> bool:
        """True when the query mentions `tag` as a whole word or phrase (case-insensitive);
        one-letter tags and function words never count."""
        words = [w.lower() for w in _WORD.findall(tag)]
        if not words or (len(words) == 1 and (words[0] in STOPWORDS or len(words[0]) < 2)):
            return False
        if len(words) == 1:
            return words[0] in self.words
        return f" {' '.join(words)} " in f" {self.lowered} "


def keyword_terms(text: str) -> list[str]:
    """The query's words minus function words; all of them if nothing else is left."""
    words = [w.lower() for w in _WORD.findall(text)]
    content = [w for w in words if w not in STOPWORDS]
    return content or words


def analyse(text: str) -> QueryAnalysis:
    words = [w.lower() for w in _WORD.findall(text)]
    return QueryAnalysis(text=text, keywords=keyword_terms(text), words=set(words),
                         lowered=" ".join(words))
