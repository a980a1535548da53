"""What a memory must not keep: `<private>…</private>` sections and secrets.

`clean(text)` gives the text to store and what was taken out of it:

- A `<private>…</private>` section is removed with its tags (tags in any case, sections may
  span lines, a text may have several and they may nest). A `<private>` never closed hides
  everything after it; a stray `</private>` is dropped.
- A secret is replaced by `[REDACTED:<kind>]`: provider keys and tokens (AWS, GitHub, GitLab,
  Slack, Stripe, OpenAI, SendGrid, npm, PyPI, Twilio, Azure, …), JWTs, private keys (the
  whole PEM block, or the rest of the text when it has no END line), the password of a URL
  (`https://user:PASSWORD@host`, only that part) and keyword assignments (`password =
  hunter2`, `"api_key": "…"`) whose value looks like a credential rather than a word, a
  path, a name or a reference.

The detectors are detect-secrets' plugins, used directly: their own regular expressions,
keyword list and false-positive heuristics. Added to them, for what they miss (measured on the
labelled notes of bench/secret_detection.py): Anthropic, OpenAI project, fine-grained GitHub,
Google API and npm keys and today's longer Stripe keys; an AWS secret key written in prose
(forty base64 characters with an access key id or the word aws or secret on their line or
the one before); `Bearer` tokens; the password of a URL that the plugin's expression refuses
(no user, characters left unencoded); `.env`-style assignments (`NAME=…`, `NAME: …`,
`"Name": "…"`, `setx NAME …`) whose name ends in TOKEN, SECRET, PASSWORD, KEY, PASS, PWD or
CREDENTIALS and whose value looks like a credential; a password named in prose ("the
password is …", "passphrase …"). A value that is a placeholder (`AKIAXXXXXXXXXXXXXXXX`,
`sk-ant-api03-xxxx…`, `sk-ant-api03-...`, `<your-api-key>`, `your-openai-key`, `changeme`) is
left alone.

Not detect-secrets' `scan_line`, which reads and changes the library's process-wide settings
(not safe while other threads scan) and may ask a provider's server whether a key is live;
here nothing leaves the process. Not used: the high-entropy detectors (they flag commit ids,
content hashes and base64 in ordinary engineering notes) and the public-IP one (an address is
not a secret).

Every step is about linear in the text: each expression runs once over it and is bounded, and
the few plugin expressions that backtrack badly on hostile input are run where they cannot
(see _redacted). Cleaning is idempotent: a cleaned text comes back unchanged, so its content
hash is stable.
"""
import bisect
import re
import string
from dataclasses import dataclass

from detect_secrets.filters.heuristic import (
    is_indirect_reference,
    is_likely_id_string,
    is_not_alphanumeric_string,
    is_potential_uuid,
    is_prefixed_with_dollar_sign,
    is_sequential_string,
    is_templated_secret,
)
from detect_secrets.plugins import keyword
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

PRIVATE = "private"  # what `removed` says for a <private> section
NOTHING_LEFT = "everything in the content was inside <private>…</private>; nothing stored"


@dataclass(frozen=True, slots=True)
class Cleaned:
    text: str                  # what may be stored (not stripped: callers strip)
    removed: tuple[str, ...]   # PRIVATE per section left out, the kind per secret redacted

    @property
    def changed(self) -> bool:
        return bool(self.removed)

    @property
    def private_sections(self) -> int:
        return self.removed.count(PRIVATE)

    @property
    def redacted(self) -> dict[str, int]:
        """Kind of secret -> how many were redacted."""
        kinds: dict[str, int] = {}
        for kind in self.removed:
            if kind != PRIVATE:
                kinds[kind] = kinds.get(kind, 0) + 1
        return kinds

    def note(self) -> str | None:
        """One short line for a tool result, None when nothing was taken out."""
        parts = []
        if self.private_sections:
            n = self.private_sections
            parts.append(f"{n} <private> section{'s' if n > 1 else ''} left out")
        if self.redacted:
            kinds = ", ".join(k if n == 1 else f"{k} ×{n}" for k, n in self.redacted.items())
            parts.append(f"secrets redacted ({kinds})")
        return "; ".join(parts) or None


def clean(text: str) -> Cleaned:
    """`text` without its private sections and with its secrets redacted."""
    removed: list[str] = []
    text = _without_private(text, removed)
    text = _without_key_blocks(text, removed)
    text = _without_secrets(text, removed)
    return Cleaned(text, tuple(removed))


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# -- <private> sections ----------------------------------------------------------------------

# <private>, </private>, < Private >, <private reason="…">; bounded, so a '<' costs little.
_TAG = re.compile(r"<\s{0,20}(/?)\s{0,20}private(?:\s[^<>]{0,200})?>", re.IGNORECASE)
_MAX_PASSES = 100


