"""A workspace exported as Markdown notes (operations/exporting.export_notes) and imported
into an empty workspace (from markdown): the same memories, with their category, tags,
importance and links; importing the folder again adds nothing."""
import random
from pathlib import Path

from memnest_daemon.operations.adopting import SourceAsk, adopt
from memnest_daemon.operations.exporting import export_notes
from memnest_daemon.operations.linking import Link, relate
from memnest_daemon.operations.remember import Entry, remember
from memnest_daemon.sources import markdown, notes

from support import OperationContext

SERVICES = ["billing", "search", "ledger", "auth", "mailer", "reports", "gateway", "queue"]
TEAMS = ["payments", "platform", "growth", "core", "data"]
TAGS = ["ops", "db", "ci", "auth", "billing", "c++", "front end", "a:b"]


def _texts(n: int) -> list[str]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        service, team = rng.choice(SERVICES), rng.choice(TEAMS)
        out.append(f"The {service} service number {i} listens on port {8000 + i} and "
                   f"is owned by the {team} team")
    out[3] = "A note with markdown in it:\n\n## Relations\n- not a [[link]] here\n\nand more"
    out[4] = "---\nfrontmatter-looking text: yes\n---"
    return out


def test_a_thousand_memories_and_their_links_come_back(tmp_path):
    source = OperationContext(tmp_path / "a")
    target = OperationContext(tmp_path / "b")
    try:
        rng = random.Random(11)
        texts = _texts(1000)
        entries = [Entry(t, ("general", "decision", "learning", "pattern", "preference")[n % 5],
                         rng.sample(TAGS, n % 4), 1 + n % 5, keep_as_is=True)
                   for n, t in enumerate(texts)]
        ids = [o.memory.id for start in range(0, 1000, 250)
               for o in remember(source, entries[start:start + 250], batch=True).outcomes]
        assert len(set(ids)) == 1000
        links = [Link(ids[n], ids[(n * 7 + 3) % 1000],
                      ("RELATED_TO", "SUPERSEDES", "EXPLAINS")[n % 3]) for n in range(0, 1000, 3)]
        relate(source, [x for x in links if x.from_id != x.to_id], batch=True)

        written = export_notes(source)
        assert written.notes == 1000 and len(list(Path(written.folder).glob("*.md"))) == 1000
        done = adopt(target, SourceAsk("markdown", written.folder))
        assert done.found.skipped == {} and len(done.stored) == 1000
        assert done.links["unresolved"] == 0

        def held(ctx):
            with ctx.store.reading():
                memories = {m.id: m for m in ctx.store.in_scope(ctx.workspace)}
                edges = {(rel, memories[a].content, memories[b].content)
                         for rel, a, b in ctx.store.graph.edges
                         if a in memories and b in memories}
            return ({m.content: (m.category, sorted(m.tags), m.importance)
                     for m in memories.values()}, edges)

        assert held(target) == held(source)
        again = adopt(target, SourceAsk("markdown", written.folder))
        assert again.count("unchanged") == 1000 and again.links["created"] == 0
    finally:
        source.close()
        target.close()


def test_a_note_reads_back_exactly_what_was_written():
    content = "Line one\n\n## Relations\n- explains [[x]]\n\ntrailing words"
    text = notes.render_note({"id": 9, "category": "decision", "tags": ["a: b", "#x", "-y"],
                              "importance": 5}, content,
                             [("EXPLAINS", "10-other"), ("SUPERSEDES", "11-older")])
    got = notes.read_note(markdown.parse(text), text)
    assert got is not None and got.content == content
    assert got.tags == ("a: b", "#x", "-y") and got.importance == 5
    assert got.category == "decision"
    assert got.relations == (("EXPLAINS", "10-other"), ("SUPERSEDES", "11-older"))


def test_relations_written_in_a_memorys_text_come_back_as_text_not_links(tmp_path):
    """A memory whose own text ends like a note's Relations section (and has no links of
    its own) is read back byte for byte, its text never made a link; look-alike lines and
    line breaks other than \\n come back as written too."""
    source = OperationContext(tmp_path / "a")
    target = OperationContext(tmp_path / "b")
    try:
        newer = "The billing rule now: refunds need two approvals"
        new_id = remember(source, [Entry(newer, keep_as_is=True)], batch=True
                          ).outcomes[0].memory.id
        name = notes.note_name(new_id, newer)
        texts = [f"How the billing rule read in 2024\n\n## Relations\n- supersedes [[{name}]]",
                 f"Look-alikes\n  ## Relations  \n\\## Relations\n\\\\## Relations\n"
                 f"- explains [[{name}]]",
                 "Line breaks kept as written\r\nsecond line\u2028third\x0cfourth"]
        remember(source, [Entry(t, keep_as_is=True) for t in texts], batch=True)
        written = export_notes(source)
        done = adopt(target, SourceAsk("markdown", written.folder))
        with target.store.reading():
            got = {m.content for m in target.store.in_scope(target.workspace)}
            edges = set(target.store.graph.edges)
        assert edges == set()  # was SUPERSEDES, from the text's own lines
        assert got == {newer, *texts}
        assert done.links == {"created": 0, "exists": 0, "unresolved": 0}
        assert adopt(target, SourceAsk("markdown", written.folder)).count("unchanged") == 4
    finally:
        source.close()
        target.close()


def test_basic_memory_observations_relations_and_wikilinks(tmp_path):
    ctx = OperationContext(tmp_path)
    try:
        vault = Path(ctx.workspace) / "vault"
        vault.mkdir()
        (vault / "search-redesign.md").write_text(
            "---\ntitle: Search Redesign\ntype: project\ntags: [search, backend]\n---\n"
            "# Search Redesign\nBuilds on [[Indexing Pipeline]] and replaces the legacy "
            "Solr setup.\n## Observations\n"
            "- [decision] Move to Postgres full-text search #postgres (cheaper than Solr)\n"
            "- [risk] Ranking quality drops for multi-word queries #relevance\n"
            "- [ ] Write the migration runbook for the cut-over\n"
            "## Relations\n- depends_on [[Indexing Pipeline]]\n- [[Query Parser|the parser]]\n")
        (vault / "Indexing Pipeline.md").write_text("The pipeline indexes documents nightly.\n")
        (vault / "query-parser.md").write_text("---\ntitle: Query Parser\n---\n"
                                               "Parses the query language into an AST.\n")
        done = adopt(ctx, SourceAsk("markdown", "vault"))
        with ctx.store.reading():
            got = {m.content: m for m in ctx.store.in_scope(ctx.workspace)}
            edges = {(rel, got_a, got_b) for rel, a, b in ctx.store.graph.edges
                     for got_a in [ctx.store.catalog[a].content[:20]]
                     for got_b in [ctx.store.catalog[b].content[:20]]}
        decision = got["Observations: Move to Postgres full-text search #postgres (cheaper "
                       "than Solr)"]
        assert decision.category == "decision" and {"postgres", "search"} <= set(decision.tags)
        risk = next(m for c, m in got.items() if "Ranking quality" in c)
        assert "risk" in risk.tags and "relevance" in risk.tags
        assert ("RELATED_TO", "Builds on [[Indexing", "The pipeline indexes") in edges
        assert ("RELATED_TO", "Builds on [[Indexing", "Parses the query lan") in edges
        assert done.links["unresolved"] == 0
        assert not any(c.startswith("Relations:") for c in got)  # links, not memories
    finally:
        ctx.close()
