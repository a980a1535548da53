"""The judge of a candidate memory: is this text worth keeping for later sessions?

At the end of a turn an agent is asked to store what it decided and learnt, and it often
stores the turn itself: chatter, a progress note, a file listing, a stack trace without its
lesson, a command's output, a diff, its to-do list, a vague line, or a memory it already
has in other words. `judge` says which, with one sentence the agent can act on; the caller
refuses the text, or (a restatement) folds it into the memory it restates.

Pure functions, no model: the caller passes the nearest existing memories with their cosine
similarity. The judge refuses only on evidence of a junk shape; a text too short to show
one is kept. Its cost is linear in the text (each line is matched once by patterns without
nested repetition, on a bounded prefix of the line). The corpus and figures:
tests/data/capture/, bench/capture_quality.py, bench/RESULTS.md#capture-judge.
"""
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from .values import disagree

Kind = Literal["keep", "chatter", "progress_note", "file_listing", "stack_trace",
               "tool_output", "diff_dump", "todo_echo", "vague", "restatement"]

REASONS: dict[str, str] = {
    "chatter": "this is conversation, not a fact; store the decision, preference or lesson "
               "itself, in a sentence a later session can act on",
    "progress_note": "this reports what was done in this turn; store what a later session "
                     "needs from it (a decision and its reason, a lesson, a convention)",
    "file_listing": "this is a file listing; store what you learned from it (where something "
                    "lives and why it matters), not the listing",
    "stack_trace": "this is an error or stack trace without its lesson; store the cause and "
                   "what to do about it next time, not the trace",
    "tool_output": "this is a command's output; store what it showed that matters later (a "
                   "command and its caveat, a fact), not the output",
    "diff_dump": "this is a change told as a diff; the code already holds it, so store why it "
                 "was made or the rule it follows",
    "todo_echo": "this is a task list or a plan for this session; store decisions and lessons, "
                 "not to-dos",
    "vague": "this is too vague to act on later; name the thing, the value and what to do "
             "(which setting, which file, which command, and why)",
}

