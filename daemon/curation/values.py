"""What a memory asserts, as far as merging and conflicts are concerned: its values and its
subject.

"p95 is 500ms" and "p95 is 900ms" embed almost identically, and so do "we deploy on
Thursdays" and "we deploy on Fridays"; merging either pair would destroy one of two facts.
A value is a token that fills a slot of a fact: a number, quantity (durations in seconds,
clock times as HH:MM), version or identifier; a word from a closed set (a weekday, a month,
on/off, always/never, an environment, a log level, a casing style, a technology, ...); or a
name (a capitalised word inside a sentence, the word in front of "team" or "service").

Two memories *disagree* when one says of the same thing what the other denies: exactly one
value stands in place of another of its kind (a weekday for a weekday, a name for a name),
or the same values come in another order ("from S3 to the NAS" / "from the NAS to S3"), or
one negates the other and nothing else changed, while the rest of what they say is the same
subject. Two values changed at once mean two things with a value each ("component B owns
queue q1" / "component C owns queue q2"), unless both are quantities of one thing; a plain
word swapped in front of the same word means two kinds of one thing ("the staging database"
/ "the analytics database"). Such pairs never merge either; a value only one of two texts
names does not stop a merge (the merge keeps the fuller text). bench/conflict_pairs.py
measures the rule on labelled pairs in tests/data.
"""
import difflib
import re
from functools import lru_cache

SAME_SUBJECT = 0.5  # share of the shorter text's subject words the other must hold
RULE = 3  # bumped when the rule changes: verdicts recorded under another are found again

# a token never ends in one of . - / : ("v2." and "v2" are one value)
_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.\-/:%$€£']*[A-Za-z0-9_%$€£])?")
_HAS_DIGIT = re.compile(r"\d")
_STOPWORDS = frozenset("""
a an the and or but if then else of to in on at by for with from into onto over under about as
is are was were be been being am do does did has have had having will would shall should can
could may might must it its this that these those there here we you they he she i me my our
your their his her them us not no yes so than too very just also only now still all any each
every some such what which who whom whose when where why how up down out off again further
once more most other same own both few per via use uses used using get gets got make makes
""".split())
_UNITS = {"milliseconds": "ms", "millisecond": "ms", "msec": "ms", "seconds": "s",
          "second": "s", "secs": "s", "sec": "s", "minutes": "min", "minute": "min",
          "mins": "min", "hours": "h", "hour": "h", "hrs": "h", "days": "d", "day": "d",
          "weeks": "w", "week": "w", "months": "mo", "month": "mo", "years": "y", "year": "y",
          "percent": "%", "gigabytes": "gb", "megabytes": "mb", "kilobytes": "kb",
          "terabytes": "tb", "bytes": "b"}
_UNIT_ABBREVIATIONS = frozenset(("ms", "s", "min", "h", "d", "w", "%", "gb", "mb", "kb", "tb",
                                 "gib", "mib", "kib", "gi", "mi", "ki", "k", "m", "x", "px"))
_NUMBER_WITH_UNIT = re.compile(r"^(\d+(?:[.,]\d+)*)\s*([a-z%]*)$")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+[a-z0-9.\-]*$|^v\d+$")
_NEGATIONS = frozenset("not no never cannot can't don't doesn't didn't isn't aren't wasn't "
                       "weren't won't shouldn't mustn't without nor rather instead".split())