def _without_private(text: str, removed: list[str]) -> str:
    # Removing a section can join a tag split around it ("<pri<private>…</private>vate>"):
    # repeat until none is left, so that cleaning a cleaned text changes nothing.
    for _ in range(_MAX_PASSES):
        if not _TAG.search(text):
            return text
        text = _one_pass(text, removed)
    # Only hostile input gets here: whatever follows the first tag still standing is hidden.
    first = _TAG.search(text)
    if first is not None:
        removed.append(PRIVATE)
        text = text[:first.start()]
    return text


def _one_pass(text: str, removed: list[str]) -> str:
    kept: list[str] = []
    depth, start = 0, 0
    for tag in _TAG.finditer(text):
        if not tag.group(1):  # opening
            if depth == 0:
                kept.append(text[start:tag.start()])
                removed.append(PRIVATE)
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                start = tag.end()
        else:  # a closing tag with nothing open: drop the tag, keep the text
            kept.append(text[start:tag.start()])
            start = tag.end()
    if depth == 0:
        kept.append(text[start:])
    joined = [kept[0]]
    for piece in kept[1:]:  # "a <private>x</private> b" -> "a b", not "a  b"
        if joined[-1][-1:] in (" ", "\t") and piece[:1] in (" ", "\t"):
            piece = piece.lstrip(" \t")
        if piece:
            joined.append(piece)
    return "".join(joined)


# -- private keys ----------------------------------------------------------------------------

# The plugin's own headers ("BEGIN RSA PRIVATE KEY", …, "PuTTY-User-Key-File-2"). A header is
# a key when it is armour ("-----BEGIN … PRIVATE KEY-----", "---- BEGIN SSH2 … ----", or
# "PuTTY-User-Key-File-2:" in a PuTTY file): then the block up to its END line (PuTTY: the
# Private-MAC line) is redacted, or the rest of the text when there is none. A header named
# in prose is left alone.
# The plugin has no header for an encrypted PKCS#8 key ("BEGIN ENCRYPTED PRIVATE KEY").
_KEY_HEADERS = [regex.pattern for regex in PrivateKeyDetector.denylist] \
    + ["BEGIN ENCRYPTED PRIVATE KEY"]
_KEY_HEADER = re.compile("|".join(_KEY_HEADERS))
_PUTTY_END = re.compile(r"Private-MAC:[^\n]*")
_ARMOUR_BEFORE = re.compile(r"-{4,5} ?\Z")  # "-----BEGIN", "---- BEGIN" (SSH2)
_ARMOUR_AFTER = re.compile(r" ?-{4,5}")


def _without_key_blocks(text: str, removed: list[str]) -> str:
    if "PRIVATE KEY" not in text and "PuTTY" not in text:
        return text
    out, start, pos = [], 0, 0
    while (found := _KEY_HEADER.search(text, pos)) is not None:
        header = found.group(0)
        pos = found.end()
        if header.startswith("BEGIN"):
            before = _ARMOUR_BEFORE.search(text, max(0, found.start() - 6), found.start())
            if before is None or _ARMOUR_AFTER.match(text, found.end()) is None:
                continue
            begin = before.start()
            close = text.find(header.replace("BEGIN", "END", 1), found.end())
            if close < 0:
                end = len(text)
            else:
                end = close + len(header) - 2
                after = _ARMOUR_AFTER.match(text, end)
                end = after.end() if after else end
        else:
            if text[found.end():found.end() + 1] != ":":
                continue
            begin = found.start()
            mac = _PUTTY_END.search(text, found.end())
            end = len(text) if mac is None else mac.end()
        out.append(text[start:begin])
        out.append(marker(_kind(PrivateKeyDetector)))
        removed.append(_kind(PrivateKeyDetector))
        start = pos = end
    out.append(text[start:])
    return "".join(out)


# -- secrets ---------------------------------------------------------------------------------

# Plugins whose expressions match the secret along with what shows it is one (a URL, a
# keyword, an assignment): the secret is their first group. In the others the first group,
# if any, is a prefix ("ghp"), and the secret is the whole match. None of their expressions
# crosses a line break, so each runs once over the whole text.
_SECRET_IN_GROUP = (BasicAuthDetector, AWSKeyDetector, CloudantDetector, IbmCloudIamDetector,
                    IbmCosHmacDetector, SoftlayerDetector)
_WHOLE_MATCH = (ArtifactoryDetector, AzureStorageKeyDetector, DiscordBotTokenDetector,
                GitHubTokenDetector, GitLabTokenDetector, MailchimpDetector,
                PypiTokenDetector, SendGridDetector, SlackDetector, SquareOAuthDetector,
                StripeDetector, TelegramBotTokenDetector, TwilioKeyDetector)
