"""Memories anchored to code (issue 21): citations found in text, anchors captured from real
files, and checked against real git repositories after edits, moves, renames and deletions.
The workspace is hostile (DESIGN.md 9): links, FIFOs, huge and binary files, and a
repository whose config tries to run programs."""
import hashlib
import os
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memnest_daemon.code.anchors import (
    AnchorError,
    FileCache,
    Mention,
    anchors_from_content,
    capture,
    check,
    find_mentions,
)
from memnest_daemon.code import git_cli, mentions
from memnest_daemon.code.git import Repo
from memnest_daemon.code.symbols import find_definitions
from memnest_daemon.core.anchors import MAX_ANCHOR_TEXT, MAX_ANCHORS, Anchor, CodeContext
from work import counted, package_modules

GIT_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}

HTTP = '''"""The HTTP client."""
import time


def send(data, retries=3):
    """Send data, retrying."""
    for attempt in range(retries):
        if post(data):
            return True
        time.sleep(attempt)
    return False


def post(data):
    return bool(data)
'''

APP = """import { get } from "./net";

export async function load(url) {
  const body = await get(url);
  return body.trim();
}

export const handler = async (req) => {
  return load(req.url);
};

class Client {
  send(data) {
    return get(data);
  }
}
"""


def git(cwd, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True,
                          capture_output=True, text=True, timeout=30).stdout


def write(path: Path, text: str, old: bool = False) -> None:
    """Write a file; `old` dates it an hour back (a file not being edited right now, so its
    mtime is trusted: see files.RACY_NS)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if old:
        past = time.time() - 3600
        os.utime(path, (past, past))


def commit_all(cwd, message: str = "change") -> str:
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message)
    return git(cwd, "rev-parse", "HEAD").strip()


@pytest.fixture
def ws(tmp_path) -> Path:
    """A git repository (branch main) holding client/http.py and src/app.ts, committed."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root / "client" / "http.py", HTTP, old=True)
    write(root / "src" / "app.ts", APP, old=True)
    commit_all(root, "first")
    return root


def state(root: Path) -> tuple:
    """Everything in the tree (.git included): names, kinds, contents, mtimes; and what
    git itself says (read without writing the index)."""
    seen = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(folder, name)
            st = os.lstat(path)
            digest = ""
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            seen.append((os.path.relpath(path, root), st.st_mode, st.st_mtime_ns, digest))
    status = subprocess.run(["git", "-c", "core.fsmonitor=false", "status", "--porcelain"],
                            cwd=root, env={**GIT_ENV, "GIT_OPTIONAL_LOCKS": "0"},
                            capture_output=True, text=True).stdout
    return tuple(seen), status


def checked(root: Path, anchor: Anchor, cache: FileCache | None = None):
    """check(), asserting that it changed nothing in the workspace or its repository."""
    before = state(root)
    result = check(str(root), anchor, Repo.of(str(root)), cache or FileCache())
    assert state(root) == before
    return result


# -- find_mentions ----------------------------------------------------------------------------

def test_mentions_in_prose():
    text = ("The ranking lives in daemon/search.py; see `src/app.ts:120` and src/app.ts:120-140."
            " `send()` in `client/http.py` retries, and the `post` function in client/http.py"
            " does not. Config: [docs](docs/CONFIG.md#L3-L9), \"a/b.c\", ./tools/run.sh.")
    assert find_mentions(text) == [
        Mention("daemon/search.py"),
        Mention("src/app.ts", 120, 120),
        Mention("src/app.ts", 120, 140),
        Mention("client/http.py", symbol="send"),
        Mention("client/http.py", symbol="post"),
        Mention("docs/CONFIG.md", 3, 9),
        Mention("a/b.c"),
        Mention("tools/run.sh"),
    ]


def test_mentions_keep_only_paths():
    text = ("https://x/y.py http://example.com/a/b.ts /etc/passwd ../../etc/passwd a/../b.py "
            "~/x.py e.g. v1.2 1/2.5 Makefile a/b docs/ .env C:\\x\\y.py a//b.py file:///c/d.py "
            "bug in src/x.py")
    assert find_mentions(text) == [Mention("src/x.py")]
    # a bare name needs a source-ish extension; with a folder, any extension
    assert find_mentions("search.py notes.xyz dir/notes.xyz") == [
        Mention("search.py"), Mention("dir/notes.xyz")]
    # a receiver is not part of the symbol; a file cited precisely is not cited whole too
    assert find_mentions("self.send() in client/http.py, see client/http.py") == [
        Mention("client/http.py", symbol="send")]


def test_mentions_are_bounded_and_deduplicated():
    many = " ".join(f"pkg/m{i}.py pkg/m{i}.py" for i in range(50))
    found = find_mentions(many)
    assert found == [Mention(f"pkg/m{i}.py") for i in range(MAX_ANCHORS)]
    for hostile in ("/" * 20_000, "a." * 10_000, "`a`" * 6_666, "a/" * 10_000 + "b.py",
                    ("x" * 99 + "() in ") * 190, "../" * 6_666, "https://" * 2_500):
        assert len(find_mentions(hostile)) <= MAX_ANCHORS  # their work: the test below
    assert find_mentions("") == [] and find_mentions(None) == []  # type: ignore[arg-type]


