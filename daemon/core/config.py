"""Daemon settings, read once from the environment at start."""
import os
from dataclasses import dataclass, field

from memnest_proto.contract import DEFAULT_MODEL


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not a number")


def _int(name: str, default: int) -> int:
    return int(_float(name, default))


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SystemExit(f"{name}={raw!r}: expected true or false")


@dataclass(frozen=True)
class DreamSettings:
    """Consolidation (memory_dream) and the daemon's own upkeep."""
    prune_days: float
    prune_max_importance: int
    trivial_threshold: float
    cluster_low: float
    max_clusters: int
    scan_window: int
    min_ops: int
    min_hours: float
    min_memories: int
    reembed_max: int
    graph_weight: float
    upkeep_idle_minutes: float  # 0: the daemon never dreams on its own

    @classmethod
    def from_env(cls) -> "DreamSettings":
        return cls(
            prune_days=_float("MEMORY_DREAM_PRUNE_DAYS", 30),
            prune_max_importance=_int("MEMORY_DREAM_PRUNE_MAX_IMP", 2),
            trivial_threshold=_float("MEMORY_DREAM_TRIVIAL_THRESHOLD", 0.95),
            cluster_low=_float("MEMORY_DREAM_CLUSTER_LOW", 0.88),
            max_clusters=max(0, _int("MEMORY_CONSOLIDATE_CLUSTERS", 10)),
            scan_window=max(1, _int("MEMORY_CONSOLIDATE_SCAN", 1000)),
            min_ops=_int("MEMORY_DREAM_MIN_OPS", 10),
            min_hours=_float("MEMORY_DREAM_MIN_HOURS", 24),
            min_memories=_int("MEMORY_DREAM_MIN_MEMORIES", 20),
            reembed_max=max(0, _int("MEMORY_DREAM_REEMBED_MAX", 200)),
            graph_weight=max(0.0, _float("MEMORY_GRAPH_WEIGHT", 0.15)),
            upkeep_idle_minutes=max(0.0, _float("MEMNEST_UPKEEP_IDLE_MINUTES", 10)),
        )


@dataclass(frozen=True)
class TlsSettings:
    """The mutual-TLS port (server/tls.py): each a path or HOST:PORT, "" when not set.
    memnestd's --listen-tls and --tls-dir, when given, take the place of the first two."""
    listen: str = ""  # MEMNEST_TLS_LISTEN: HOST:PORT; no TLS port without it
    dir: str = ""  # MEMNEST_TLS_DIR: the folder `memnest-ctl tls init` writes
    cert: str = ""  # MEMNEST_TLS_CERT, MEMNEST_TLS_KEY, MEMNEST_TLS_CA: the server's
    key: str = ""  # certificate, its key and the CA clients' certificates come from
    ca: str = ""  # (each by default in the folder)
    clients: str = ""  # MEMNEST_TLS_CLIENTS: the allow-list, a JSON file

    @classmethod
    def from_env(cls) -> "TlsSettings":
        def text(name: str) -> str:
            return os.environ.get(name, "").strip()
        return cls(listen=text("MEMNEST_TLS_LISTEN"), dir=text("MEMNEST_TLS_DIR"),
                   cert=text("MEMNEST_TLS_CERT"), key=text("MEMNEST_TLS_KEY"),
                   ca=text("MEMNEST_TLS_CA"), clients=text("MEMNEST_TLS_CLIENTS"))


MAX_GRAPH_SNAPSHOTS = 100  # MEMORY_GRAPH_SNAPSHOTS is capped here