_RENAMED = {BasicAuthDetector: "url-password", JwtTokenDetector: "jwt", NpmDetector: "npm-token"}
_SHORTEST_SECRET = 8  # no text shorter than this holds a secret the plugins find
_ROUNDS = 4
_JWT_ALPHABET = re.compile(r"[A-Za-z0-9_=.+/-]+")
_JWT_SIGNATURE = re.compile(r"[A-Za-z0-9_.+/=-]*")
_MAX_JWT = 4096  # longer runs are not searched for a JWT (the plugin's pattern backtracks)
# OpenAIDetector's `sk-[…]*[…]{20}T3BlbkFJ…`, tried from every "sk-", is quadratic in a run of
# them. It is tried only in runs of its alphabet that hold its marker, from the first "sk-":
# where a later start matches, that one does too (its `[…]*` takes the "sk-" in between).
_OPENAI_ALPHABET = re.compile(r"[A-Za-z0-9_-]+")
_OPENAI_MARK = "T3BlbkFJ"
_SPACES = re.compile(r" {17,}")
# Assignment plugins (IBM, Cloudant, SoftLayer) allow `key<spaces>value` with three space
# quantifiers in a row: a long run of spaces costs them cubic time. A run of more than 16
# spaces is not an assignment; the copy they scan has the rest of it as NULs (same length,
# so what they find is where it is in the text).
_SPACE_HEAVY = (IbmCloudIamDetector, IbmCosHmacDetector, CloudantDetector, SoftlayerDetector)


# The plugins set these as class attributes; their base declares them abstract properties.
def _secret_type(plugin: type[RegexBasedDetector]) -> str:
    return str(getattr(plugin, "secret_type"))


def _patterns(plugin: type[RegexBasedDetector]) -> list[re.Pattern[str]]:
    return list(getattr(plugin, "denylist"))


def _kind(plugin: type[RegexBasedDetector]) -> str:
    if plugin in _RENAMED:
        return _RENAMED[plugin]
    return re.sub(r"[^a-z0-9]+", "-", _secret_type(plugin).lower()).strip("-")


def _genuine(secret: str) -> bool:
    """detect-secrets' default filters that look at the secret alone, and ours: not a
    placeholder."""
    return not (is_sequential_string(secret) or is_potential_uuid(secret)
                or is_templated_secret(secret) or is_not_alphanumeric_string(secret)
                or _PLACEHOLDER.fullmatch(secret) is not None)


# A prefix and then one character over and over: AKIAXXXXXXXXXXXXXXXX, ghp_xxxx…, sk_test_0000…
# (no random key repeats a character eight times).
_PLACEHOLDER = re.compile(r"(?:[A-Za-z0-9]{1,12}[-_])*(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA|AIza)?"
                          r"([xX0*.#])\1{7,}")


def _without_secrets(text: str, removed: list[str]) -> str:
    # A redaction can bring two pieces of text together that make a secret; a few rounds
    # reach the text that a second clean() leaves as it is.
    for _ in range(_ROUNDS):
        before = len(removed)
        text = _redacted(text, removed)
        if len(removed) == before:
            break
    return text


def _redacted(text: str, removed: list[str]) -> str:
    if len(text) < _SHORTEST_SECRET:
        return text
    spans: list[tuple[int, int, str]] = []  # start, end, kind
    spaced = _SPACES.sub(lambda m: " " * 16 + "\0" * (len(m.group(0)) - 16), text) \
        if "                 " in text else text
    for plugin in _SECRET_IN_GROUP + _WHOLE_MATCH:
        spans += _plugin_spans(plugin, spaced if plugin in _SPACE_HEAVY else text)
    spans += _openai_spans(text)
    spans += _npm_spans(text)
    spans += _jwt_spans(text)
    spans += _prefixed_spans(text)
    spans += _url_password_spans(text)
    spans += _bearer_spans(text)
    # Both assignment rules look past the providers' tokens only; where they find the same
    # value, the longer span wins (see _merged).
    assignments = _keyword_spans(text, spans) + _named_spans(text, spans)
    spans += assignments
    spans += _aws_secret_spans(text, spans)
    if not spans:
        return text
    out, end = [], 0
    for start, stop, kind in _merged(spans):
        out.append(text[end:start])
        out.append(marker(kind))
        removed.append(kind)
        end = stop
    out.append(text[end:])
    return "".join(out)