# Closed sets a value is taken from, by kind. Words of one kind disagree with each other.
_KINDS: dict[str, str] = {}
for _kind, _words in {
    "weekday": "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays "
               "wednesdays thursdays fridays saturdays sundays weekday weekdays weekend "
               "weekends",
    "month": "january february april june july august september october november december",
    "switch": "enabled disabled enable disable active inactive",
    "frequency": "always never sometimes usually rarely often occasionally",
    "truth": "true false",
    "period": "hourly daily nightly weekly biweekly fortnightly monthly quarterly yearly "
              "annually",
    "environment": "production prod staging dev development qa sandbox preprod "
                   "preproduction",
    "log level": "debug info warn warning warnings trace verbose",
    "indentation": "tabs spaces",
    "size": "tiny small medium large xlarge huge",
    "degree": "low high higher lower minimum maximum",
    "order": "ascending descending asc desc newest oldest",
    "mode": "sync async synchronous asynchronous synchronously asynchronously blocking "
            "nonblocking eager lazy manual "
            "automatic automatically manually",
    "visibility": "public private internal external",
    "requirement": "required require requires optional mandatory recommended",
    "permission": "allowed forbidden permitted prohibited blocked denied allow deny",
    "casing": "camelcase snake_case snakecase kebab-case kebabcase pascalcase lowercase "
              "uppercase titlecase screaming_snake_case",
    "direction": "inbound outbound upstream downstream left right",
    "technology": """
        postgres postgresql mysql mariadb sqlite mongodb mongo redis memcached valkey kafka
        rabbitmq sqs sns nats pubsub elasticsearch opensearch solr python java golang rust
        ruby nodejs deno typescript javascript kotlin php scala elixir erlang
        haskell clojure perl lua dart react vue angular svelte django flask fastapi
        rails nestjs nextjs nuxt remix laravel aws gcp azure docker podman
        kubernetes k8s nomad terraform pulumi ansible puppet helm jenkins github gitlab
        bitbucket circleci travis buildkite argocd npm yarn pnpm pip poetry conda
        pytest unittest jest vitest jasmine junit rspec cypress playwright selenium
        grafana prometheus datadog newrelic sentry splunk honeycomb jaeger nginx apache caddy
        envoy haproxy traefik graphql rest grpc soap protobuf avro json yaml toml xml csv
        parquet s3 gcs minio bigquery snowflake redshift clickhouse cassandra scylla dynamodb
        cosmosdb firestore firebase supabase vercel heroku netlify cloudflare linux ubuntu
        debian alpine centos fedora rhel macos windows bash zsh powershell vim neovim
        vscode emacs intellij ruff flake8 pylint eslint prettier mypy pyright
        webpack vite rollup esbuild babel swc oauth oauth2 saml jwt ldap okta auth0
        keycloak stripe paypal adyen braintree twilio sendgrid mailgun discord
        jira asana trello confluence git svn mercurial openai anthropic
        celery sidekiq airflow dagster flink hadoop pandas polars numpy pytorch tensorflow
        onnx""",
}.items():
    for _word in _words.split():
        _KINDS[_word] = _kind
_ALIASES = {"postgresql": "postgres", "k8s": "kubernetes", "enabled": "on", "enable": "on",
            "active": "on", "disabled": "off", "disable": "off", "inactive": "off",
            "permitted": "allowed", "allow": "allowed", "prohibited": "forbidden",
            "blocked": "forbidden", "denied": "forbidden", "deny": "forbidden",
            "mandatory": "required", "require": "required", "requires": "required",
            "mongo": "mongodb", "prod": "production", "stage": "staging",
            "development": "dev", "preproduction": "preprod", "warning": "warn",
            "warnings": "warn", "errors": "error"}
_SETTING_VERBS = frozenset("switched turned toggled set is are was were stays stay left "
                           "flipped kept mode flag".split())
_LOUD_LEVELS = frozenset(("error", "errors", "critical", "fatal"))
# Nouns whose modifier says which one is meant ("the growth team", "the catalog service").
_HEADS = frozenset("team teams squad squads guild group department org service services "
                   "worker workers queue bucket cluster region repo repository library "
                   "gateway provider vendor namespace channel topic flag table branch host "
                   "node pool db database tenant runner endpoint job".split())
# Capitalised inside a sentence without being names.
_NOT_NAMES = frozenset("i i'm i've i'd utc gmt ok id ids url urls api apis ui ux cli sdk "
                       "http https ssh tls ssl dns ip tcp udp cpu gpu ram ssd pr prs ci cd "
                       "db sql nosql vm vms os faq todo fyi asap eod etc".split())


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(t.lower() for t in _TOKEN.findall(text))


def _facts(text: str) -> tuple[tuple[tuple[str, str], ...], frozenset[str], int]:
    """(value, kind) of each value token in order, the subject words, and how many
    negations the text holds."""
    return _analysis(text)[0]


