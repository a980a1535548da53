"""operations/adopting.py in process: another tool's memory files taken in, and taken in
again as they change; hostile files left out with why, the rest still imported."""
import os
from pathlib import Path

import pytest

from memnest_daemon.code import files as code_files
from memnest_daemon.core.errors import ToolError
from memnest_daemon.operations.adopting import SourceAsk, adopt
from memnest_daemon.sources import files

CLAUDE_MD = """# Billing service

Notes for agents working in this repository.

## Build
- Build with `make build`; it needs Go 1.22
- Never push straight to main: open a pull request

## Conventions
See @docs/conventions.md for naming.
Personal notes: @~/notes/private.md
"""
CONVENTIONS = """# Conventions
- Packages are named for what they provide, not what they contain
- Errors are wrapped with %w so callers can match them
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home folder of the test's own: the person's ~/.claude is not read."""
    folder = tmp_path / "home"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / "private.md").write_text("- the door code is 4711\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _write(ctx, rel: str, text: str | bytes) -> Path:
    path = Path(ctx.workspace) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _memories(ctx, kind="claude-code"):
    with ctx.store.reading():
        return sorted((m for m in ctx.store.in_scope(ctx.workspace)
                       if m.origin_client == kind), key=lambda m: m.id)


def test_a_dry_run_reports_and_writes_nothing(ctx, home):
    _write(ctx, "CLAUDE.md", CLAUDE_MD)
    _write(ctx, "docs/conventions.md", CONVENTIONS)
    done = adopt(ctx, SourceAsk("claude-code", dry_run=True))
    assert done.count("store") == 6 and _memories(ctx) == []
    assert [f.shown for f in done.found.files] == ["CLAUDE.md", "docs/conventions.md"]
    skipped = done.found.skipped
    assert "outside the workspace" in skipped["@~/notes/private.md in CLAUDE.md"]


def test_each_piece_records_its_file_and_lines_and_is_anchored(ctx, home):
    _write(ctx, "CLAUDE.md", CLAUDE_MD)
    _write(ctx, "docs/conventions.md", CONVENTIONS)
    adopt(ctx, SourceAsk("claude-code"))
    got = {m.content: m for m in _memories(ctx)}
    never = got["Build: Never push straight to main: open a pull request"]
    assert never.origin_via == "import" and never.origin_session == "CLAUDE.md:7"
    assert never.category == "preference" and set(never.tags) >= {"claude-code", "build"}
    anchor = never.code.anchors[0]
    assert (anchor.path, anchor.start, anchor.end) == ("CLAUDE.md", 7, 7)
    wrapped = next(m for c, m in got.items() if "wrapped with %w" in c)
    assert wrapped.origin_session == "docs/conventions.md:3"
    assert "door code" not in " ".join(got)  # the outside @import was not followed


def test_importing_again_adds_nothing_and_an_edit_updates_one_memory(ctx, home):
    source = _write(ctx, "CLAUDE.md", CLAUDE_MD)
    adopt(ctx, SourceAsk("claude-code"))
    before = {m.id: m for m in _memories(ctx)}
    again = adopt(ctx, SourceAsk("claude-code"))
    assert again.count("unchanged") == len(before) and again.stored == []
    assert {m.id: m.updated_at for m in _memories(ctx)} == {
        i: m.updated_at for i, m in before.items()}

    source.write_text(CLAUDE_MD.replace("Go 1.22", "Go 1.23"))
    edited = adopt(ctx, SourceAsk("claude-code"))
    assert edited.count("update") == 1 and edited.count("store") == 0
    after = {m.id: m for m in _memories(ctx)}
    assert set(after) == set(before)
    changed = [i for i in after if after[i].content != before[i].content]
    assert len(changed) == 1 and "Go 1.23" in after[changed[0]].content

    source.write_text("<!-- moved down -->\n\n" + CLAUDE_MD.replace("Go 1.22", "Go 1.23"))
    moved = adopt(ctx, SourceAsk("claude-code"))
    assert moved.count("moved") == len(before) and moved.count("store") == 0
    assert next(m for m in _memories(ctx) if "Never push" in m.content
                ).origin_session == "CLAUDE.md:9"


def test_a_removed_section_is_reported_and_forgotten_only_with_prune(ctx, home):
    source = _write(ctx, "CLAUDE.md", CLAUDE_MD)
    adopt(ctx, SourceAsk("claude-code"))
    source.write_text(CLAUDE_MD.replace("- Never push straight to main: open a pull request\n",
                                        ""))
    kept = adopt(ctx, SourceAsk("claude-code"))
    assert [m.content for m in kept.removed] == [
        "Build: Never push straight to main: open a pull request"]
    assert any("Never push" in m.content for m in _memories(ctx))
    pruned = adopt(ctx, SourceAsk("claude-code", prune=True))
    assert pruned.pruned == [kept.removed[0].id]
    assert not any("Never push" in m.content for m in _memories(ctx))


def test_hostile_files_are_left_out_with_why_and_the_rest_come_in(ctx, home, monkeypatch):
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1 << 20)
    _write(ctx, "memory-bank/projectbrief.md", "# Brief\nThe product sends invoices to "
                                               "small businesses every month.\n")
    _write(ctx, "memory-bank/latin1.md", "caf\xe9 au lait is served at nine".encode("latin-1"))
    _write(ctx, "memory-bank/binary.md", b"\x00\x01\x02 not text")
    _write(ctx, "memory-bank/huge.md", b"- a line that repeats\n" * 60_000)
    os.symlink("/etc/passwd", Path(ctx.workspace) / "memory-bank" / "passwd.md")
    (Path(ctx.workspace) / "memory-bank" / "fifo.md").parent.mkdir(exist_ok=True)
    os.mkfifo(Path(ctx.workspace) / "memory-bank" / "fifo.md")
    done = adopt(ctx, SourceAsk("cline"))
    skipped = done.found.skipped
    assert "not UTF-8" in skipped["memory-bank/latin1.md"]
    assert "NUL" in skipped["memory-bank/binary.md"]
    assert "over the limit" in skipped["memory-bank/huge.md"]
    assert "symbolic link" in skipped["memory-bank/passwd.md"]
    assert [m.content for m in _memories(ctx, "cline")] == [
        "The product sends invoices to small businesses every month."]
    assert not any("root:" in m.content for m in _memories(ctx, "cline"))