def _plugin_spans(plugin: type[RegexBasedDetector], text: str) -> list[tuple[int, int, str]]:
    spans = []
    for regex in _patterns(plugin):
        for m in regex.finditer(text):
            if plugin in _SECRET_IN_GROUP and m.lastindex:
                start, end = m.span(1)
            else:
                start, end = m.span()
                while start < end and text[start] in " \t\n=:\"'":  # Artifactory's fences
                    start += 1
                while end > start and text[end - 1] in " \t\n\"'":
                    end -= 1
            secret = text[start:end]
            if not secret or not _genuine(secret):
                continue
            if plugin is BasicAuthDetector and _url_placeholder(secret):
                continue
            if plugin is ArtifactoryDetector and not any(c.isdigit() for c in secret):
                continue  # "APEXRANKING" is a word; a token has digits
            spans.append((start, end, _kind(plugin)))
    return spans


# NpmDetector's `//.+/:_authToken=\s*(npm_.+|<36 hex>).*`, tried from every "//", is
# quadratic, and finds one token per line (the last). Its value part is matched after each
# "/:_authToken=" that has a "//" before it on its line instead.
_NPM_AFTER = "/:_authToken="
_TOKEN = re.compile(r"\S+")
_NPM_VALUE = re.compile(_patterns(NpmDetector)[0].pattern.split(_NPM_AFTER[2:], 1)[1])


def _npm_spans(text: str) -> list[tuple[int, int, str]]:
    spans = []
    lines = _Lines(text)
    at = text.find(_NPM_AFTER)
    while at >= 0:
        first, end = lines.first("//", at), lines.end(at)
        found = _NPM_VALUE.match(text, at + len(_NPM_AFTER), end) \
            if 0 <= first <= at - 3 else None  # `//.+/:_authToken=`
        if found is not None:
            start = found.start(1)
            token = _TOKEN.match(text, start, found.end(1))  # `npm_.+` runs on
            secret = text[start:token.end()] if token else ""
            if secret and _genuine(secret):
                spans.append((start, start + len(secret), _kind(NpmDetector)))
        at = text.find(_NPM_AFTER, at + 1)
    return spans


def _openai_spans(text: str) -> list[tuple[int, int, str]]:
    if _OPENAI_MARK not in text:
        return []
    spans = []
    regex = _patterns(OpenAIDetector)[0]
    for run in _OPENAI_ALPHABET.finditer(text):
        if _OPENAI_MARK not in run.group(0):
            continue
        at = text.find("sk-", run.start(), run.end())
        while at >= 0 and (m := regex.match(text, at, run.end())) is not None:
            if _genuine(m.group(0)):
                spans.append((m.start(), m.end(), _kind(OpenAIDetector)))
            at = text.find("sk-", m.end(), run.end())
    return spans


def _jwt_spans(text: str) -> list[tuple[int, int, str]]:
    if "eyJ" not in text:
        return []
    spans = []
    regex = _patterns(JwtTokenDetector)[0]
    for run in _JWT_ALPHABET.finditer(text):
        if "eyJ" not in run.group(0) or len(run.group(0)) > _MAX_JWT:
            continue
        for m in regex.finditer(text, run.start(), run.end()):
            if JwtTokenDetector.is_formally_valid(m.group(0)):
                # The pattern ends lazily before the signature: take the signature too.
                tail = _JWT_SIGNATURE.match(text, m.end(), run.end())
                end = tail.end() if tail else m.end()
                spans.append((m.start(), end, _kind(JwtTokenDetector)))
    return spans


# -- what the plugins miss -------------------------------------------------------------------

