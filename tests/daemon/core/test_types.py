"""The closed sets of core/types.py: each tuple is its type's values, and only a client's
ways of writing may be claimed by a caller."""
from typing import get_args

from memnest_daemon.core import types
from memnest_daemon.core.records import Origin
from memnest_proto import contract


def test_each_tuple_lists_its_types_values():
    assert types.CATEGORIES == contract.CATEGORIES == get_args(contract.Category)
    assert types.SCOPES == ("private", "shared")
    assert set(get_args(types.Via)) == {*types.CLIENT_VIAS, *types.DAEMON_VIAS, ""}
    assert set(types.BATCH_STATUSES) == {*types.OUTCOME_STATUSES, "refused"}


def test_a_caller_may_claim_only_a_clients_way_of_writing():
    for via in types.CLIENT_VIAS:
        assert Origin.claimed(via, "c", "s").via == via
    for via in (*types.DAEMON_VIAS, "root", ""):
        assert Origin.claimed(via, "c", "s").via == ""
    assert Origin.claimed("agent", "c", "s").became("query").via == "query"
