"""Imports go one way: a layer of the daemon uses only its own and lower layers, and nothing
in the shims imports the daemon (a shim must start fast and stay small; DESIGN.md 1).
docs/ARCHITECTURE.md describes the layers."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Lower numbers are lower layers. Layers of one number do not import each other.
DAEMON_LAYERS = {
    "core": 0,
    "storage": 1, "model": 1, "cypher": 1,
    "search": 2, "code": 2, "sources": 2,
    "store": 3,
    "curation": 4,
    "team": 4.5,
    "operations": 4.7,
    "tools": 5,
    "server": 6,
}
SHIM_PARTS = {"": 0, "mcp": 1, "cli": 1}  # client, errors, workspace: shared by both


def _imports(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(), str(path))
    here = package.split(".")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
                if not node.module:  # `from . import a`: a may be a module
                    out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
                    continue
            else:
                module = node.module or ""
            out.append((node.lineno, module))
    return out


def _files(folder: str, package: str):
    for path in sorted((ROOT / folder).rglob("*.py")):
        rel = path.relative_to(ROOT / folder).with_suffix("").parts
        parts = list(rel[:-1]) if rel[-1] == "__init__" else list(rel[:-1])
        yield path, ".".join([package] + parts), rel


def test_daemon_layers_import_downwards():
    wrong = []
    for path, package, rel in _files("daemon", "memnest_daemon"):
        if len(rel) < 2:
            continue  # the package's own __init__ and __main__
        mine = DAEMON_LAYERS[rel[0]]
        for line, module in _imports(path, package):
            parts = module.split(".")
            if parts[0] != "memnest_daemon" or len(parts) < 2 or parts[1] not in DAEMON_LAYERS:
                continue
            theirs = DAEMON_LAYERS[parts[1]]
            if theirs > mine or (theirs == mine and parts[1] != rel[0]):
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({rel[0]}) imports {module}")
    assert not wrong, "\n".join(wrong)


def test_every_daemon_module_belongs_to_a_layer():
    loose = [str(p.relative_to(ROOT)) for p, _, rel in _files("daemon", "memnest_daemon")
             if len(rel) == 1 and rel[0] not in ("__init__", "__main__")]
    assert not loose, loose


def test_shims_never_import_the_daemon_and_the_two_shims_stay_apart():
    wrong = []
    for path, package, rel in _files("shims", "memnest_shims"):
        part = rel[0] if len(rel) > 1 else ""
        for line, module in _imports(path, package):
            parts = module.split(".")
            if parts[0] == "memnest_daemon":
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports the daemon ({module})")
            elif parts[0] == "memnest_shims" and len(parts) > 2 and parts[1] in SHIM_PARTS:
                if parts[1] != part and SHIM_PARTS[parts[1]] >= SHIM_PARTS[part]:
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not wrong, "\n".join(wrong)


# Writes that would leave an index behind the database when done outside the store.
RAW_WRITE_CALLS = {
    "db": {"transaction", "insert", "update", "delete", "save_access", "add_edge", "add_edges",
           "remove_edge", "reap_all_topics", "save_signal", "remove_verdict", "add_verdict",
           "link_topics", "reap_topics", "set_meta", "write_embeddings"},
    "vectors": {"upsert", "remove", "add", "rebuild"},
    "keywords": {"upsert", "remove", "add", "rebuild"},
    "graph": {"add", "remove", "keep_separate"},
    "signal": {"pop", "update", "clear"},
    "store": {"_indexed", "_unindexed", "_save_next_id"},
}
WRITERS = {"storage", "store", "search"}  # the database, the store and the indexes themselves


def test_only_the_store_writes():
    wrong = []
    for path, _, rel in _files("daemon", "memnest_daemon"):
        if len(rel) < 2 or rel[0] in WRITERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if node.func.attr in RAW_WRITE_CALLS.get(name, ()):
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} calls "
                             f"{name}.{node.func.attr}: describe it as Changes for "
                             "MemoryStore.commit")
    assert not wrong, "\n".join(wrong)


# The database engine is named only in storage/ and in cypher/ (the memory_query tool, a
# capability of the engine): above them a module neither imports it nor writes its queries,
# and only the store reaches its Database (DESIGN.md 14).
ENGINE_PACKAGES = {"ladybug", "real_ladybug"}
ENGINE_LAYERS = {"storage", "cypher"}
# A string that opens with a Cypher clause and then a pattern, parameter, label or procedure.
CYPHER_TEXT = re.compile(r"\s*(?:OPTIONAL\s+MATCH|MATCH|CREATE|MERGE|UNWIND|CALL)\s+[(\w$:]")
# To move behind the backend interface (issue 56): each still runs Cypher or reaches the
# engine past the store. A module leaves the list once it does neither (checked below).
ENGINE_REACHERS = {
    "daemon/store/verify.py": "reads rows and embeddings with Cypher for memory_verify",
    "daemon/store/reconcile.py": "reads the Memory rows a raw Cypher write left",
    "daemon/operations/schema.py": "asks the engine's catalog for memory_schema",
    "daemon/operations/query.py": "hands the engine's connection to memory_query's runner",
}


def _engine_reaches(path: Path, package: str, layer: str) -> list[str]:
    """What in this module names the engine: an import of it, Cypher text, and (above the
    store) the store's Database."""
    found = [f"{line}: imports {module}" for line, module in _imports(path, package)
             if module.split(".")[0] in ENGINE_PACKAGES]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and CYPHER_TEXT.match(node.value):
            found.append(f"{node.lineno}: Cypher {node.value[:40]!r}")
        elif isinstance(node, ast.Attribute) and node.attr == "db" \
                and DAEMON_LAYERS[layer] > DAEMON_LAYERS["store"]:
            found.append(f"{node.lineno}: reaches {ast.unparse(node)}, the store's Database")
    return found


