"""Search through a real daemon with the real model: context fusion (the default) finds the
turn that answers a question in a conversation, the other fusion modes stay selectable, and
hostile queries get answers with bounded work. The ranking itself, in process:
tests/daemon/search/."""
import pytest
from memnest_shims.errors import ToolFailure


CONVERSATION = [
    ("Melanie", "Hey Caroline! We went to a concert last night for my daughter's birthday."),
    ("Caroline", "That sounds amazing, Mel! Who was performing?"),
    ("Melanie", "Matt Patterson. His voice gave me chills the whole evening."),
    ("Caroline", "I started volunteering at the youth center downtown."),
    ("Melanie", "That is so kind of you. What do you do there?"),
    ("Caroline", "Mostly mentoring teens and helping them with homework."),
    ("Melanie", "My pottery class made bowls this week; mine came out lopsided."),
    ("Caroline", "Lopsided bowls have character! Keep at it."),
]


def test_context_search_finds_the_answer_turn_through_the_daemon(call):
    stored = call("memory_store", items=[{"content": f"[14 August 2023] {who}: {text}",
                                          "tags": [who]} for who, text in CONVERSATION])
    ids = [r["id"] for r in stored["results"]]
    assert len(set(ids)) == len(CONVERSATION)
    question = "Which singer did Melanie see at the birthday concert?"
    default = call("memory_search", query=question, top_k=5, explain=True)
    assert [r["id"] for r in default["results"]] == [
        r["id"] for r in call("memory_search", query=question, top_k=5,
                              fusion="context")["results"]]
    top = [r["id"] for r in default["results"][:3]]
    assert ids[2] in top                      # "Matt Patterson." answers it
    parts = default["results"][0]["explain"]
    assert {"vector", "keyword", "context", "importance", "recency"} <= set(parts)
    for mode in ("legacy", "rrf"):            # the other modes stay selectable per call
        assert call("memory_search", query=question, fusion=mode)["results"]


def test_hostile_queries_get_answers_with_bounded_work(call):
    call("memory_store", items=[{"content": f"[3 May 2023] Ann: note {i} about the lake "
                                            f"trip and pottery class {i % 7}",
                                 "tags": ["Ann"]} for i in range(150)])
    many = " ".join(f"w{i}" for i in range(10_000))
    with pytest.raises(ToolFailure, match="over the limit"):  # refused before any work
        call("memory_search", query=many)
    longest = " ".join(f"w{i} lake" for i in range(600))[:4000]
    junk = ("\u202e\ufeff \U0001d518\U0001d52b\U0001d526 \u2603\u0301\u0301 " * 150)[:3990]
    # answered (the work a long query costs, counted in process: test_centring.py)
    for query in (longest, junk + " lake", "\u00a0" * 50 + "pottery"):
        out = call("memory_search", query=query, top_k=5, explain=True)
        assert out["results"] and all("vector" in r["explain"] for r in out["results"])
