"""The workbench's reading of query parameters and its reasons for a hit, without a server."""
from starlette.requests import Request

from memnest_shims.workbench.views import ListQuery, _reasons


def request(query: str) -> Request:
    return Request({"type": "http", "method": "GET", "path": "/", "headers": [],
                    "query_string": query.encode()})


def test_unknown_or_hostile_values_fall_back_to_the_defaults():
    ask = ListQuery.read(request("category=<script>&scope=public&via=root&order=drop%20table"
                                 "&page=-3&q=" + "x" * 5000 + "&tag=" + "t" * 500))
    assert (ask.category, ask.scope, ask.via, ask.order, ask.page) == ("", "", "", "recent", 1)
    assert len(ask.q) == 1000 and len(ask.tag) == 100
    assert ListQuery.read(request("page=999999999999999999999")).page == 10**9
    assert ListQuery.read(request("page=abc")).page == 1


def test_state_and_days_become_memory_lists_filters_and_bad_ones_are_dropped():
    ask = ListQuery.read(request("state=superseded&since=2026-12-01&until=2026-12-31"
                                 "&scope=shared"))
    assert ask.listing_filters() == {"superseded": True, "scope": "shared",
                                     "since": "2026-12-01", "until": "2027-01-01"}
    assert ListQuery.read(request("state=current")).listing_filters() == {"superseded": False}
    hostile = ListQuery.read(request("state=<b>&since=2026-02-30&until=" + "9" * 5000))
    assert (hostile.state, hostile.since, hostile.until) == ("", "", "")
    assert hostile.listing_filters() == {} and not hostile.narrowed
    assert ListQuery.read(request("until=9999-12-31")).listing_filters() == {}


def test_a_views_address_keeps_only_what_differs_from_the_default():
    ask = ListQuery.read(request("q=deploy&category=decision&order=recent"))
    assert ask.params("/home", "/home") == {"q": "deploy", "category": "decision"}
    assert ask.params("/other", "/home")["ws"] == "/other"
    assert ask.filters() == {"category": "decision"}


def test_a_hit_says_which_words_matched_and_which_channels_brought_it():
    rows = [{"id": 7, "content": "We deploy on Fridays", "explain": {
        "vector": 0.31, "keyword": 0.5, "recency": 0.0}, "code": {"state": "changed"}}]
    assert _reasons("how do we deploy", rows) == {
        7: ["matched: deploy", "keyword 0.50", "vector 0.31", "code changed"]}