def test_only_storage_and_cypher_name_the_engine():
    wrong, moved = [], []
    for path, package, rel in _files("daemon", "memnest_daemon"):
        if len(rel) < 2 or rel[0] in ENGINE_LAYERS:
            continue
        name = str(path.relative_to(ROOT))
        found = _engine_reaches(path, package, rel[0])
        if found and name not in ENGINE_REACHERS:
            wrong += [f"{name}:{where}" for where in found]
        elif not found and name in ENGINE_REACHERS:
            moved.append(name)
    assert not wrong, ("only storage/ and cypher/ name the engine; above the store, go "
                       "through MemoryStore:\n" + "\n".join(wrong))
    assert not moved, f"no longer names the engine: take it off ENGINE_REACHERS: {moved}"


def test_the_engine_check_sees_what_it_is_meant_to():
    cypher = ["MATCH (m:Memory) RETURN m.id", "CALL show_tables() RETURN *",
              "UNWIND $rows AS r CREATE (m:Memory {id: r.id})", "CREATE NODE TABLE T(k INT64)",
              "MERGE (k:Meta {key: $k}) SET k.value = $v", "OPTIONAL MATCH (a)-[r]->(b)"]
    prose = ["Match the tags", "CREATE", "the MATCH (m) clause", "CALLS: 3", "match (m)"]
    assert all(CYPHER_TEXT.match(s) for s in cypher)
    assert not any(CYPHER_TEXT.match(s) for s in prose)


def test_the_contract_is_defined_once():
    """What the daemon and its clients must agree on lives in proto/contract.py; a second
    definition on either side would drift."""
    contract = ast.parse((ROOT / "proto" / "contract.py").read_text())
    names = {t.id for node in contract.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    values = {ast.literal_eval(node.value) for node in contract.body
              if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)}
    wrong = []
    for folder in ("daemon", "shims"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id in names for t in node.targets):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} defines "
                                 f"{ast.unparse(node.targets[0])}")
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and node.value in values:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} spells out "
                                 f"{node.value!r}")
    assert not wrong, "\n".join(wrong)


def test_test_modules_have_unique_basenames():
    # The tests have no __init__.py, so pytest imports each by its basename: two of one name
    # collide on a clean checkout (a warm __pycache__ can hide it locally).
    seen: dict[str, Path] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        assert path.name not in seen, f"{path} and {seen[path.name]} share a basename"
        seen[path.name] = path