# Provider keys the plugins do not know, or know only in an older, shorter shape (theirs takes
# 24 characters of a Stripe key, which now has about a hundred). Each starts with a literal
# prefix and runs a bounded length.
_PREFIXED = (
    ("anthropic-key", re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[a-z]{2,10}[0-9]{2}-[A-Za-z0-9_-]"
                                 r"{20,400}")),
    ("openai-token", re.compile(r"(?<![A-Za-z0-9_-])sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]"
                                r"{20,400}")),
    ("github-token", re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{30,255}")),
    ("google-api-key", re.compile(r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")),
    ("stripe-access-key", re.compile(r"(?<![A-Za-z0-9_])[rs]k_(?:live|test)_[A-Za-z0-9]"
                                     r"{16,255}")),
    ("npm-token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])")),
)


def _prefixed_spans(text: str) -> list[tuple[int, int, str]]:
    spans = []
    for kind, regex in _PREFIXED:
        for m in regex.finditer(text):
            if _genuine(m.group(0)):
                spans.append((m.start(), m.end(), kind))
    return spans


# The password of a URL, where BasicAuthDetector's expression does not take it: no user
# (`redis://:pw@host`) or characters that should have been encoded (`pa$$!word`). It runs from
# each "://" and cannot pass a "/", so no scan goes beyond the next URL; an "@" in the
# password is kept up to the last one before the host.
_URL_USERINFO = re.compile(r"://[^\s:/@?#\[\]{}<>\"'`]{0,128}:([^\s/?#\"'`<>]{1,256})@"
                           r"(?=[A-Za-z0-9\[])")
_URL_PLACEHOLDERS = frozenset(("password", "passwd", "pass", "pwd", "pw", "secret", "changeme",
                               "pass123", "password123"))


def _url_placeholder(password: str) -> bool:
    return password.lower() in _URL_PLACEHOLDERS or len(set(password)) == 1


def _url_password_spans(text: str) -> list[tuple[int, int, str]]:
    if "://" not in text:
        return []
    spans = []
    for m in _URL_USERINFO.finditer(text):
        password = m.group(1)
        if "[REDACTED:" in password or password.startswith(("$", "%", "{")) \
                or _url_placeholder(password) or not _genuine(password):
            continue
        spans.append((m.start(1), m.end(1), _kind(BasicAuthDetector)))
    return spans


# `Authorization: Bearer <token>`: an opaque token with letters and digits (not `Bearer
# {token}`, `Bearer $TOKEN` or `Bearer tokens are...`).
_BEARER = re.compile(r"(?<![A-Za-z])[Bb]earer[ \t]{1,4}([A-Za-z0-9._~+/-]{16,4096}=*)")


def _bearer_spans(text: str) -> list[tuple[int, int, str]]:
    if "earer" not in text:
        return []
    spans = []
    for m in _BEARER.finditer(text):
        start, end = m.span(1)
        while end > start and text[end - 1] == ".":  # the end of a sentence
            end -= 1
        if _opaque(text[start:end]):
            spans.append((start, end, "bearer-token"))
    return spans


def _opaque(value: str) -> bool:
    """Whether a value has the shape of a generated token: long, letters and digits, many
    different characters, one word."""
    return (len(value) >= 16 and len(set(value)) >= 8 and _SPACE.search(value) is None
            and _DIGIT.search(value) is not None and _LETTER.search(value) is not None
            and _genuine(value))


# (Searched, not looped over in Python: a value may be thousands of characters long.)
_SPACE, _DIGIT, _LETTER = re.compile(r"\s"), re.compile(r"[0-9]"), re.compile(r"[^\W\d_]")


# An AWS secret access key in prose ("use AKIA… with secret wJalr…"), quoted or not: forty
# base64 characters, on their own, with both cases and a digit (not a commit id), and an access
# key id or the word aws or secret on their line or the line before. Lines, not a distance in
# characters: a redaction shortens the text but never joins lines, so a second clean() sees
# the same neighbourhood.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_HINT = re.compile(r"(?<![A-Za-z0-9/+])(?i:aws|secret)"
                       r"|(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}")