def test_mentions_with_the_path_first():
    """`path symbol()` as well as `symbol() in path` (issue 37), backticks or not."""
    send = Mention("client/http.py", symbol="send")
    for text in ("Retries live in client/http.py send(): three attempts",
                 "client/http.py `send()` retries", "`client/http.py` `send()` retries",
                 "`client/http.py` `send` retries", "in client/http.py: `send()` sleeps",
                 "`send()` in `client/http.py` retries 3 times",
                 "send() in client/http.py retries", "client/http.py self.send() retries"):
        assert find_mentions(text) == [send], text
    assert find_mentions("client/http.py `Client.send()`") == [
        Mention("client/http.py", symbol="Client.send")]
    # not a citation of a symbol: an unmarked word, a sentence's end, a line citation
    for text, found in (("client/http.py send data", [Mention("client/http.py")]),
                        ("see client/http.py. send() is elsewhere", [Mention("client/http.py")]),
                        ("client/http.py, send() retries", [Mention("client/http.py")]),
                        ("src/app.ts:12 `load()`", [Mention("src/app.ts", 12, 12)])):
        assert find_mentions(text) == found, text
    # a name already cited with its own path is not taken by the path before it
    assert find_mentions("client/http.py `send()` in src/app.ts") == [
        Mention("client/http.py"), Mention("src/app.ts", symbol="send")]


def test_path_first_citations_anchor_the_symbol(ws):
    repo = Repo.of(str(ws))
    for text in ("Retries live in client/http.py send(): three", "`send()` in "
                 "`client/http.py` retries 3 times", "client/http.py `send()` retries"):
        assert [a.where for a in anchors_from_content(str(ws), text, repo)] == [
            "send() in client/http.py"], text
    # a name not defined in that file: the file is still cited, whole
    anchors = anchors_from_content(str(ws), "client/http.py `fetch()` retries", repo)
    assert [a.where for a in anchors] == ["client/http.py"]
    anchors = anchors_from_content(str(ws), "client/http.py:5-6 and client/http.py "
                                   "`fetch()`", repo)
    assert [a.where for a in anchors] == ["client/http.py:5-6"]


