"""The closed sets of strings every layer passes around, as types, each with the tuple of
its values (what a JSON schema or a check of untrusted input lists) derived from it."""
from typing import Literal, TypeGuard, get_args

# The kinds of memory: in the contract, since the shims offer them too.
from memnest_proto.contract import CATEGORIES as CATEGORIES
from memnest_proto.contract import Category as Category

# How one memory relates to another: each is a kind of link the database keeps.
Relation = Literal["RELATED_TO", "SUPERSEDES", "EXPLAINS"]
RELATION_TYPES: tuple[Relation, ...] = get_args(Relation)

# Who may see a memory: only this machine, or the team through its shared file (daemon/team/).
Scope = Literal["private", "shared"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
# Where memory_store may put a memory: a scope of the workspace, or "user": the person's
# own tier, kept once in the user's data folder and recalled in every workspace.
StoreScope = Literal[Scope, "user"]
STORE_SCOPES: tuple[StoreScope, ...] = ("private", "shared", "user")
# Which memory a context serves: a workspace's, or the personal tier's.
Tier = Literal["workspace", "user"]

# How a write came: what a client may say it is, what only the daemon says, and "" when not
# known (written before provenance was kept, or a client that named none).
ClientVia = Literal["agent", "cli", "hook"]
DaemonVia = Literal["import", "query"]
Via = Literal[ClientVia, DaemonVia, ""]
CLIENT_VIAS: tuple[ClientVia, ...] = get_args(ClientVia)
DAEMON_VIAS: tuple[DaemonVia, ...] = get_args(DaemonVia)

# What ingest did with one item, and what a memory_store batch reports of each of its items
# (refused: the capture judge or admission turned it away before ingest).
OutcomeStatus = Literal["stored", "duplicate", "merged"]
BatchStatus = Literal[OutcomeStatus, "refused"]
OUTCOME_STATUSES: tuple[OutcomeStatus, ...] = get_args(OutcomeStatus)
BATCH_STATUSES: tuple[BatchStatus, ...] = get_args(BatchStatus)


def is_client_via(value: object) -> TypeGuard[ClientVia]:
    return value in CLIENT_VIAS
