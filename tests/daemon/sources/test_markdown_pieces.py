"""sources/markdown.py: a Markdown file into the pieces a person would note down."""
from memnest_daemon.sources.markdown import parse, pieces

GUIDE = """---
description: Python style
globs: ["**/*.py", "tests/**"]
alwaysApply: false
tags:
  - style
  - python
---
# Project guide

This repository holds the billing service. It runs on Python 3.12.

## Testing

Run the tests with these commands:
- `make test` runs everything
- `pytest -x tests/unit` for the fast ones
  - needs the `dev` extra

  - and Docker for the integration tests

<!-- a comment
 spanning lines -->

## Style
Use ruff. Never commit with `--no-verify`.

```python
# a heading-looking line in a fence
def f(): ...
```

### Naming
- Modules are nouns.

1. first numbered step is long enough
2. ok
"""


def _pieces(text, max_chars=4000):
    return [(p.start, p.end, p.text) for p in pieces(parse(text), max_chars)]


def test_frontmatter_fields_are_read():
    doc = parse(GUIDE)
    assert doc.front == {"description": "Python style", "globs": ["**/*.py", "tests/**"],
                         "alwaysApply": False, "tags": ["style", "python"]}
    assert doc.title == "Project guide"


def test_bullets_are_pieces_with_their_headings_and_lines():
    got = _pieces(GUIDE)
    assert got[0] == (11, 11, "This repository holds the billing service. It runs on "
                              "Python 3.12.")
    assert got[1] == (16, 16, "Testing: Run the tests with these commands: `make test` "
                              "runs everything")
    start, end, text = got[2]
    assert (start, end) == (17, 20)  # the nested bullets, across a blank line
    assert text.endswith("- needs the `dev` extra\n\n- and Docker for the integration tests")
    assert got[3][2].startswith("Style: Use ruff.") and "# a heading-looking line" in got[3][2]
    assert got[4] == (34, 34, "Style > Naming: Modules are nouns.")
    assert got[5][2] == "Style > Naming: first numbered step is long enough"
    assert len(got) == 6  # "ok" says nothing on its own


def test_odd_files_split_without_error():
    assert _pieces("") == []
    assert _pieces("---\ntitle: only frontmatter\n---\n") == []
    assert _pieces("---\nnot closed\n- a\n") != []  # read as text, not frontmatter
    assert _pieces("```\nnever closed fence\n# not a heading") == [
        (1, 3, "```\nnever closed fence\n# not a heading")]
    assert _pieces("# Only a heading") == []
    assert _pieces("\u2028\ufeff\x0c text with odd spaces and enough words") != []


def test_a_long_section_is_cut_at_paragraphs_then_at_sentences():
    paragraph = " ".join(f"Sentence number {n} explains one more detail." for n in range(60))
    text = "## Long\n\n" + "\n\n".join([paragraph] * 3)
    got = pieces(parse(text), 1000)
    assert all(len(p.text) <= 1000 for p in got) and len(got) >= 6
    assert all(p.text.startswith("Long: ") or not p.text.startswith("Long") for p in got)
    joined = " ".join(p.text for p in got)
    assert joined.count("Sentence number 59") == 3
    one_word = "x" * 5000
    assert [len(p.text) for p in pieces(parse(one_word), 1000)] == [1000] * 5