def test_a_nul_byte_anywhere_leaves_the_file_out(ctx, home):
    """Not only in the first 8 KiB (where a binary file shows it): the text after a NUL
    would otherwise come in."""
    facts = b"".join(b"- Fact number %d of a long file, long enough to count\n" % n
                     for n in range(400))
    assert len(facts) > 16_384
    _write(ctx, "memory-bank/late.md", facts + b"- hidden \x00 behind a NUL byte\n")
    _write(ctx, "memory-bank/brief.md", "- The product sends invoices every month\n")
    done = adopt(ctx, SourceAsk("cline"))
    assert "NUL" in done.found.skipped["memory-bank/late.md"]
    assert [f.shown for f in done.found.files] == ["memory-bank/brief.md"]
    assert [m.content for m in _memories(ctx, "cline")] == [
        "The product sends invoices every month"]


def test_a_piece_that_cannot_be_anchored_comes_in_without_its_anchor(ctx, home):
    """Files up to sources' limit (4 MiB) are read, code anchors stop at 2 MiB; a name or
    a line break (form feed) the code's reader takes otherwise: the piece is kept, only
    not anchored, and the rest of the import goes on."""
    filler = "<!--\n" + "a line of a long comment, left out of the pieces\n" * 60_000 + "-->\n"
    big = _write(ctx, "memory-bank/big.md", "# Big\n- Invoices go out on the first Monday\n"
                 + filler + "- Refunds are approved by the finance team\n")
    assert code_files.MAX_FILE_BYTES < big.stat().st_size <= files.MAX_FILE_BYTES
    _write(ctx, "memory-bank/form feed.md", "- The first fact is on line one\x0c"
                                            "- The second fact is on line two\n")
    _write(ctx, "memory-bank/back\\slash.md", "- A planted name with a backslash in it\n")
    _write(ctx, "memory-bank/small.md", "# Small\n- The small file's fact keeps its anchor\n")
    done = adopt(ctx, SourceAsk("cline"))
    got = {m.content: m.code.anchors for m in _memories(ctx, "cline")}
    assert got == {
        "Invoices go out on the first Monday": (),  # the title is no prefix
        "Refunds are approved by the finance team": (),
        "The first fact is on line one": got["The first fact is on line one"],
        "The second fact is on line two": (),  # line 2 of 1, for the code's reader
        "A planted name with a backslash in it": (),
        "The small file's fact keeps its anchor": got["The small file's fact keeps its anchor"]}
    assert len(got["The first fact is on line one"]) == 1
    small = got["The small file's fact keeps its anchor"][0]
    assert (small.path, small.start, small.end) == ("memory-bank/small.md", 2, 2)
    assert done.count("store") == 6
    assert adopt(ctx, SourceAsk("cline")).count("unchanged") == 6