@lru_cache(maxsize=4096)
def _analysis(text: str) -> tuple[tuple[tuple[tuple[str, str], ...], frozenset[str], int],
                                  dict[str, str]]:
    """_facts() and _kinds_of() from one reading of the text. Cached: conflict checks
    compare the same texts again on every search that shows them (texts are at most
    MEMORY_MAX_STORE_CHARS)."""
    found: list[tuple[str, str]] = []
    subject: set[str] = set()
    kinds: dict[str, str] = {}
    negations = 0
    matches = list(_TOKEN.finditer(text))
    lowered = [m.group().lower() for m in matches]
    for i, match in enumerate(matches):
        raw, token = match.group(), lowered[i]
        value = _value(raw, token, lowered, i, _starts_sentence(text, match.start()))
        if value is not None:
            kinds[token] = "name" if value[1] == "name?" else value[1]
        if token in _NEGATIONS:
            negations += 1
            if token == "never":
                found.append(("never", "frequency"))
            continue
        if value is not None:
            found.append(value)
        if (value is None or value[1] == "name?") and token not in _STOPWORDS \
                and token not in _UNITS and token not in _UNIT_ABBREVIATIONS:
            subject.add(_stem(token))
    return (tuple(found), frozenset(subject), negations), kinds


def _starts_sentence(text: str, at: int) -> bool:
    before = text[max(0, at - 16):at].rstrip(" \t")
    return not before or before[-1] in ".!?;:([\"“-*#\n"


def _value(raw: str, token: str, lowered: list[str], i: int,
           sentence_start: bool) -> tuple[str, str] | None:
    if _HAS_DIGIT.search(token):
        return _digit_value(token, lowered, i)
    if token in ("on", "off"):  # a switch after a word that sets one ("turned off"), or ON
        return (token, "switch") if raw.isupper() or i and lowered[i - 1] in _SETTING_VERBS \
            else None
    if token in _LOUD_LEVELS and (raw.isupper() or i + 1 < len(lowered)
                                  and lowered[i + 1] in ("level", "log", "logs")):
        return token, "log level"  # ERROR, at error level; not "an error"
    if raw in ("March", "May") and not sentence_start:
        return token, "month"
    kind = _KINDS.get(token)
    if kind is not None:
        return _ALIASES.get(token, token), kind
    if "-" in token:  # medium-sized, extra-large: the kind of the part that has one
        for part in token.split("-"):
            if part in _KINDS and _KINDS[part] != "technology":
                return _ALIASES.get(part, part), _KINDS[part]
    if i and lowered[i - 1] in _HEADS and (raw != token or "-" in token):
        return token, "identifier"  # queue email-high, worker W1: which one
    if "_" in token or "." in token or raw.startswith("/"):
        return token, "identifier"  # new_checkout, user.events, /search
    if len(token) == 1 and raw.isupper():
        return None if sentence_start else (token, "name")  # component B, plan A
    if token in _NOT_NAMES or token in _UNIT_ABBREVIATIONS or token in _UNITS:
        return None
    if len(raw) > 1 and raw.isupper() and raw.isalpha():
        return token, "name"  # EU, SRE, US
    if token in _STOPWORDS:
        return None
    if raw[0].isupper() and not sentence_start:
        return token, "name"
    if i + 1 < len(lowered) and lowered[i + 1] in _HEADS:
        return token, "name"  # the data team, the pricing service: which one
    if raw[0].isupper() and (raw[1:].islower() or raw.isupper()):
        return token, "name?"  # a name, or just the first word of a sentence
    return None


def _digit_value(token: str, lowered: list[str], i: int) -> tuple[str, str]:
    match = _NUMBER_WITH_UNIT.match(token)
    if match:
        number, unit = match.group(1), match.group(2)
        if not unit and i + 1 < len(lowered):
            following = lowered[i + 1]
            if following in _UNITS or following in _UNIT_ABBREVIATIONS or following in \
                    ("am", "pm"):
                unit = following
        if unit in _UNITS or unit in _UNIT_ABBREVIATIONS or unit in ("am", "pm"):
            return _quantity(number.replace(",", ""), _UNITS.get(unit, unit)), "quantity"
        if not unit:
            return number.replace(",", ""), "quantity"
    hyphened = re.fullmatch(r"(\d+(?:\.\d+)?)-([a-z]+)", token)
    if hyphened:  # a 30-day trial, a 120-character line
        unit = _UNITS.get(hyphened.group(2), hyphened.group(2))
        return _quantity(hyphened.group(1), unit if unit in _UNIT_ABBREVIATIONS else ""), \
            "quantity"
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})", token)
    if clock:
        return f"{int(clock.group(1)):02d}:{clock.group(2)}", "quantity"
    if _VERSION.match(token) or re.fullmatch(r"[\d.:/\-]+", token):
        return token, "quantity"  # versions, dates
    return token, "identifier"  # q1, us-east-1, p95