def test_mentions_of_hostile_text_stay_linear():
    """Long lines, runs of parentheses and backticks, odd unicode: the work grows with the
    text (four times the text, about four times the work), never with its square. Counted,
    not timed (tests/work.py): the lines of mentions.py run and the characters it hands to
    its regular expressions."""
    makers = [lambda n: "a/b.py " + "()" * n, lambda n: "a/b.py `" * (n // 4),
              lambda n: ("x.py " + "y" * 99 + "() ") * (n // 105), lambda n: "a" * n,
              lambda n: ("a/b.py " + "(" * 50 + "`") * (n // 60),
              lambda n: "a/b.py  \u200f\u0301" + "é\u0301`" * (n // 3),
              lambda n: ("a/b.py::" + "x." * 40 + "() ") * (n // 90),
              lambda n: "a/b.py " + "`send" * (n // 5), lambda n: "\x00(" * (n // 2),
              # the shapes of test_mentions_are_bounded_and_deduplicated
              lambda n: "/" * n, lambda n: "a." * (n // 2), lambda n: "`a`" * (n // 3),
              lambda n: "a/" * (n // 2) + "b.py", lambda n: ("x" * 99 + "() in ") * (n // 105),
              lambda n: "../" * (n // 3), lambda n: "https://" * (n // 8)]
    for make in makers:
        small, big = make(5_000), make(20_000)
        assert len(find_mentions(big)) <= MAX_ANCHORS
        few = counted(find_mentions, small, modules=(mentions,))
        many = counted(find_mentions, big, modules=(mentions,))
        assert few.total > 0
        # linear: x4 (n log n: ~x4.6); quadratic would be x16
        assert many.total < 5 * few.total, (make(30), few.total, many.total, many.calls)


_PIECES = st.sampled_from(["/", "..", ".", "py", "a", "`", "()", " in ", ":", "-", "12", " ",
                           "\n", "://", "~", "#L", "def ", "class ", "{", "}", "(", ")", "'",
                           '"', "\\", "é", "\x00", "    ", "=>", "send", "function "])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=60).map("".join))
def test_mentions_and_definitions_never_fail(text):
    for mention in find_mentions(text):
        assert not mention.path.startswith(("/", "~")) and "://" not in mention.path
        assert ".." not in mention.path.split("/") and "\x00" not in mention.path
    lines = tuple(line.rstrip() for line in text.split("\n"))
    for path in ("a.py", "a.ts", "a.go", "a.rs", "a.java", "a.unknown"):
        for first, last in find_definitions(lines, "send", path):
            assert 0 <= first <= last < len(lines)


# -- capture ----------------------------------------------------------------------------------

def test_capture_what_it_saw(ws):
    repo = Repo.of(str(ws))
    head = git(ws, "rev-parse", "HEAD").strip()
    lines = capture(str(ws), "client/http.py", 5, 6, repo=repo)
    assert (lines.start, lines.end, lines.commit) == (5, 6, head)
    assert lines.text == 'def send(data, retries=3):\n    """Send data, retrying."""'
    data = (ws / "client" / "http.py").read_bytes()
    assert lines.file_hash == hashlib.sha256(data).hexdigest() and lines.size == len(data)
    assert lines.mtime_ns == (ws / "client" / "http.py").stat().st_mtime_ns
    symbol = capture(str(ws), "client/http.py", 1, 2, symbol="send()", repo=repo)
    assert (symbol.symbol, symbol.start, symbol.end) == ("send", 5, 11)  # the symbol wins
    assert symbol.where == "send() in client/http.py"
    whole = capture(str(ws), "./client//http.py", auto=True)
    assert (whole.path, whole.start, whole.commit, whole.auto) == \
        ("client/http.py", 0, "", True)
    assert len(whole.lines_hash) == 64 and whole.outline.split(" ")[0].startswith("send:")
    # JS/TS definitions: a function, an arrow function, a method
    load = capture(str(ws), "src/app.ts", symbol="load")
    assert (load.start, load.end) == (3, 6)
    assert (capture(str(ws), "src/app.ts", symbol="handler").start,
            capture(str(ws), "src/app.ts", symbol="handler").end) == (8, 10)
    method = capture(str(ws), "src/app.ts", symbol="Client.send")
    assert (method.start, method.end) == (13, 15)
    # it survives the storage round trip
    context = CodeContext((lines, symbol, whole), "main", head)
    assert CodeContext.parse(context.to_json()) == context


def test_capture_refuses_with_reasons(ws):
    w = str(ws)
    cases = {
        ("src/x.py", 0, 0, ""): "src/x.py does not exist in the workspace",
        ("client/http.py", 500, 0, ""): "line 500 is past the end of client/http.py (15 lines)",
        ("client/http.py", 0, 0, "fetch"): "no function or class named `fetch` in "
                                           "client/http.py",
        ("/etc/passwd", 0, 0, ""): "outside the workspace",
        ("../ws/client/http.py", 0, 0, ""): "outside the workspace",
        ("client", 0, 0, ""): "is a folder",
        ("client/http.py", 9, 3, ""): "backwards",
        ("client/http.py", 0, 0, "a b"): "not a function or class name",
        ("client/http.py/x", 0, 0, ""): "does not exist",
    }
    for (path, start, end, symbol), message in cases.items():
        with pytest.raises(AnchorError, match=message.replace("(", r"\(").replace(")", r"\)")):
            capture(w, path, start, end, symbol)


def test_anchors_from_content_skips_what_is_not_here(ws):
    content = ("`send()` in client/http.py sleeps between retries (client/http.py:5-6); "
               "src/app.ts exports load; docs/missing.md and e.g. numpy.py are not here.")
    anchors = anchors_from_content(str(ws), content, Repo.of(str(ws)))
    assert [a.where for a in anchors] == ["send() in client/http.py", "client/http.py:5-6",
                                          "src/app.ts"]
    assert all(a.auto and a.commit for a in anchors)


# -- check --------------------------------------------------------------------------------------

def test_unchanged_is_fresh_without_reading(ws):
    path = ws / "client" / "http.py"
    anchors = [capture(str(ws), "client/http.py", n, n + 1) for n in range(1, 11)]
    cache = FileCache()
    assert {checked(ws, a, cache).state for a in anchors} == {"fresh"}
    assert (cache.stats, cache.reads) == (1, 0)   # ten memories citing one file: one stat
    # Honest proof that nothing was read: other bytes of the same size under the same mtime
    # still pass as fresh (the stat is all that was looked at) ...
    st = path.stat()
    path.write_text(HTTP.replace("retries=3", "retries=4"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert checked(ws, anchors[4]).state == "fresh"
    # ... and once the mtime says the file changed, it is read and the change is seen
    os.utime(path, None)
    cache = FileCache()
    results = [checked(ws, a, cache) for a in anchors]
    assert results[4].state == "changed" and results[0].state == "fresh"
    assert (cache.stats, cache.reads) == (1, 1)   # read once for all ten


def test_edits_moves_and_deletions(ws):
    """The main scenario: each kind of change gives its state; checking writes nothing."""
    w, repo = str(ws), Repo.of(str(ws))
    path = ws / "client" / "http.py"
    lines = capture(w, "client/http.py", 5, 6, repo=repo)     # def send + docstring
    retry = capture(w, "client/http.py", 7, 7, repo=repo)     # the for loop
    symbol = capture(w, "client/http.py", symbol="send", repo=repo)
    other = capture(w, "client/http.py", symbol="post", repo=repo)
    whole = capture(w, "client/http.py", repo=repo)

    # lines inserted above: the cited lines moved down, the symbol moved (fresh, with now)
    write(path, HTTP.replace("import time\n", "import time\nimport os\nimport sys\n"))
    before = state(ws)
    results = {name: checked(ws, a) for name, a in
               [("lines", lines), ("symbol", symbol), ("whole", whole)]}
    assert state(ws) == before
    assert results["lines"].state == "moved"
    assert (results["lines"].now.start, results["lines"].now.end) == (7, 8)
    assert results["lines"].view()["now_at"] == "client/http.py:7-8"
    assert results["symbol"].state == "fresh" and results["symbol"].now.start == 7
    assert results["whole"].state == "changed"   # two imports more: the file's code changed
    assert "code outside its functions and classes" in results["whole"].detail

    # the cited line edited: changed, with a short diff summary
    write(path, HTTP.replace("for attempt in range(retries):",
                             "for attempt in range(retries * 2):"))
    result = checked(ws, retry)
    assert result.state == "changed"
    assert result.diff == ("-1 +1 lines: `for attempt in range(retries):` → "
                           "`for attempt in range(retries * 2):`")
    assert result.detail.startswith("the cited lines of client/http.py changed since commit "
                                    f"{retry.commit[:7]}: verify")
    symbol_now = checked(ws, symbol)
    assert symbol_now.state == "changed" and "range(retries * 2)" in symbol_now.diff
    assert checked(ws, other).state == "fresh"      # an edit elsewhere in the file
    result = checked(ws, whole)                     # the whole file: changed, and where
    assert result.state == "changed" and "changed: `send`" in result.detail, result

    # a symbol removed: deleted; the file removed: every anchor deleted
    write(path, HTTP[:HTTP.index("def post")])
    result = checked(ws, other)
    assert (result.state, result.detail) == ("deleted",
                                             "`post` is no longer defined in client/http.py")
    path.unlink()
    before = state(ws)
    for anchor in (lines, symbol, whole):
        result = checked(ws, anchor)
        assert result.state == "deleted" and "no longer exists" in result.detail
    assert state(ws) == before


def test_whole_file_follows_its_code_not_its_comments(ws):
    """A file cited whole (issue 37): fresh through comment, blank-line and trailing
    whitespace edits; changed, naming the definitions and the first changed line, once its
    code changes (committed or not); deleted when it goes."""
    w, repo = str(ws), Repo.of(str(ws))
    path = ws / "client" / "http.py"
    whole = capture(w, "client/http.py", repo=repo)
    app = capture(w, "src/app.ts", repo=repo)
    cache = FileCache()
    assert checked(ws, whole, cache).state == "fresh"
    assert (cache.stats, cache.reads) == (1, 0)       # unchanged: a stat, nothing read
    write(path, HTTP.replace("import time\n", "import time  # for sleep\n\n# retries\n")
          .replace("return False", "return False   "))
    write(ws / "src" / "app.ts", "/* the app\n * entry */\n" +
          APP.replace("  const body", "    // fetch it\n      const body"))
    cache = FileCache()
    for anchor in (whole, app):
        result = checked(ws, anchor, cache)
        assert result.state == "fresh" and result.now.file_hash != anchor.file_hash, result
        assert result.now.lines_hash == anchor.lines_hash
    assert cache.reads == 2

    write(path, HTTP.replace("retries=3", "retries=5") + "\n\ndef close():\n    pass\n")
    head = commit_all(ws, "five retries")
    result = checked(ws, whole)
    assert result.state == "changed" and result.now is None
    assert result.detail == (f"the code of client/http.py changed since commit "
                             f"{whole.commit[:7]} (changed: `send`; added: `close`; first "
                             "change at line 5): verify before relying on this memory")
    assert result.diff.startswith("-1 +3 lines: `def send(data, retries=3):` → "
                                  "`def send(data, retries=5):`"), result.diff
    assert result.view()["state"] == "changed"
    write(ws / "src" / "app.ts", APP.replace("body.trim()", "body"))
    result = checked(ws, app)
    assert result.state == "changed" and "changed: `load`" in result.detail, result
    assert result.diff == "-1 +1 lines: `return body.trim();` → `return body;`"
    # outside git (or no old copy there), the outline still names what changed
    result = check(w, whole, None, FileCache())
    assert result.state == "changed" and result.diff == ""
    assert "(changed: `send`; added: `close`)" in result.detail
    # renamed and edited: changed, re-anchored at the new name for a later refresh
    moved = capture(w, "client/http.py", repo=Repo.of(w))
    git(ws, "mv", "client/http.py", "client/net.py")
    write(ws / "client" / "net.py", (ws / "client" / "net.py").read_text().replace(
        "def post(data):", "def post(data, timeout):"))
    result = checked(ws, moved)
    assert result.state == "changed" and result.now.path == "client/net.py"
    assert result.detail.startswith("client/http.py was renamed to client/net.py and the "
                                    f"code of client/net.py changed since commit {head[:7]} "
                                    "(changed: `post`")
    (ws / "client" / "net.py").unlink()
    git(ws, "rm", "-q", "--cached", "client/net.py")
    result = checked(ws, moved)
    assert result.state == "deleted" and "no longer exists" in result.detail


def test_whole_file_anchors_of_an_older_memnest(ws):
    """Anchors stored before files had a fingerprint (no lines_hash, no outline): read as
    before while the bytes are the same; when they differ, git's copy at the anchor's
    commit tells a comment edit from a code change; without it, changed (say why)."""
    w = str(ws)
    new = capture(w, "client/http.py", repo=Repo.of(w))
    stored = CodeContext((new,)).to_json().replace(f',"lines_hash":"{new.lines_hash}"', "")
    stored = stored.replace(f',"outline":"{new.outline}"', "")
    old = CodeContext.parse(stored).anchors[0]
    assert (old.lines_hash, old.outline, old.file_hash) == ("", "", new.file_hash)
    path = ws / "client" / "http.py"
    assert checked(ws, old).state == "fresh"
    write(path, "# a header comment\n" + HTTP)
    result = checked(ws, old)
    assert result.state == "fresh" and result.now.lines_hash == new.lines_hash
    assert result.now.outline == new.outline                   # upgraded where it is
    write(path, HTTP.replace("time.sleep(attempt)", "time.sleep(2 ** attempt)"))
    result = checked(ws, old)
    assert result.state == "changed" and "changed: `send`" in result.detail, result
    assert "time.sleep(2 ** attempt)" in result.diff
    result = check(w, old, None, FileCache())                  # no git: cannot tell
    assert result.state == "changed" and "older memnest" in result.detail
    assert CodeContext.parse(CodeContext((result.anchor,)).to_json()).anchors == (old,)


def test_code_lines_leave_out_comments_and_layout():
    from memnest_daemon.code.fingerprint import code_lines, definitions_of, outline
    python = ["import os  # why", "", "# note", "x = '#not a comment'  # but this is",
              "url = 'http://x'", "    indented = 1   "]
    assert code_lines(python, "a.py") == [(0, "import os"), (3, "x = '#not a comment'"),
                                         (4, "url = 'http://x'"), (5, "    indented = 1")]
    script = ["/* a", " * block */", "const a = 1; // one", "  let b = '//' + a;",
              "/** doc */ const c = 2;", "x = y - -1"]
    assert [t for _, t in code_lines(script, "a.ts")] == [
        "const a = 1;", "let b = '//' + a;", "const c = 2;", "x = y - -1"]
    assert [t for _, t in code_lines(["# Title", "", "text  "], "README.md")] == [
        "# Title", "text"]                                      # no comments in Markdown
    assert [t for _, t in code_lines(["echo $# ${#a} # c"], "run.sh")] == ["echo $# ${#a}"]
    # a file with very many definitions: the outline stays small, and says it was cut
    many = [f"def f{n}():\n    return {n}" for n in range(3000)]
    lines = "\n".join(many).split("\n")
    defined = definitions_of(lines, "m.py")
    text = outline(defined)
    assert len(defined) == 400 and len(text) <= 960 and text.endswith("…")
    source = ["class C:", "    def send(self):", "        def inner():", "            pass",
              "", "    async def other(self):", "        pass", "def free():", "    pass"]
    assert list(definitions_of(source, "h.py")) == ["C", "C.send", "C.other", "free"]


def test_changed_lines_summary_counts(ws):
    path = ws / "client" / "http.py"
    body = capture(str(ws), "client/http.py", 7, 10)
    write(path, HTTP.replace("        if post(data):\n            return True\n",
                             "        if post(data, timeout=5):\n            log(attempt)\n"
                             "            return True\n"))
    result = checked(ws, body)
    assert result.state == "changed"
    assert result.diff == "-1 +2 lines: `if post(data):` → `if post(data, timeout=5):`"
    assert len(result.diff) <= 200


def test_symbol_body_moved_and_edited_in_typescript(ws):
    path = ws / "src" / "app.ts"
    method = capture(str(ws), "src/app.ts", symbol="Client.send")
    arrow = capture(str(ws), "src/app.ts", symbol="handler")
    write(path, APP.replace("class Client {", "// a client\n\nclass Client {"))
    result = checked(ws, method)
    assert result.state == "fresh" and (result.now.start, result.now.end) == (15, 17)
    write(path, APP.replace("return load(req.url);", "return load(req.href);"))
    result = checked(ws, arrow)
    assert result.state == "changed"
    assert result.diff == "-1 +1 lines: `return load(req.url);` → `return load(req.href);`"


def test_committed_rename_is_moved(ws):
    anchor = capture(str(ws), "client/http.py", 5, 6, repo=Repo.of(str(ws)))
    symbol = capture(str(ws), "client/http.py", symbol="post", repo=Repo.of(str(ws)))
    whole = capture(str(ws), "src/app.ts", repo=Repo.of(str(ws)))
    git(ws, "mv", "client/http.py", "client/transport.py")
    git(ws, "mv", "src/app.ts", "src/main.ts")
    commit_all(ws, "rename")
    result = checked(ws, anchor)
    assert result.state == "moved" and result.now.path == "client/transport.py"
    assert (result.now.start, result.now.end) == (5, 6)
    assert "renamed to client/transport.py" in result.detail
    assert result.now.commit == git(ws, "rev-parse", "HEAD").strip()
    assert checked(ws, symbol).now.where == "post() in client/transport.py"
    assert checked(ws, whole).state == "moved"
    # renamed and then edited: changed, and the detail says renamed too
    write(ws / "client" / "transport.py", HTTP.replace("def post(data):", "def post(data, x):"))
    result = checked(ws, symbol)
    assert result.state == "changed" and result.now.path == "client/transport.py"
    assert result.detail.startswith("client/http.py was renamed to client/transport.py and ")


def test_staged_rename_is_moved(ws):
    anchor = capture(str(ws), "client/http.py", 5, 6, repo=Repo.of(str(ws)))
    git(ws, "mv", "client/http.py", "client/moved.py")
    before = state(ws)
    result = checked(ws, anchor)
    assert state(ws) == before
    assert result.state == "moved" and result.now.where == "client/moved.py:5-6"


def test_unstaged_move_is_deleted(ws):
    """A plain `mv` git does not know of yet (git would have to read the working tree)."""
    anchor = capture(str(ws), "client/http.py", 5, 6, repo=Repo.of(str(ws)))
    os.rename(ws / "client" / "http.py", ws / "client" / "elsewhere.py")
    assert checked(ws, anchor).state == "deleted"


def test_odd_names_and_branches(ws):
    """Spaces, unicode and leading dashes in paths and branch names break nothing."""
    odd = "-x dir ü/-rf naïve.py"
    write(ws / odd, HTTP)
    commit_all(ws)
    git(ws, "switch", "-q", "-c", "feature/ü-x")
    anchor = capture(str(ws), odd, symbol="send", repo=Repo.of(str(ws)))
    assert Repo.of(str(ws)).branch == "feature/ü-x"
    git(ws, "mv", "--", odd, "-x dir ü/--output=x.py")
    commit_all(ws)
    result = checked(ws, anchor)
    assert result.state == "moved" and result.now.path == "-x dir ü/--output=x.py"
    assert not (ws / "x.py").exists()


def test_repo_sees_branch_switch_and_commit_at_once(ws):
    first = Repo.of(str(ws))
    assert first is not None and first.branch == "main"
    assert first.root == str(ws.resolve()) and first.prefix == ""
    assert Repo.of(str(ws)) is first                     # cached
    git(ws, "switch", "-q", "-c", "feature")
    second = Repo.of(str(ws))
    assert second.branch == "feature" and second.head == first.head
    write(ws / "new.py", "x = 1\n")
    head = commit_all(ws)
    third = Repo.of(str(ws))
    assert third.head == head != first.head and third.branch == "feature"
    git(ws, "checkout", "-q", "--detach", first.head)
    assert (Repo.of(str(ws)).branch, Repo.of(str(ws)).head) == ("", first.head)
    assert Repo.of(str(ws.parent)) is None               # not a repository


def test_is_ancestor(ws):
    on_main = git(ws, "rev-parse", "HEAD").strip()
    git(ws, "switch", "-q", "-c", "side")
    write(ws / "side.py", "y = 2\n")
    on_side = commit_all(ws)
    git(ws, "switch", "-q", "main")
    repo = Repo.of(str(ws))
    assert repo.is_ancestor(on_main) is True
    assert repo.is_ancestor(on_side) is False
    assert repo.is_ancestor("0" * 40) is None
    assert repo.is_ancestor("--output=/tmp/x") is None   # not even passed to git


def test_workspace_in_a_subfolder(ws):
    sub = ws / "client"
    repo = Repo.of(str(sub))
    assert repo.prefix == "client/" and repo.root == str(ws.resolve())
    anchor = capture(str(sub), "http.py", 5, 6, repo=repo)
    git(ws, "mv", "client/http.py", "client/net.py")
    commit_all(ws)
    result = check(str(sub), anchor, Repo.of(str(sub)), FileCache())
    assert result.state == "moved" and result.now.path == "net.py"
    # moved out of the workspace: gone, as far as the workspace knows
    anchor = capture(str(sub), "net.py", repo=Repo.of(str(sub)))
    git(ws, "mv", "client/net.py", "net.py")
    commit_all(ws)
    assert check(str(sub), anchor, Repo.of(str(sub)), FileCache()).state == "deleted"


def test_worktree(ws, tmp_path):
    tree = tmp_path / "tree"
    git(ws, "worktree", "add", "-q", "-b", "wt", str(tree))
    repo = Repo.of(str(tree))
    assert repo is not None and repo.branch == "wt" and repo.root == str(tree.resolve())
    assert (tree / ".git").is_file()
    anchor = capture(str(tree), "client/http.py", symbol="send", repo=repo)
    git(tree, "mv", "client/http.py", "client/wt.py")
    head = commit_all(tree)
    assert Repo.of(str(tree)).head == head
    assert Repo.of(str(ws)).head != head                 # the main worktree did not move
    result = checked(tree, anchor)
    assert result.state == "moved" and result.now.path == "client/wt.py"


def test_outside_git(tmp_path):
    write(tmp_path / "a.py", HTTP, old=True)
    anchor = capture(str(tmp_path), "a.py", symbol="send", repo=Repo.of(str(tmp_path)))
    assert anchor.commit == ""
    (tmp_path / "a.py").unlink()
    result = check(str(tmp_path), anchor, None, FileCache())
    assert result.state == "deleted" and "since the memory was written" in result.detail


# -- a hostile workspace ------------------------------------------------------------------------

SECRET = "top-secret-outside-the-workspace"


@pytest.fixture
def outside(tmp_path) -> Path:
    path = tmp_path / "outside" / "secret.py"
    write(path, f"def send():\n    return '{SECRET}'\n")
    return path


def test_symlink_under_the_cited_name(ws, outside):
    link = ws / "client" / "link.py"
    link.symlink_to(outside)
    with pytest.raises(AnchorError, match="symbolic link"):
        capture(str(ws), "client/link.py", symbol="send")
    # a file anchored, then replaced by a link to the outside
    anchor = capture(str(ws), "client/http.py", symbol="send")
    (ws / "client" / "http.py").unlink()
    (ws / "client" / "http.py").symlink_to(outside)
    result = checked(ws, anchor)
    assert result.state == "deleted" and "symbolic link" in result.detail
    assert SECRET not in repr(result) and result.now is None


def test_symlinked_folder_on_the_way(ws, outside):
    (ws / "vendor").symlink_to(outside.parent)
    with pytest.raises(AnchorError, match="vendor is a symbolic link"):
        capture(str(ws), "vendor/secret.py", 1, 2)
    anchor = capture(str(ws), "src/app.ts", 3, 6)
    os.rename(ws / "src", ws / "src-real")
    (ws / "src").symlink_to(ws / "src-real")
    result = checked(ws, anchor)
    assert result.state == "deleted" and "src is a symbolic link" in result.detail
    assert anchors_from_content(str(ws), "see vendor/secret.py:1-2") == []


def test_fifo_does_not_block(ws):
    fifo = ws / "client" / "pipe.py"
    os.mkfifo(fifo)
    anchor = capture(str(ws), "client/http.py", 5, 6)
    outcome: dict = {}

    def attempt():
        try:
            capture(str(ws), "client/pipe.py")
        except AnchorError as exc:
            outcome["capture"] = str(exc)
        (ws / "client" / "http.py").unlink()
        os.mkfifo(ws / "client" / "http.py")
        outcome["check"] = checked(ws, anchor)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # release it before failing: open the other end
        for name in ("pipe.py", "http.py"):
            try:
                os.close(os.open(ws / "client" / name, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        pytest.fail("reading a FIFO blocked")
    assert "not a regular file" in outcome["capture"]
    assert outcome["check"].state == "deleted"


def test_device_is_never_opened(ws):
    try:
        os.mknod(ws / "zero.py", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero
    except (PermissionError, OSError):
        pytest.skip("cannot make a device node here")
    with pytest.raises(AnchorError, match="not a regular file"):
        capture(str(ws), "zero.py", 1, 1)


def test_a_hanging_git_is_killed(ws, tmp_path, monkeypatch):
    """git stuck (a slow filesystem, a lock): given up after the timeout, and what it
    started is killed with it."""
    pids = tmp_path / "pids"
    fake = tmp_path / "git"
    # An hour of sleep: only the timeout can end it while the test waits.
    fake.write_text(f"#!/bin/sh\nsleep 3600 &\necho $! >> {pids}\nwait\n")
    fake.chmod(0o755)
    monkeypatch.setattr(git_cli, "git_executable", lambda: str(fake))
    monkeypatch.setattr(git_cli, "TIMEOUT", 0.5)
    found = []
    lookup = threading.Thread(target=lambda: found.append(Repo.of(str(ws / "src"))),
                              daemon=True)
    lookup.start()
    lookup.join(timeout=120)  # a deadline for the answer, far from the hour it would take
    try:
        assert not lookup.is_alive(), "Repo.of waited on the hanging git"
        assert found == [None]
        started = pids.read_text().split()
        assert started
        deadline = time.monotonic() + 30
        while not all(_gone_or_zombie(int(pid)) for pid in started):
            assert time.monotonic() < deadline, "what the hanging git started lives on"
            time.sleep(0.05)
    finally:
        for pid in (pids.read_text().split() if pids.exists() else []):
            try:
                os.kill(int(pid), 9)
            except ProcessLookupError:
                pass


def _gone_or_zombie(pid: int) -> bool:
    """Killed: gone, or a zombie waiting for whoever inherited it to reap it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    return fields[0] in ("Z", "X")


def test_unborn_repository(tmp_path):
    git(tmp_path, "init", "-q", "-b", "first")
    write(tmp_path / "a.py", HTTP)
    repo = Repo.of(str(tmp_path))
    assert (repo.head, repo.branch) == ("", "first")
    anchor = capture(str(tmp_path), "a.py", symbol="post", repo=repo)
    assert anchor.commit == ""
    assert repo.renamed("a.py", "") is None and repo.is_ancestor("") is None
    head = commit_all(tmp_path)
    assert Repo.of(str(tmp_path)).head == head          # the first commit is seen at once


def test_big_and_binary_files(ws):
    write(ws / "big.py", "x = 1\n" * ((3 << 20) // 6 + 1))
    assert (ws / "big.py").stat().st_size > 3 << 20
    with pytest.raises(AnchorError, match="files over 2 MiB are not anchored"):
        capture(str(ws), "big.py", 1, 1)
    (ws / "blob.py").write_bytes(b"def send():\x00\x01\x02\n" * 10)
    with pytest.raises(AnchorError, match="binary"):
        capture(str(ws), "blob.py")
    # a cited file that grew past the cap: it can no longer be checked, so it is not fresh
    anchor = capture(str(ws), "client/http.py", 5, 6)
    write(ws / "client" / "http.py", HTTP + "#" * (3 << 20))
    result = checked(ws, anchor)
    assert result.state == "changed" and "can no longer be checked" in result.detail


def test_whole_file_fingerprint_of_hostile_files(ws):
    """Files near the size cap built to make the fingerprint rescan (unclosed brackets on
    every line, definitions on every line, quotes and comment marks everywhere, one huge
    line): each is captured and checked with work linear in its size, its outline still
    small."""
    hostile = {"a.ts": "const a = (\n" * 150_000, "b.py": "def f():\n" * 200_000,
               "c.py": "class C:\n" + "    def m(self):\n        pass\n" * 60_000,
               "d.js": "x" * ((2 << 20) - 100) + "\n", "e.py": 'x = "a#b" # c "d"\n' * 100_000,
               "f.sh": "'\\" * 900_000 + "\n"}
    def capture_and_check(name: str, text: str) -> Anchor:
        write(ws / name, text)
        anchor = capture(str(ws), name)
        write(ws / name, text + "y = 1\n")
        result = checked(ws, anchor)
        assert result.state == "changed" and len(anchor.outline) <= 960
        return anchor

    modules = package_modules("memnest_daemon.code")
    for name, text in hostile.items():
        capture_and_check(name, text)
        # Bounded: the work grows with the file, never with its square. Counted (lines of
        # memnest_daemon.code run, characters handed to its regular expressions) on an eighth
        # and a quarter of it, where tracing every line stays quick.
        eighth = counted(capture_and_check, name, text[:len(text) // 8], modules=modules)
        quarter = counted(capture_and_check, name, text[:len(text) // 4], modules=modules)
        assert quarter.total < 2.5 * eighth.total, (name, eighth.total, quarter.total)


def test_long_citations_keep_no_text_but_still_move(ws):
    long = "".join(f"value_{n} = {'x' * 40!r}\n" for n in range(60))
    write(ws / "long.py", long)
    anchor = capture(str(ws), "long.py", 1, 60)
    assert anchor.text == "" and len(long) > MAX_ANCHOR_TEXT
    write(ws / "long.py", "import os\n" + long)
    result = checked(ws, anchor)
    assert result.state == "moved" and (result.now.start, result.now.end) == (2, 61)
    write(ws / "long.py", long.replace("value_7", "value_seven"))
    result = checked(ws, anchor)
    assert result.state == "changed" and "too long to keep" in result.diff


def test_repository_config_cannot_run_programs(ws, tmp_path):
    """A cloned repository's config names programs for fsmonitor, textconv, an external
    diff, clean filters and the pager; Repo.of, renamed and is_ancestor run none of them."""
    marker = tmp_path / "ran"
    script = tmp_path / "hook.sh"
    # The test's own git commands (setting the scene) pass MARKER_OFF; memnest's do not.
    script.write_text(f'#!/bin/sh\n[ -n "$MARKER_OFF" ] && exit 0\necho "$0 $*" >> {marker}\n'
                      "exit 0\n")
    script.chmod(0o755)
    with open(ws / ".git" / "config", "a") as config:
        config.write(f"[core]\n\tfsmonitor = {script}\n\tpager = {script}\n"
                     f"[diff \"evil\"]\n\ttextconv = {script}\n\tcommand = {script}\n"
                     f"[filter \"evil\"]\n\tclean = {script}\n\tsmudge = {script}\n"
                     f"[diff]\n\texternal = {script}\n")
    write(ws / ".gitattributes", "* diff=evil filter=evil\n")
    quiet = {**GIT_ENV, "MARKER_OFF": "1"}

    repo = Repo.of(str(ws))          # first lookup of this workspace: under the evil config
    assert repo is not None and repo.branch == "main"
    anchor = capture(str(ws), "client/http.py", 5, 6, repo=repo)
    subprocess.run(["git", "mv", "client/http.py", "client/evil.py"], cwd=ws, env=quiet,
                   check=True, capture_output=True)             # a staged rename
    write(ws / "src" / "app.ts", APP + "// touched\n")         # a dirty file for any filter
    result = check(str(ws), anchor, Repo.of(str(ws)), FileCache())
    assert result.state == "moved" and result.now.path == "client/evil.py"
    assert repo.is_ancestor(anchor.commit) is True
    subprocess.run(["git", "commit", "-q", "-m", "x"], cwd=ws, env=quiet, check=True,
                   capture_output=True)
    repo = Repo.of(str(ws))
    assert repo.renamed("client/http.py", anchor.commit) == "client/evil.py"  # committed
    assert not marker.exists()
    # the trap is armed: git's ordinary commands do run it
    subprocess.run(["git", "status"], cwd=ws, env=GIT_ENV, capture_output=True, timeout=30)
    subprocess.run(["git", "diff", "HEAD~1"], cwd=ws, env=GIT_ENV, capture_output=True,
                   timeout=30)
    assert marker.exists()


def test_git_environment_does_not_leak(ws, tmp_path, monkeypatch):
    """GIT_DIR and friends in the daemon's environment do not redirect git."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "elsewhere")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "/bin/false")
    repo = Repo.of(str(ws / "client"))
    assert repo is not None and repo.branch == "main"