def test_a_linked_folder_is_not_entered(ctx, home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "steal.mdc").write_text("- the production password is hunter2 forever\n")
    (Path(ctx.workspace) / ".cursor").mkdir()
    os.symlink(elsewhere, Path(ctx.workspace) / ".cursor" / "rules")
    with pytest.raises(ToolError):  # nothing to import: said, not an empty success
        adopt(ctx, SourceAsk("cursor"))
    assert _memories(ctx, "cursor") == []


def test_secrets_and_private_text_do_not_come_in(ctx, home):
    _write(ctx, "AGENTS.md", "# Setup\n- Deploy key AKIAIOSFODNN7EXAMPLE is in the vault\n"
                             "- Staging is at staging.example.com <private>ask Ana</private>\n"
                             "- <private>all of this bullet is mine</private>\n")
    first = adopt(ctx, SourceAsk("agents-md"))
    text = " ".join(m.content for m in _memories(ctx, "agents-md"))
    assert "AKIAIOSFODNN7EXAMPLE" not in text and "ask Ana" not in text
    assert "staging.example.com" in text and "all of this" not in text
    (refused,) = [p for p in first.planned if p.action == "refused"]
    assert refused.unit.session == "AGENTS.md:4" and "private" in refused.note
    again = adopt(ctx, SourceAsk("agents-md"))  # redacted text is what it compares
    assert again.count("unchanged") == 2 and again.stored == []


def test_rule_files_keep_what_they_apply_to(ctx, home):
    _write(ctx, ".cursor/rules/python-style.mdc",
           "---\ndescription: How we write Python\nglobs: \"**/*.py\"\nalwaysApply: false\n"
           "---\n- Type every public function\n")
    _write(ctx, "services/api/.cursor/rules/api.mdc", "---\nalwaysApply: true\n---\n"
                                                      "- Every handler returns JSON errors\n")
    _write(ctx, "memory-bank/systemPatterns.md", "## Layers\n- The web layer never talks "
                                                 "to the database directly\n")
    adopt(ctx, SourceAsk("cursor"))
    adopt(ctx, SourceAsk("cline"))
    cursor = {m.content: m for m in _memories(ctx, "cursor")}
    typed = cursor["Type every public function (applies to **/*.py)"]
    assert typed.category == "preference" and "python-style" in typed.tags
    assert "Every handler returns JSON errors" in cursor
    (pattern,) = _memories(ctx, "cline")
    assert pattern.category == "pattern" and "system-patterns" in pattern.tags