_SECONDS = {"ms": 0.001, "s": 1, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def _quantity(number: str, unit: str) -> str:
    """One spelling per quantity: durations in seconds (5 min = 300 s), clock times as
    HH:MM (3 am = 03:00)."""
    try:
        value = float(number)
    except ValueError:
        return number + unit
    if unit in _SECONDS:
        return f"{value * _SECONDS[unit]:g}s"
    if unit in ("am", "pm") and value.is_integer() and 1 <= value <= 12:
        hour = int(value) % 12 + (12 if unit == "pm" else 0)
        return f"{hour:02d}:00"
    return number + unit


def _stem(word: str) -> str:
    """Enough stemming that "test" and "tests", "cache" and "cached" are one word."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "zes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def values(text: str) -> frozenset[str]:
    """The values a text names (numbers with their unit, identifiers, words of a closed
    set, names inside a sentence)."""
    return frozenset(v for v, kind in _facts(text)[0] if kind != "name?")


def subject(text: str) -> frozenset[str]:
    """Content words that are not values: what the memory is about."""
    return _facts(text)[1]


def disagree(a: str, b: str) -> bool:
    """The two texts must not merge: they name different numbers, quantities or
    identifiers, one has a word value in place of another's (a weekday for a weekday, a
    name for a name), one denies what the other says, or they put the same values in
    another order. (A word value only one of them names is no reason: the merge keeps the
    fuller text.)"""
    va, vb = _facts(a), _facts(b)
    return _digits(va[0]) != _digits(vb[0]) or (va[2] % 2) != (vb[2] % 2) or \
        bool(_differing(va[0], vb[0], _all_stems(a), _all_stems(b))) or \
        _swapped_values(a, b)


Values = tuple[tuple[str, str], ...]  # (value, kind) of each value token, in order


def _digits(found: Values) -> frozenset[str]:
    return frozenset(v for v, _ in found if _HAS_DIGIT.search(v))


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def same_subject(a: str, b: str) -> bool:
    """The two texts are about the same thing: their content words overlap enough, counting
    the values both name among them ("Python" in "we use Python 3.11" and "... 3.12")."""
    shared = values(a) & values(b)
    return _overlap(subject(a) | shared, subject(b) | shared) >= SAME_SUBJECT


def _differing(fa: Values, fb: Values, stems_a: frozenset[str] = frozenset(),
               stems_b: frozenset[str] = frozenset()) -> list[tuple[str, str, str]]:
    """(kind, value of a, value of b) for each value one text has in place of one of the
    other's, kind by kind (a name stands for a technology too). A value the other text
    uses anywhere, in any role, is not one of them (a capitalised first word is then a
    sentence reordered, not a name)."""
    set_a, set_b = {v for v, _ in fa}, {v for v, _ in fb}
    only_a: dict[str, list[str]] = {}
    only_b: dict[str, list[str]] = {}
    for facts, other, other_stems, only in ((fa, set_b, stems_b, only_a),
                                            (fb, set_a, stems_a, only_b)):
        for value, kind in facts:
            if value in other or _stem(value) in other_stems:
                continue
            kind = _pairing(kind)
            if value not in only.get(kind, ()):
                only.setdefault(kind, []).append(value)
    pairs = []
    for kind in sorted(only_a.keys() & only_b.keys()):
        pairs += [(kind, x, y) for x, y in zip(only_a[kind], only_b[kind])]
    return pairs


def _pairing(kind: str) -> str:
    return "name" if kind in ("technology", "name?") else kind


def value_disagreement(a: str, b: str) -> bool:
    """Same subject, one value in place of another (or one denies what the other says):
    both cannot hold. Two values changed at once mean two things, each with its own value
    ("Staging deploys on Monday" / "Production deploys on Thursday"), unless both are
    quantities of one thing ("starts at 02:00 and takes 30 minutes" / "04:00 ... 45")."""
    fa, fb = _facts(a), _facts(b)
    if _adds(a) or _adds(b):
        return False  # "also supports Firefox": one more, not another
    differing = _differing(fa[0], fb[0], _all_stems(a), _all_stems(b))
    if len(differing) > 1 and any(kind != "quantity" for kind, _, _ in differing):
        return False
    subjects_a, subjects_b = _named_subjects(a), _named_subjects(b)
    if any(x in subjects_a or y in subjects_b for _, x, y in differing):
        return False  # "Lambda ingest-a has ..." / "Lambda ingest-b has ...": two things
    if not differing:
        if _swapped_values(a, b):
            return True  # from the EU to the US / from the US to the EU
        if (fa[2] % 2) == (fb[2] % 2):
            return False
        return _overlap(subject(a), subject(b)) >= 0.8  # one denies the other, and no more
    return same_subject(a, b) and not _swapped_subject_word(a, b)


_ADDITIVE = frozenset(("also", "additionally", "another", "additional"))
_BEFORE_A_VALUE = frozenset("to in at on into onto from via with by as is are was were be "
                            "uses use".split())


def _adds(text: str) -> bool:
    return not _ADDITIVE.isdisjoint(_tokens(text))


@lru_cache(maxsize=4096)
def _named_subjects(text: str) -> frozenset[str]:
    """Identifiers a sentence starts with ("Lambda ingest-a has", "Consumer group cg1
    reads", "the orders-v1 endpoint"): what it is about, not a value it gives."""
    tokens = [t for t in _tokens(text) if t not in ("a", "an", "the")][:4]
    kinds = _kinds_of(text)
    return frozenset(t for k, t in enumerate(tokens) if kinds.get(t) == "identifier"
                     and (k == 0 or tokens[k - 1] not in _BEFORE_A_VALUE))


def _swapped_values(a: str, b: str) -> bool:
    """The same words around the same values, in another order ("copies from S3 to the NAS"
    / "copies from the NAS to S3"): a direction or an order reversed."""
    sequence_a, sequence_b = _skeleton(a), _skeleton(b)
    return sequence_a[0] == sequence_b[0] and sequence_a[1] != sequence_b[1] and \
        sorted(sequence_a[1]) == sorted(sequence_b[1])


@lru_cache(maxsize=4096)
def _skeleton(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The text's words with each value replaced by a mark (articles left out), and its
    values in order."""
    kinds = _kinds_of(text)
    words, found = [], []
    for token in _tokens(text):
        if token in kinds:
            words.append("\x00")
            found.append(token)
        elif token not in ("a", "an", "the"):
            words.append(token)
    return tuple(words), tuple(found)


MAX_ALIGNED_TOKENS = 64  # words of each text aligned to find a swapped subject word


@lru_cache(maxsize=4096)
def _all_stems(text: str) -> frozenset[str]:
    return frozenset(_stem(t) for t in _tokens(text))


def _swapped_subject_word(a: str, b: str) -> bool:
    """One word stands in place of another in front of the same word ("staging database" /
    "analytics database", "frontend pull requests" / "backend pull requests"): two kinds of
    one thing, whatever their values."""
    # Aligning two long, repetitive texts costs SequenceMatcher far more than quadratic time
    # (minutes for two 17 KB notes); the words that name a subject come first.
    ta, tb = _tokens(a)[:MAX_ALIGNED_TOKENS], _tokens(b)[:MAX_ALIGNED_TOKENS]
    kinds_a, kinds_b = _kinds_of(a), _kinds_of(b)
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or i2 - i1 != 1 or j2 - j1 != 1 or i2 >= len(ta) or j2 >= len(tb):
            continue
        x, y, following = ta[i1], tb[j1], ta[i2]
        if following != tb[j2] or following in _STOPWORDS or x in _STOPWORDS \
                or y in _STOPWORDS or x in _NEGATIONS or y in _NEGATIONS:
            continue
        kind = kinds_a.get(x)
        if _stem(x) != _stem(y) and (kind is None or kind != kinds_b.get(y)):
            return True
    return False


def _kinds_of(text: str) -> dict[str, str]:
    """The kind of each token of the text that is a value (as written, lower-cased)."""
    return _analysis(text)[1]


def tag_overlap(a: list[str], b: list[str]) -> float:
    """Jaccard overlap of two tag lists; two untagged memories overlap fully."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)