def _aws_secret_spans(text: str, found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    taken = _Taken([(a, b) for a, b, _ in found])
    candidates = [m for m in _AWS_SECRET.finditer(text) if not taken.covers(m.start())
                  and _mixed(m.group(0))]
    if not candidates:
        return []
    markers = _Taken([m.span() for m in _MARKER.finditer(text)])
    hints = [m.start() for m in _AWS_HINT.finditer(text) if not markers.covers(m.start())]
    breaks = [m.start() for m in re.finditer("\n", text)] if "\n" in text else []
    spans = []
    for m in candidates:
        line = bisect.bisect_left(breaks, m.start())  # the candidate's line: 0, 1, …
        first = breaks[line - 2] + 1 if line >= 2 else 0  # the start of the line before
        last = breaks[line] if line < len(breaks) else len(text)
        i = bisect.bisect_left(hints, first)
        while i < len(hints) and m.start() <= hints[i] < m.end():  # not a hint inside it
            i += 1
        if i < len(hints) and hints[i] < last and _genuine(m.group(0)):
            spans.append((m.start(), m.end(), "aws-secret-key"))
    return spans


def _mixed(secret: str) -> bool:
    return any(c.isupper() for c in secret) and any(c.islower() for c in secret) \
        and any(c.isdigit() for c in secret)


# The keyword plugin's own assignment expressions (group of the value; its quote is the group
# before), tried where one of its keywords starts, within a window that ends with the line:
# `password = hunter2`, `password: hunter2`, `"api_key": "…"`, `secret := "…"`.
_ASSIGNMENTS = ((keyword.FOLLOWED_BY_EQUAL_SIGNS_REGEX, 5),
                (keyword.FOLLOWED_BY_COLON_REGEX, 4),
                (keyword.FOLLOWED_BY_COLON_EQUAL_SIGNS_REGEX, 4),
                (keyword.FOLLOWED_BY_ARROW_FUNCTION_SIGN_QUOTES_REQUIRED_REGEX, 4),
                (keyword.FOLLOWED_BY_QUOTES_AND_SEMICOLON_REGEX, 3))
_KEYWORD = re.compile(keyword.DENYLIST_REGEX, re.IGNORECASE)
# Every keyword holds one of these: a text without any has no keyword to look for.
_KEYWORD_HINTS = ("key", "pass", "pwd", "secret", "contras")
assert all(any(h in word for h in _KEYWORD_HINTS) for word in keyword.DENYLIST)
_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
_WINDOW = 512  # an assignment is looked for this far from its keyword
_UNQUOTED_END = re.compile(r"[\s&;,)\]}>'\"`]")
_NOT_SECRETS = frozenset(("none", "null", "nil", "true", "false", "undefined", "empty",
                          "unset", "redacted", "changeme", "required", "optional"))
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_WORDS = re.compile(r"[A-Za-z]+(?:[-_][A-Za-z]+)*")
_CALL = re.compile(r"[A-Za-z_][\w.:]*[(\[]")  # load_key(data, settings["KEY"], std::env::var(
_NAME_CONSTANT = re.compile(r"[A-Z]+(?:_[A-Z]+)+")  # "YOUR_API_KEY"
_PLACEHOLDER_WORDS = ("your", "here", "replace", "example", "sample", "dummy", "fake",
                      "placeholder", "insert", "change")


def _keyword_spans(text: str, found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    folded = text.lower()
    if not any(hint in folded for hint in _KEYWORD_HINTS):
        return spans
    # Not looked at: a keyword inside a value already redacted, or inside a marker
    # ("[REDACTED:password]" is no assignment).
    taken = _Taken([(a, b) for a, b, _ in found] + [m.span() for m in _MARKER.finditer(text)])
    lines = _Lines(text)
    for word in _KEYWORD.finditer(text):
        if taken.covers(word.start()) or text[word.start() - 1:word.start()] == ":":
            continue  # arn:aws:secretsmanager:…:secret:name is a name
        window = min(lines.end(word.start()), word.start() + _WINDOW)
        for regex, group in _ASSIGNMENTS:
            m = regex.match(text, word.start(), window)
            if m is None:
                continue
            start, end = m.span(group)
            quoted = bool(m.group(group - 1))
            if not quoted:
                cut = _UNQUOTED_END.search(text, start, end)
                end = cut.start() if cut else end
            # A provider's token inside the value is redacted as that; the value ends there.
            end = min(end, taken.next_start(start))
            if taken.covers(start):
                break
            if not quoted:
                # The end of a sentence ("!" stays: passwords end with it).
                while end > start and text[end - 1] in ".:":
                    end -= 1
            value = text[start:end]
            if not quoted and text.startswith(("..", "…"), end):
                value += "..."  # elided ("sk-ant-api03-..."): a placeholder
            if _credential(value, quoted, text[word.start():min(window, end + 2)]):
                spans.append((start, end, _keyword_kind(m.group(1))))
                taken.add(start, end)
            break
    return spans


# `.env`-style assignments the keyword plugin has no word for (API_TOKEN=…, SMTP_PASS=…,
# ENCRYPTION_KEY=…, "SessionToken": "…", export FOO_TOKEN=…) or whose value it refuses
# (Password=^x!…;). Found where a name ends in one of these words, then read backwards to the
# start of the name and forwards to the end of the value, each a bounded length.
_NAME_END = re.compile(r"(?:token|secret|password|passwd|pass|pwd|key|credentials?)"
                       r"(?![A-Za-z0-9_])[\"'\]]{0,2}([ \t]{0,4})(:=|=(?![=>~])|:(?!:))"
                       r"([ \t]{0,4})", re.IGNORECASE)
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_")
_MAX_NAME = 80
_NAMED_VALUE = re.compile(r"([\"'`]?)([^\s\"'`]{1,4096})")  # an STS session token: ~1000
_FIELD_END = re.compile(r"[;&]")
_PASSWORD_WORDS = ("password", "passwd", "pass", "pwd")
# Names ending in KEY or TOKEN that are not credentials (a cache key, a pagination token).
_NOT_CREDENTIAL_NAMES = ("cache", "sort", "partition", "primary", "foreign", "idempot", "object",
                         "row", "hash", "index", "lookup", "routing", "shard", "group", "dedup",
                         "public", "publishable", "bucket", "next", "page", "continuation",
                         "cursor", "sync", "max", "num")
# Assignments without a sign: `setx API_TOKEN …` (Windows), `ENV API_TOKEN …` (Dockerfile),
# `set -gx API_TOKEN …` (fish). The name is read as in `NAME=value`.
_LAST_PART = re.compile(r"(?:token|secret|password|passwd|pass|pwd|key|credentials?)\Z",
                        re.IGNORECASE)
_SPACED_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_])(?:[Ss][Ee][Tt][Xx]|ENV|set[ \t]+-[a-zA-Z]"
                                r"{1,4})[ \t]+([A-Za-z_][A-Za-z0-9_]{0,80})[ \t]+")