def test_nested_agents_files_are_found_and_build_folders_skipped(ctx, home):
    _write(ctx, "AGENTS.md", "- Run `make check` before every commit\n")
    _write(ctx, "web/AGENTS.md", "- The web app uses pnpm, not npm\n")
    _write(ctx, "node_modules/pkg/AGENTS.md", "- a dependency's own instructions here\n")
    done = adopt(ctx, SourceAsk("agents-md"))
    assert [f.shown for f in done.found.files] == ["AGENTS.md", "web/AGENTS.md"]


def test_unknown_kinds_and_missing_files_are_clear_errors(ctx, home):
    with pytest.raises(ToolError, match="not a kind memnest imports"):
        adopt(ctx, SourceAsk("evernote"))
    with pytest.raises(ToolError, match="no kiro files found"):
        adopt(ctx, SourceAsk("kiro"))
    with pytest.raises(ToolError, match="needs a path"):
        adopt(ctx, SourceAsk("markdown"))


def test_claude_codes_auto_memory_and_your_own_claude_md_come_in(ctx, home, monkeypatch):
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    slug = "".join(c if c.isascii() and c.isalnum() else "-"
                   for c in os.path.realpath(ctx.workspace))
    memory = home / ".claude" / "projects" / slug / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(
        "- [Test DB must be real](feedback_real_db.md) — integration tests hit Postgres\n"
        "- The release freeze starts on the first Monday of March\n")
    (memory / "feedback_real_db.md").write_text(
        "---\nname: Test DB must be real\ndescription: no mocks\ntype: feedback\n---\n"
        "Integration tests run against a live Postgres container, not mocks.\n")
    (home / ".claude" / "CLAUDE.md").write_text("- I like answers short and direct\n")
    done = adopt(ctx, SourceAsk("claude-code"))
    assert sorted(f.shown for f in done.found.files) == [
        "~/.claude/CLAUDE.md", f"~/.claude/projects/{slug}/memory/MEMORY.md",
        f"~/.claude/projects/{slug}/memory/feedback_real_db.md"]
    got = {m.content: m for m in _memories(ctx)}
    real = got["Test DB must be real: Integration tests run against a live Postgres "
               "container, not mocks."]
    assert real.category == "preference" and real.code.anchors == ()  # outside: no anchor
    assert real.origin_session == f"~/.claude/projects/{slug}/memory/feedback_real_db.md:6"
    assert "The release freeze starts on the first Monday of March" in got
    assert not any("[Test DB must be real]" in c for c in got)  # the index line


MEMORY_JSONL = (
    '{"type":"entity","name":"Orders_API","entityType":"service","observations":'
    '["Written in Go 1.22","Deploys via Argo CD"]}\n'
    '{"type":"entity","name":"Ana_Lopez","entityType":"person","observations":'
    '["On call for the orders service in March"]}\n'
    '{"type":"relation","from":"Ana_Lopez","to":"Orders_API","relationType":"is_on_call_for"}\n')
MEM0 = """{"count": 2, "next": null, "previous": null, "results": [
  {"id": "3f2b8c1e-6d7a-4b0e-9a51-2c4e8f0d7b13", "memory": "Prefers window seats on long flights",
   "user_id": "ana", "metadata": {"source": "travel-bot"}, "categories": ["travel", "preferences"],
   "created_at": "2025-07-01T09:12:44.120381-07:00", "updated_at": null},
  {"id": "a9c04d55-1e3f-47b2-8c6d-0f9e2b7a4c81", "memory": "Allergic to peanuts",
   "user_id": "ana", "metadata": null, "categories": ["health"]}
]}
"""