RESTATE_FLOOR = 0.78  # cosine to an existing memory at which a restatement is looked for
MIN_WORDS = 4         # fewer words than this: too short to show a shape, kept
MIN_VAGUE_WORDS = 5   # a shorter phrase is not vague, it is a fragment (a label, a note)
MAX_TEXT = 50_000     # characters judged (the store's own limit is lower)
MAX_LINE = 400        # characters of a line the line patterns see
MAX_TOKENS = 400      # specific tokens compared for a restatement
MAX_COMPARED = 2000   # characters of each text compared for a restatement
STEM, STEM_MAX = 4, 24  # a shorter or longer form of a token: shares a start this long


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An existing memory close to the candidate, as the caller found it."""
    id: int
    content: str
    similarity: float


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: Kind
    reason: str = ""             # for a refusal, one sentence the agent can act on
    restates: int | None = None  # for a restatement, the memory it says again

    @property
    def keep(self) -> bool:
        return self.kind == "keep"


KEEP = Verdict("keep")

# -- what a line is ------------------------------------------------------------------------

_FRAME = re.compile(
    r"^(?:traceback \(most recent call last\)|file \"[^\"]{1,300}\", line \d+"
    r"|at (?:async |new )?[^\s()]{1,200}(?: \[as [^\]\s]{1,60}\])?"
    r" \([^()\s]{1,300}:\d+(?::\d+)?\)$"
    r"|at [^\s()]{1,300}:\d+:\d+$|at [\w$.<>]{1,200}\([\w.]{1,200}\.java:\d+\)"
    r"|goroutine \d+ \[|[\w./-]{1,300}\.(?:go|rs|py|js|ts|java|rb):\d+(?: \+0x[0-9a-f]+)?$"
    r"|thread '[^']{1,100}' panicked|note: run with `rust_backtrace|\[signal sig)", re.I)
_ERROR = re.compile(
    r"^(?:[\w.]{0,80}(?:error|exception|warning)\b(?: \w{1,12})?:|exception in thread "
    r"|fatal: |panic: |error(?: ts\d+)?:|detail: )", re.I)
_TREE = re.compile(r"^[│├└─|`\\ \t*+-]+")
_PATHISH = re.compile(r"^(?:\.{0,2}/)?[\w@.-]{1,100}(?:/[\w@.-]{1,100}){0,20}/?$")
_LS = re.compile(r"^[dl-][rwxsStT-]{9}[@+.]?\s")
_DIFF_HEAD = re.compile(r"^(?:diff --git |index [0-9a-f]{6,}\.\.|@@ -\d|\+\+\+ [ab/]|--- [ab/]"
                        r"|```diff)")
_TOOL = re.compile(
    r"^(?:={5,}|-{5,}|platform \w+ -- python|collected \d+ items?|on branch |your branch is "
    r"|changes (?:not )?(?:staged|to be committed)|untracked files|modified: |new file: "
    r"|deleted: |added \d+ packages?|\d+ packages? (?:are|is) looking for funding"
    r"|run `npm |\d+ vulnerabilit|successfully installed |requirement already satisfied"
    r"|\d{4}-\d\d-\d\d[t ][\d:.]+z?\s+(?:trace|debug|info|warn|warning|error)\b"
    r"|found \d+ errors?"
    r"|[\w./-]{1,300}:\d+(?::\d+)?: (?:error|warning|note|[a-z]{1,4}\d{2,4})\b"
    r"|plan: \d+ to add|# [\w.\[\]\"-]{1,200} will be |[+~-] resource \""
    r"|\[[\w./-]{1,100} [0-9a-f]{7,}\] "
    r"|\d+ files? changed|✓ built in|\S{1,200}\s{2,}[\d.]+ kb|ping [\w.-]{1,200} \("
    r"|\d+ bytes from |(?:name|container id)\s{2,}|already up to date)", re.I)
_TABLE_GAP = re.compile(r"\S {3,}\S")

_LINE_KINDS = ("frame", "error", "path", "diff", "tool", "todo", "prose", "fence")


def _line_kind(line: str) -> str:
    s = line.strip()[:MAX_LINE]
    low = s.lower()
    if s.startswith("```") and not s.startswith("```diff"):
        return "fence"
    if _FRAME.match(s):
        return "frame"
    if _DIFF_HEAD.match(s) or (s[:1] == "+" and s[:2] != "++") or (
            s[:1] == "-" and s[1:2] in (" ",) and s[2:3] in ('"', "'")):
        return "diff"
    if _TOOL.match(s) or len(_TABLE_GAP.findall(s)) >= 3:
        return "tool"
    if _ERROR.match(s):
        return "error"
    if _LS.match(s):
        return "path"
    if _TODO_LINE.match(low):
        return "todo"
    bare = _TREE.sub("", s).strip()
    if bare and _PATHISH.match(bare) and ("/" in bare or _FILE_EXT.search(bare)
                                          or s != bare):
        return "path"
    return "prose"


# -- words that carry a lesson, and shapes of junk in prose --------------------------------

# A reason, a rule or a preference: a text that holds one is worth reading again even when
# the rest of it is a trace, a listing or output.
_LESSON = re.compile(
    r"\b(?:because|so that|must|never|always|don'?t|do not|avoid|instead|rather than"
    r"|prefers?|wants?|dislikes?|otherwise|unless|workaround|lesson|decided|decision|chose"
    r"|means|caused?|requires?|the (?:real )?fix (?:is|was)|fixed (?:it|by)|root cause"
    r"|only after|is safe|approved|reproduce|stopgap|pin)\b", re.I)
# Weaker: a text that holds only these may still be chatter or a progress note.
_WEAK_LESSON = re.compile(r"\b(?:should|make sure|keep|need(?:s|ed)? to|use)\b", re.I)
_DESPITE_WEAK_LESSON = ("chatter", "progress_note", "vague", "todo_echo")
_DIAGNOSTIC = re.compile(r"[\w./-]{1,300}:\d+:\d+:? [A-Z]{0,4}\d{0,4}")
_FILE_EXT = re.compile(r"\.[a-z]{1,5}\d?$|^\.[\w-]{2,}$|^(?:makefile|dockerfile|readme)",
                       re.I)
_INLINE_PATH = re.compile(r"(?<![\w/])(?:\.{0,2}/)?[\w@-]{1,100}(?:/[\w@.-]{1,100}){1,20}/?"
                          r"|(?<![\w/])\.?[\w-]{1,100}\.(?:py|ts|tsx|js|jsx|json|ya?ml|toml|md"
                          r"|tf|go|rs|java|css|html|svg|cfg|ini|txt|lock|sh|sql|mod|sum)\b"
                          r"|\b(?:makefile|dockerfile)\b", re.I)
_LISTING_WORDS = re.compile(r"\b(?:files?|director(?:y|ies)|folders?|structure|contains"
                            r"|found|changed files|the following)\b", re.I)
# What an assistant says to the person it works for, about the conversation or its own
# next step; phrases people also say to each other ("let me know", "you're right") are left
# out: alone they say nothing about the text's worth.
_CHATTER = re.compile(
    r"hope (?:this|that) helps|happy to help|feel free to ask|anything else (?:you'd like|i can"
    r"|to help)|great question|good catch|you'?re absolutely right|i apologi[sz]e"
    r"|sorry for the confusion|thanks for your patience|as (?:you )?requested|as you asked"
    r"|working on it now|shall we move on|session summary|we chatted|user said thanks"
    r"|you'd like me to|\b(?:let me|i'll|i will|i'm going to|i am going to)\s+(?:now\s+)?"
    r"(?:check|take a look at|run|fix|update|get back to|go ahead|review|investigate)"
    r"\s+(?:the|it|that|this|those|you)\b"
    r"|\b(?:i've|i have)\s+(?:now\s+)?(?:gone ahead|made (?:those|the|some) changes|updated"
    r"|reviewed|implemented)\b", re.I)
_PROGRESS = re.compile(
    r"^(?:(?:today|so far|now|just),?\s+)?(?:(?:i|we)\s+(?:'ve\s+|have\s+|just\s+)?)?"
    r"(?:updated|fixed|implemented|refactored|ran|added|created|finished|renamed|installed"
    r"|committed|pushed|merged|made (?:the|some|those|good) (?:changes|progress)|looked into"
    r"|worked on|wired up|cleaned up|completed|bumped|step \d+ of \d+)\b|^(?:progress|done):",
    re.I)
_TODO_LINE = re.compile(r"^(?:[-*]\s*\[[ x]\]|todo\b|fixme\b|\d+[.)]\s+\w+)")
_TODO = re.compile(
    r"\b(?:next steps?|remaining work|action items|to-?do list|plan for (?:the )?next"
    r"|still to do|pending:|need to remember|remember to \w+ (?:\w+ )?later"
    r"|i'll pick up|pick (?:it|this) up (?:tomorrow|later)|next up is)\b|^todo\b", re.I)
_DIFF_PROSE = re.compile(r"\bchanged line \d+|\bfrom [^,;]{1,80} to [^,;]{1,80} and line \d+"
                         r"|\breplaced `[^`]{1,120}` with `[^`]{1,120}`|\bpatch i applied\b",
                         re.I)
_ERROR_PROSE = re.compile(r"\b(?:got this error|failed with this error|the error that "
                          r"happened|the full traceback)\b", re.I)
_OUTPUT_PROSE = re.compile(r"\b(?:output was|printed '|output:)", re.I)
_VAGUE = re.compile(
    r"\b(?:stuff|things?|some (?:issues|changes|things|preferences|configuration)|a few"
    r"|the (?:fix|problem|code|project|feature|system|implementation)"
    r"(?= (?:is|was|has|have|works?|worked|today|now)\b|[.,;!]|$)|improved|better"
    r"|a project|working on|edge cases|good to know|in order"
    r"|good progress|best practices?|clean code|a lot|remember this|mostly|many moving parts"
    r"|coming along)\b", re.I)
_SPECIFIC = re.compile(r"`[^`\n]{1,80}`|\b\w*\d\w*(?:[.:/]\w+)*|[~.]?/?\w+(?:[_./:@#]\w+)+/?"
                       r"|(?<![\w/])/\w+"
                       r"|\b[A-Z][a-z]+[A-Z]\w*|\b[A-Z]{2,}\w*|--\w[\w-]*")
_WORD = re.compile(r"[A-Za-z][\w'-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)\s*[\"'(]?$")


def judge(text: str, neighbours: Sequence[Neighbour] = ()) -> Verdict:
    """Whether `text` (as it is to be stored) is worth keeping. `neighbours`: the existing
    memories most like it, for restatements; none is needed for the other shapes."""
    text = text[:MAX_TEXT]
    words = _WORD.findall(text[:4000])
    if len(words) < MIN_WORDS:
        return KEEP
    kind = _shape(text, words)
    if kind != "keep":
        return Verdict(kind, REASONS[kind])
    twin = restated(text, neighbours)
    if twin is not None:
        return Verdict("restatement", f"this says again what memory {twin} says",
                       restates=twin)
    return KEEP


def _shape(text: str, words: list[str]) -> Kind:
    lines = [line for line in text.splitlines() if line.strip()]
    counts = dict.fromkeys(_LINE_KINDS, 0)
    prose: list[str] = []
    for line in lines:
        kind = _line_kind(line)
        counts[kind] += 1
        if kind == "prose":
            prose.append(line)
    # A one-line text's lesson may follow its error or frame on the same line.
    prose_text = "\n".join(prose) if len(lines) > 1 else text
    lesson = bool(_LESSON.search(prose_text))
    if len(lines) >= 2 and not lesson:
        structural = _structure(counts, len(lines))
        if structural is not None:
            return structural
    if len(_DIAGNOSTIC.findall(text[:4000])) >= 2:
        return "tool_output"  # a linter's or compiler's findings, pasted
    if lesson:
        return "keep"
    kind = _prose_shape(text, words)
    if kind not in _DESPITE_WEAK_LESSON and _WEAK_LESSON.search(prose_text):
        return "keep"
    return kind


def _structure(counts: dict[str, int], total: int) -> Kind | None:
    """The junk kind of a multi-line text by what its lines are, when they are mostly
    not prose."""
    if counts["diff"] >= 2:
        return "diff_dump"
    if counts["frame"] >= 1 and counts["frame"] + counts["error"] >= 2:
        return "stack_trace"
    if counts["todo"] >= 2:
        return "todo_echo"
    if counts["tool"] >= 2 or (counts["tool"] and counts["tool"] + counts["path"] >= 2):
        return "tool_output"
    if counts["path"] >= 3 and counts["path"] * 2 >= total:
        return "file_listing"
    if counts["error"] >= 2:
        return "stack_trace"
    return None


def _prose_shape(text: str, words: list[str]) -> Kind:
    """The junk kind of a text without a lesson, by its wording."""
    head = text[:4000]
    first = head.lstrip()
    paths = len(_INLINE_PATH.findall(head))
    if paths >= 4 or (paths >= 3 and _LISTING_WORDS.search(head)) or (
            paths >= 2 and paths * 3 >= len(words)):
        return "file_listing"
    if _ERROR.match(first) or _FRAME.match(first) or _ERROR_PROSE.search(head):
        return "stack_trace"
    if _DIFF_PROSE.search(head):
        return "diff_dump"
    if _OUTPUT_PROSE.search(head) or _TOOL.match(first):
        return "tool_output"
    if _TODO.search(head) or _TODO_LINE.match(first.lower()):
        return "todo_echo"
    if _CHATTER.search(head):
        return "chatter"
    if _PROGRESS.match(first):
        return "progress_note"
    vague = len(_VAGUE.findall(head))
    if vague and len(words) >= MIN_VAGUE_WORDS and len(specifics(head)) <= (vague >= 2):
        return "vague"
    return "keep"


def specifics(text: str) -> set[str]:
    """The tokens of `text` that name something: numbers, code, paths, identifiers, acronyms
    and capitalised names that do not begin a sentence; lowercased, punctuation trimmed."""
    found: set[str] = set()
    for m in _SPECIFIC.finditer(text):
        token = m.group().strip("`.,:;*~#-'\"()").lower()
        if token:
            found.add(token)
        if len(found) >= MAX_TOKENS:
            return found
    for m in re.finditer(r"\b[A-Z][a-z]{2,}\b", text):
        if not _SENTENCE_START.search(text[max(0, m.start() - 3):m.start()]):
            found.add(m.group().lower())
        if len(found) >= MAX_TOKENS:
            break
    return found


def restated(text: str, neighbours: Iterable[Neighbour]) -> int | None:
    """The id of an existing memory that `text` only says again: close to it in meaning,
    no longer, naming nothing (no value, no name, no code) that it does not name, and no
    value in place of one of its values."""
    mine = specifics(text[:MAX_COMPARED])
    for n in sorted(neighbours, key=lambda n: -n.similarity):
        if n.similarity < RESTATE_FLOOR:
            break
        if len(" ".join(text.split())) > len(" ".join(n.content.split())):
            continue  # a fuller wording: ingest's merge may keep it in place of the other
        head = n.content[:MAX_COMPARED]
        theirs = specifics(head) | {w.lower() for w in _WORD.findall(head)}
        starts = _starts(theirs)
        if not all(_known(token, theirs, starts) for token in mine):
            continue
        if disagree(text[:MAX_COMPARED], head):
            continue  # another value, name or a denial: a fact of its own (values.py)
        return n.id
    return None


def _starts(tokens: set[str]) -> set[str]:
    """The starts of STEM characters or more of each token."""
    return {t[:end] for t in tokens for end in range(STEM, min(len(t), STEM_MAX) + 1)}


def _known(token: str, theirs: set[str], starts: set[str]) -> bool:
    """Whether the other text names `token`: as it is, or in a longer or shorter form
    (Postgres / PostgreSQL), for tokens of STEM characters or more."""
    if token in theirs:
        return True
    if len(token) < STEM:
        return False
    return token in starts or any(token[:end] in theirs
                                  for end in range(STEM, min(len(token), STEM_MAX)))