# A password in prose or a config directive: "the password is …", "passphrase …", Redis's
# `requirepass …`.
_SAID_PASSWORD = re.compile(r"(?<![A-Za-z0-9_])(?:(?i:password|passphrase|passcode)(?![A-Za-z0-9_])"
                            r"(?:[ \t]+(?:is|was))?|requirepass|masterauth)[ \t]{1,8}"
                            r"([\"']?)([^\s\"'`]{1,256})")


def _named_spans(text: str, found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    taken = _Taken([(a, b) for a, b, _ in found] + [m.span() for m in _MARKER.finditer(text)])

    def add(begin: int, end: int, kind: str) -> None:
        spans.append((begin, end, kind))
        taken.add(begin, end)

    # A value ends before the next name found (`TOKEN=TOKEN=…` is two short values, not two
    # long ones that overlap): each part of the text is read as a value once.
    ends = list(_NAME_END.finditer(text))
    for m, after in zip(ends, ends[1:] + [None]):
        if taken.covers(m.start()):
            continue
        start = m.start()
        while start > 0 and m.start() - start < _MAX_NAME and text[start - 1] in _NAME_CHARS:
            start -= 1
        if start > 0 and text[start - 1] in ":$":
            continue  # an ARN (arn:…:secret:name), a reference
        if m.group(2) == "=" and m.group(3) and not m.group(1):
            continue  # `NAME= (none)`: an empty value, then words
        span = _assigned(text, start, m.start(), m.end(), taken,
                         text[start - 1:start] in ("?", "&", ";"),
                         len(text) if after is None else after.start())
        if span is not None:
            add(*span)
    for m in _SPACED_ASSIGNMENT.finditer(text):
        start = m.start(1)
        last = _LAST_PART.search(m.group(1))  # API_TOKEN -> TOKEN
        if last is not None and not taken.covers(start):
            span = _assigned(text, start, start + last.start(), m.end(), taken, False, len(text))
            if span is not None:
                add(*span)
    for m in _SAID_PASSWORD.finditer(text):
        begin, end = m.span(2)
        quoted = bool(m.group(1)) and text[end:end + 1] == m.group(1)
        if not quoted:
            while end > begin and text[end - 1] in ".,;:)":
                end -= 1
        value = text[begin:end]
        if not taken.covers(begin) and len(value) >= 6 \
                and _credential(value, quoted, m.group(0)) and (quoted or _said(value)):
            add(begin, end, "password")
    return spans


def _assigned(text: str, start: int, at: int, value_at: int, taken: "_Taken", field: bool,
              limit: int) -> tuple[int, int, str] | None:
    """The span of the value at `value_at` assigned to the name `text[start:…]` whose last
    part starts at `at`, when the name is one of a credential and the value looks like one."""
    ending = _name_ending(text, start, at)
    if ending is None:
        return None  # inside a word ("monkey", "bypass")
    name = text[start:at] + ending
    value = _named_value(text, value_at, taken, field, limit)
    if value is None:
        return None
    begin, end, quoted = value
    secret, context = text[begin:end], text[start:end]
    if not quoted and text.startswith(("..", "…"), end):
        secret += "..."  # elided: a placeholder
    if ending in _PASSWORD_WORDS:
        good = len(secret) >= 6 and _credential(secret, quoted, context)
    else:
        good = _opaque(secret) and _credential(secret, quoted, context) \
            and not any(word in name.lower() for word in _NOT_CREDENTIAL_NAMES)
    return (begin, end, _named_kind(ending, name)) if good else None


def _said(value: str) -> bool:
    """A password named in prose ("the password is …") needs letters and digits both: a
    single word there is more often English than a password."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _name_ending(text: str, start: int, at: int) -> str | None:
    """The word a name ends with, when it starts a part of the name: the whole name, after an
    underscore, or a capital after a small letter (SessionToken); None inside a word."""
    end = at
    while end < len(text) and text[end] in _NAME_CHARS:
        end += 1
    ending = text[at:end]
    if at > start and not (text[at - 1] == "_"
                           or (ending[0].isupper() and text[at - 1].islower())):
        return None
    return ending.lower().rstrip("s") if ending.lower().startswith("credential") \
        else ending.lower()


def _named_value(text: str, at: int, taken: "_Taken", field: bool,
                 limit: int) -> tuple[int, int, bool] | None:
    """Where the value at `at` starts and ends, and whether it is quoted; in a field of a
    query or a connection string (`?a=1&password=…`, `…;Pwd=…;`) it ends at the next field."""
    m = _NAMED_VALUE.match(text, at, max(at, limit))
    if m is None:
        return None
    begin, end = m.span(2)
    quote = m.group(1)
    if quote:
        if text[end:end + 1] != quote:
            return None  # words in quotes, not a value
    else:
        cut = _FIELD_END.search(text, begin, end) if field else None
        end = cut.start() if cut else end
        while end > begin and text[end - 1] in ".,;:)":
            end -= 1
    end = min(end, taken.next_start(begin))
    if end <= begin or taken.covers(begin):
        return None
    return begin, end, bool(quote)


def _named_kind(ending: str, name: str) -> str:
    if ending in _PASSWORD_WORDS:
        return "password"
    if ending == "key":
        return "api-key" if "api" in name.lower() else "secret-key"
    return ending


class _Lines:
    """Where the line of a position ends, and where a string first occurs in it, for
    positions asked in increasing order (each line is searched once)."""

    def __init__(self, text: str):
        self.text, self.start, self.stop = text, 0, -1
        self.found: dict[str, int] = {}

    def _move(self, pos: int) -> None:
        if pos > self.stop:
            self.start = self.text.rfind("\n", 0, pos) + 1
            stop = self.text.find("\n", pos)
            self.stop = len(self.text) if stop < 0 else stop
            self.found = {}

    def end(self, pos: int) -> int:
        self._move(pos)
        return self.stop

    def first(self, needle: str, pos: int) -> int:
        """Where `needle` first occurs in the line of `pos` (-1 if nowhere)."""
        self._move(pos)
        if needle not in self.found:
            self.found[needle] = self.text.find(needle, self.start, self.stop)
        return self.found[needle]


class _Taken:
    """Spans of the text already accounted for, disjoint and in order (a bisect per look, so
    a text of thousands of keywords and tokens stays near linear)."""

    def __init__(self, spans: list[tuple[int, int]]):
        merged: list[list[int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]

    def covers(self, pos: int) -> bool:
        i = bisect.bisect_right(self.starts, pos) - 1
        return i >= 0 and pos < self.ends[i]

    def next_start(self, pos: int) -> int:
        """The start of the first span after `pos` (a very large number when none)."""
        i = bisect.bisect_right(self.starts, pos)
        return self.starts[i] if i < len(self.starts) else 1 << 62

    def add(self, start: int, end: int) -> None:  # disjoint from every span (see callers)
        i = bisect.bisect_right(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)


def _keyword_kind(word: str) -> str:
    word = word.lower().replace("_", "")
    if any(p in word for p in ("pass", "pwd", "contras")):
        return "password"
    if word == "secret":
        return "secret"
    return word[:-3] + "-key" if word.endswith("key") else word


def _credential(value: str, quoted: bool, context: str) -> bool:
    """Whether the value of `keyword = value` is a credential: detect-secrets' filters, then,
    for an unquoted value (prose: "password: must be 12 characters"), the shape of one."""
    if len(value) < 4 or "[REDACTED:" in value or not _genuine(value):
        return False
    # (The reference filter's expression needs a bracket and is slow on long lines: it is
    # asked only when there is one.)
    if is_prefixed_with_dollar_sign(value) or is_likely_id_string(value, context) \
            or (("(" in context or "[" in context) and is_indirect_reference(context)):
        return False
    if value.endswith(("...", "…")) or (_WORDS.fullmatch(value) and any(
            word in value.lower() for word in _PLACEHOLDER_WORDS)):
        return False  # "sk-ant-api03-...", "your-openai-key", "replace-me"
    if quoted:
        return _NAME_CONSTANT.fullmatch(value) is None
    if value.lower() in _NOT_SECRETS or value.startswith(("/", "~/", "./", "../", "%")) \
            or "://" in value or re.match(r"[A-Za-z]:\\", value) \
            or (_DOTTED_NAME.fullmatch(value) and not value[-2:].isdigit()) \
            or _CONSTANT.fullmatch(value) or _CALL.match(value) or value.endswith(("(", "[")):
        return False  # a path, a URL, a name, a call or a reference ("Maple.river2024" is none)
    if _WORDS.fullmatch(value):  # "rotated", "read-only", "user_input", "Required"
        return any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return True  # a digit or a symbol in it: "hunter2", "p@ss", "s3cr3t"


def _merged(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping spans as one, named by the first (a provider's kind before a keyword's)."""
    out: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -s[1])):
        if out and start < out[-1][1]:
            last = out[-1]
            out[-1] = (last[0], max(last[1], end), last[2])
        else:
            out.append((start, end, kind))
    return out