def test_the_memory_servers_graph_becomes_memories_and_links(ctx, home):
    _write(ctx, "memory.jsonl", MEMORY_JSONL)
    done = adopt(ctx, SourceAsk("server-memory"))
    got = {m.content: m for m in _memories(ctx, "server-memory")}
    assert set(got) == {"Orders API: Written in Go 1.22", "Orders API: Deploys via Argo CD",
                        "Ana Lopez: On call for the orders service in March",
                        "Ana Lopez is on call for Orders API"}
    go = got["Orders API: Written in Go 1.22"]
    assert go.origin_session == "memory.jsonl:1" and {"service", "orders-api"} <= set(go.tags)
    with ctx.store.reading():
        edges = {(ctx.store.catalog[a].content, ctx.store.catalog[b].content)
                 for _, a, b in ctx.store.graph.edges}
    assert ("Ana Lopez: On call for the orders service in March",
            "Orders API: Written in Go 1.22") in edges
    assert ("Ana Lopez is on call for Orders API", "Orders API: Written in Go 1.22") in edges
    assert done.links["unresolved"] == 0
    assert adopt(ctx, SourceAsk("server-memory")).count("unchanged") == 4


def test_a_mem0_dump_comes_in_with_its_categories_as_tags(ctx, home):
    _write(ctx, "exports/mem0.json", MEM0)
    _write(ctx, "exports/broken.json", '{"results": [')
    adopt(ctx, SourceAsk("mem0", "exports/mem0.json"))
    got = {m.content: m for m in _memories(ctx, "mem0")}
    assert set(got) == {"Prefers window seats on long flights", "Allergic to peanuts"}
    assert {"mem0", "travel", "preferences"} <= set(got["Prefers window seats on long "
                                                        "flights"].tags)
    assert got["Allergic to peanuts"].origin_session == "exports/mem0.json:5"
    broken = adopt(ctx, SourceAsk("mem0", "exports"))
    assert "not JSON" in broken.found.skipped["exports/broken.json"]
    assert broken.count("unchanged") == 2 and broken.removed == []
    with pytest.raises(ToolError, match="needs a path"):
        adopt(ctx, SourceAsk("mem0"))


DEEP = "[" * 100_000 + "]" * 100_000  # deeper than Python's JSON reader recurses


def test_a_malformed_mem0_memory_is_left_out_with_why_and_the_rest_come_in(ctx, home):
    _write(ctx, "mem0.json", '{"results": [\n' + ",\n".join([
        '{"id": "a1", "memory": "Prefers window seats on long flights"}',
        '{"id": "a2", "memory": 42}',
        '["a list", "where a memory goes"]',
        '{"id": "a3", "memory": "Nested far too deep", "metadata": {"x": ' + DEEP + '}}',
        '{"id": "a4", "memory": "Metadata as a list", "metadata": ["not", "an", "object"]}',
        '{"id": "a5", "memory": "Categories as a number", "categories": 7}',
        '{"id": "a6", "memory": "Allergic to peanuts", "categories": ["health"]}',
        DEEP]) + "\n]}\n")
    done = adopt(ctx, SourceAsk("mem0", "mem0.json"))
    assert {m.content for m in _memories(ctx, "mem0")} == {
        "Prefers window seats on long flights", "Allergic to peanuts"}
    skipped = done.found.skipped
    assert set(skipped) == {f"mem0.json, memory {n}" for n in (2, 3, 4, 5, 6, 8)}
    assert "memory is a number, not text" in skipped["mem0.json, memory 2"]
    assert "a list, not an object" in skipped["mem0.json, memory 3"]
    assert "nested too deeply" in skipped["mem0.json, memory 4"]
    assert "metadata is a list, not an object" in skipped["mem0.json, memory 5"]
    assert "categories is a number, not a list" in skipped["mem0.json, memory 6"]
    assert "nested too deeply" in skipped["mem0.json, memory 8"]
    assert adopt(ctx, SourceAsk("mem0", "mem0.json")).count("unchanged") == 2