@dataclass(frozen=True)
class Settings:
    embedding_model: str
    fusion: str
    rrf_k: int
    search_candidates: int
    search_limit: int
    list_limit: int
    max_content_preview: int
    max_store_chars: int
    max_batch: int
    latency_warn_ms: float
    buffer_pool_mb: int
    max_db_gb: int
    db_threads: int
    embed_threads: int
    idle_close_minutes: float
    dedup_threshold: float
    merge_tag_overlap: float
    merge_value_gate: bool
    conflict_threshold: float
    conflict_value_floor: float
    allow_destructive: bool
    query_max_rows: int
    query_timeout_s: float
    dream: DreamSettings
    graph_max_nodes: int
    graph_snapshots: int  # earlier graph pages memory_graph_html keeps beside the new one
    output_dir: str  # where tools may write files besides a workspace's .memnest/
    max_open_databases: int
    query_memory_mb: int  # what one memory_query may allocate, beyond the database's pool
    capture_judge: bool = True  # memory_store refuses junk (curation/capture.py)
    tls: TlsSettings = field(default_factory=TlsSettings)
    # scopes (store/resolution.py, operations/tiers.py): whether a git worktree shares its
    # repository's memory, the personal tier's folder, and whether searches recall it
    worktrees: str = "shared"
    user_dir: str = ""
    user_recall: bool = True

    @classmethod
    def from_env(cls) -> "Settings":
        fusion = os.environ.get("MEMORY_FUSION", "context").strip().lower() or "context"
        if fusion not in FUSION_MODES:
            raise SystemExit(f"MEMORY_FUSION={fusion!r}: "
                             + (RETIRED_FUSION.get(fusion) or "expected 'context', 'legacy' or "
                                "'rrf'"))
        return cls(
            embedding_model=os.environ.get("MEMORY_EMBEDDING_MODEL", "").strip() or DEFAULT_MODEL,
            fusion=fusion,
            rrf_k=_int("MEMORY_RRF_K", 60),
            search_candidates=_int("MEMORY_SEARCH_CANDIDATES", 100),
            search_limit=_int("MEMORY_SEARCH_LIMIT", 10),
            list_limit=_int("MEMORY_LIST_LIMIT", 20),
            max_content_preview=_int("MEMORY_MAX_CONTENT", 500),
            max_store_chars=_int("MEMORY_MAX_STORE_CHARS", 20000),
            max_batch=_int("MEMORY_MAX_BATCH", 500),
            latency_warn_ms=_float("MEMORY_LATENCY_WARN_MS", 200),
            buffer_pool_mb=_int("MEMNEST_BUFFER_POOL_MB", 256),
            max_db_gb=_int("MEMNEST_MAX_DB_GB", 64),
            db_threads=max(1, _int("MEMNEST_DB_THREADS", 2)),
            embed_threads=max(0, _int("MEMNEST_EMBED_THREADS", 0)),
            idle_close_minutes=_float("MEMNEST_IDLE_CLOSE_MINUTES", 30),
            dedup_threshold=_float("MEMORY_DEDUP_THRESHOLD", 0.92),
            merge_tag_overlap=_float("MEMORY_MERGE_TAG_OVERLAP", 0.5),
            merge_value_gate=_flag("MEMORY_MERGE_VALUE_GATE", True),
            conflict_threshold=_float("MEMORY_CONFLICT_THRESHOLD", 0.85),
            conflict_value_floor=_float("MEMORY_CONFLICT_VALUE_FLOOR", 0.5),
            allow_destructive=_flag("MEMORY_ALLOW_DESTRUCTIVE", False),
            query_max_rows=max(1, _int("MEMORY_QUERY_MAX_ROWS", 1000)),
            query_timeout_s=max(0.1, _float("MEMORY_QUERY_TIMEOUT_S", 10)),
            dream=DreamSettings.from_env(),
            graph_max_nodes=max(1, _int("MEMORY_GRAPH_MAX_NODES", 2000)),
            graph_snapshots=min(MAX_GRAPH_SNAPSHOTS,
                                max(0, _int("MEMORY_GRAPH_SNAPSHOTS", 5))),
            output_dir=os.path.expanduser(os.environ.get("MEMNEST_OUTPUT_DIR", "").strip()),
            max_open_databases=max(1, _int("MEMNEST_MAX_OPEN_DATABASES", 16)),
            query_memory_mb=max(64, _int("MEMNEST_QUERY_MEMORY_MB", 1024)),
            capture_judge=_flag("MEMORY_CAPTURE_JUDGE", True),
            tls=TlsSettings.from_env(),
            worktrees=_choice("MEMNEST_WORKTREES", WORKTREE_MODES),
            user_dir=_user_dir(),
            user_recall=_flag("MEMNEST_USER_TIER", True),
        )


WORKTREE_MODES = ("shared", "own")


def _choice(name: str, allowed: tuple[str, ...]) -> str:
    raw = os.environ.get(name, "").strip().lower() or allowed[0]
    if raw not in allowed:
        raise SystemExit(f"{name}={raw!r}: expected one of {', '.join(allowed)}")
    return raw


def _user_dir() -> str:
    """The personal tier's folder: MEMNEST_USER_DIR, else the user's data folder."""
    raw = os.environ.get("MEMNEST_USER_DIR", "").strip()
    if raw:
        return os.path.abspath(os.path.expanduser(raw))
    import platformdirs
    return os.path.join(platformdirs.user_data_dir("memnest"), "personal")


FUSION_MODES = ("context", "legacy", "rrf")
# Fusion modes of the reference server that memnest does not offer, and what to use instead.
RETIRED_FUSION = {
    "normalized": "'normalized' (min-max scaled cosine plus BM25) is not offered: 'context', "
                  "the default, replaced it and ranks better on the LOCOMO benchmark (README, "
                  "Retrieval quality); use 'context', or 'legacy' / 'rrf' for the older "
                  "fusions",
}

# Settings of the single-process reference server that memnestd has no use for, with why.
IGNORED_SETTINGS = {
    "MEMORY_EMBED_TIMEOUT_S": "memnestd loads the model once, when it starts, and waits for "
                              "it; clients wait for the daemon (MEMNEST_START_TIMEOUT_S)",
}


def embedding_dim_refusal(dim: int) -> str | None:
    """MEMORY_EMBEDDING_DIM, when set, must be the model's dimension (the model decides it)."""
    raw = os.environ.get("MEMORY_EMBEDDING_DIM", "").strip()
    if not raw or raw == str(dim):
        return None
    return (f"MEMORY_EMBEDDING_DIM={raw!r}, but the model gives {dim} dimensions; unset it "
            "(the dimension comes from MEMORY_EMBEDDING_MODEL) or choose a model of that size")