def test_a_malformed_memory_server_line_is_left_out_with_why_and_the_rest_come_in(ctx, home):
    _write(ctx, "memory.jsonl", "\n".join([
        '{"type":"entity","name":"Orders_API","entityType":"service",'
        '"observations":["Written in Go 1.22"]}',
        '{"type":"entity","name":"Billing","entityType":"service","observations":5}',
        '["entity", "Ana"]',
        '{"type":"entity","name":{"first":"Ana"},"observations":["On call"]}',
        '{"type":"entity","name":"Deep","observations":' + DEEP + '}',
        '{"type":"entity","name":"Ana","entityType":"person","observations":["On call",3]}',
        '{"type":"relation","from":"Ana","to":7,"relationType":"is_on_call_for"}',
        '{"type":["entity"],"name":"Typed"}',
        DEEP,
        '{"type":"entity","name":"Kept","entityType":"person",'
        '"observations":["Kept after the bad lines"]}',
        '{"type":"relation","from":"Kept","to":"Orders_API","relationType":"works_on"}']) + "\n")
    done = adopt(ctx, SourceAsk("server-memory"))
    assert {m.content for m in _memories(ctx, "server-memory")} == {
        "Orders API: Written in Go 1.22", "Kept: Kept after the bad lines",
        "Kept works on Orders API"}
    skipped = done.found.skipped
    assert set(skipped) == {f"memory.jsonl:{n}" for n in range(2, 10)}
    assert "observations is a number, not a list" in skipped["memory.jsonl:2"]
    assert "a list, not an object" in skipped["memory.jsonl:3"]
    assert "name is an object, not text" in skipped["memory.jsonl:4"]
    assert "nested too deeply" in skipped["memory.jsonl:5"]
    assert "observations holds a number, not text" in skipped["memory.jsonl:6"]
    assert "to is a number, not text" in skipped["memory.jsonl:7"]
    assert "type is a list, not text" in skipped["memory.jsonl:8"]
    assert "nested too deeply" in skipped["memory.jsonl:9"]
    assert done.links["unresolved"] == 0


# One fixture per kind of rule file, written from each tool's documentation: where it
# lives, a realistic file, and a piece that must come in with what it applies to.
RULE_FIXTURES = {
    "kiro": (".kiro/steering/api-standards.md",
             "---\ninclusion: fileMatch\nfileMatchPattern: [\"app/api/**/*.ts\", "
             "\"app/api/**/*.test.ts\"]\n---\n# API standards\n"
             "- Every route validates input with zod before touching the DB.\n"
             "- Response envelope `{ data, error }`; contract in #[[file:docs/openapi.yaml]]\n",
             "Every route validates input with zod before touching the DB. (applies to "
             "app/api/**/*.ts, app/api/**/*.test.ts)"),
    "copilot": (".github/instructions/python-tests.instructions.md",
                "---\napplyTo: \"tests/**/*.py,conftest.py\"\ndescription: Pytest conventions\n"
                "---\n- Use plain `assert`; no unittest classes.\n- Fixtures go in the nearest "
                "`conftest.py`, named after the resource (`db`, `client`).\n",
                "Use plain `assert`; no unittest classes. (applies to tests/**/*.py, "
                "conftest.py)"),
    "serena": (".serena/memories/suggested_commands.md",
               "# Suggested commands\n- Tests: `uv run pytest -q`\n- Lint and format: `uv run "
               "ruff check --fix . && uv run ruff format .`\n",
               "Tests: `uv run pytest -q`"),
    "windsurf": (".windsurf/rules/python-style.md",
                 "---\ntrigger: glob\ndescription: Python style for the ingestion service\n"
                 "globs: ingest/**/*.py,tests/ingest/**/*.py\n---\n# Python style\n"
                 "- Type-annotate public functions; run `mypy --strict ingest`.\n"
                 "- Use `logging.getLogger(__name__)`, never `print`.\n",
                 "Type-annotate public functions; run `mypy --strict ingest`. (applies to "
                 "ingest/**/*.py, tests/ingest/**/*.py)"),
    "cline": (".clinerules/02-frontend.md",
              "---\npaths:\n  - \"web/src/components/**\"\n---\n# Component rules\n"
              "- Function components only; colocate `*.test.tsx`.\n",
              "Function components only; colocate `*.test.tsx`. (applies to "
              "web/src/components/**)"),
}


@pytest.mark.parametrize("kind", sorted(RULE_FIXTURES))
def test_each_kind_of_rule_file_comes_in_from_where_its_tool_keeps_it(ctx, home, kind):
    where, text, expected = RULE_FIXTURES[kind]
    _write(ctx, where, text)
    _write(ctx, where.rsplit("/", 1)[0] + "/empty.md", "")
    _write(ctx, where.rsplit("/", 1)[0] + "/only-frontmatter.md", "---\ntitle: x\n---\n")
    done = adopt(ctx, SourceAsk(kind))
    got = {m.content: m for m in _memories(ctx, kind)}
    assert expected in got, sorted(got)
    assert got[expected].origin_session.startswith(where + ":")
    assert done.found.skipped == {} and len(got) == len(done.found.units)
    assert adopt(ctx, SourceAsk(kind)).count("unchanged") == len(got)


def test_basic_memory_is_read_from_its_own_folder(ctx, home, monkeypatch):
    notes = home / "bm"
    notes.mkdir()
    monkeypatch.setenv("BASIC_MEMORY_HOME", str(notes))
    (notes / "coffee.md").write_text("---\ntitle: Coffee\ntags: [drinks]\n---\n"
                                     "## Observations\n- [preference] Oat milk, no sugar #taste\n")
    adopt(ctx, SourceAsk("basic-memory"))
    (got,) = _memories(ctx, "basic-memory")
    assert got.content == "Observations: Oat milk, no sugar #taste"
    assert got.category == "preference" and {"drinks", "taste"} <= set(got.tags)
    assert got.origin_session == "~/bm/coffee.md:6" and got.code.anchors == ()


def test_a_planted_file_name_cannot_write_to_the_terminal(ctx, home):
    _write(ctx, "memory-bank/\x1b[2Jclear\x07.md", "- The queue drains every five minutes\n")
    done = adopt(ctx, SourceAsk("cline"))
    (got,) = _memories(ctx, "cline")
    assert got.origin_session == "memory-bank/?[2Jclear?.md:1"
    assert all(c.isprintable() for f in done.found.files for c in f.shown)


def test_a_realistic_claude_md_splits_the_way_a_person_would(ctx, home):
    text = (Path(__file__).parents[2] / "data" / "sources" / "CLAUDE.md").read_text()
    _write(ctx, "CLAUDE.md", text)
    adopt(ctx, SourceAsk("claude-code"))
    got = [m.content for m in _memories(ctx)]
    assert len(got) == 15 and not any(c.startswith("This file provides guidance") for c in got)
    assert "Conventions: Money is `int64` cents, never `float64`." in got
    assert any(c.startswith("Commands: ```bash\nmake build") and c.endswith("```")
               for c in got)  # a fenced block stays whole
    assert any(c.startswith("Architecture: | Layer | May import |") for c in got)
    assert any(c.startswith("Conventions > Testing: Prefer table-driven tests.") for c in got)


def test_a_followed_source_notices_a_new_file_in_a_folder_it_searched(ctx, home):
    from memnest_daemon.operations.following import Followed, keep_in_step, set_followed
    _write(ctx, "AGENTS.md", "- Run `make check` before every commit\n")
    _write(ctx, "web/README.md", "not an AGENTS.md\n")
    done = adopt(ctx, SourceAsk("agents-md"))
    set_followed(ctx, Followed("agents-md", None), True, done)
    ctx.store.followed.pop("checked", None)
    assert keep_in_step(ctx) == []  # nothing changed: nothing imported
    _write(ctx, "web/AGENTS.md", "- The web app uses pnpm, not npm\n")
    ctx.store.followed.pop("checked", None)  # as if two seconds had passed
    (again,) = keep_in_step(ctx)
    assert again.stored and any("pnpm" in m.content for m in _memories(ctx, "agents-md"))
