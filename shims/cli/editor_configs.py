"""`memnest-ctl config <client>`: put a memnest entry into an MCP client's own config file.

The entry is merged into the file the client reads: other servers and every other key are kept,
the previous file is backed up, the result is written atomically and read back. The entry runs
this install's memnest-mcp by absolute path (editors do not start servers from your shell, so
PATH is not to be relied on) and carries in `env` what a shim must pass to a daemon it starts,
since MCP clients hand servers only a minimal environment: the project (MEMORY_WORKSPACE) and
the embedding model when it is not the default one (a database refuses to be opened with a
model other than the one that embedded it).
"""
import json
import os
import re
import shutil
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memnest_proto.contract import DEFAULT_MODEL

from ..client import DaemonClient
from ..own_paths import (
    PRIVATE,
    UNSHARED,
    NotOurs,
    can_make_folders,
    check_folder,
    check_target,
    make_folders,
    open_append,
    own_folder,
    write_file,
)

# A config file as parsed: JSON (or Codex's TOML) objects of whatever the user put there.
Document = dict[str, Any]

# Keys of `env` that `config` decides; any other key a user put there is kept.
MANAGED_ENV = ("MEMORY_WORKSPACE", "MEMORY_EMBEDDING_MODEL", "MEMNEST_SOCKET", "MEMNEST_LOG_FILE")


class ConfigError(Exception):
    """The file cannot be merged safely; nothing was written. The message says what to do."""


@dataclass(frozen=True)
class ClientSpec:
    name: str
    title: str
    servers_key: str          # the object mapping server names to server entries
    per_project: bool         # the config file lives in the project
    stdio_type: bool          # entries carry "type": "stdio"
    reload_hint: str
    pins_workspace: bool = True  # False: one file for every project (the shim finds it)

    def path(self, workspace: Path) -> Path:
        if self.name == "claude-code":
            return workspace / ".mcp.json"
        if self.name == "cursor":
            return workspace / ".cursor" / "mcp.json"
        if self.name == "vscode":
            return workspace / ".vscode" / "mcp.json"
        if self.name == "kiro":
            return workspace / ".kiro" / "settings" / "mcp.json"
        if self.name == "gemini":
            return Path.home() / ".gemini" / "settings.json"
        if self.name == "codex":
            return Path.home() / ".codex" / "config.toml"
        if self.name == "kiro-cli":
            return Path.home() / ".kiro" / "agents" / "memnest.json"
        return claude_desktop_config()


CLIENTS = {c.name: c for c in (
    ClientSpec("claude-code", "Claude Code", "mcpServers", True, True,
               "Claude Code asks once to approve the project's servers from .mcp.json; "
               "`claude mcp list` shows memnest"),
    ClientSpec("claude-desktop", "Claude Desktop", "mcpServers", False, False,
               "quit and reopen Claude Desktop"),
    ClientSpec("cursor", "Cursor", "mcpServers", True, False,
               "Cursor picks the change up; check Settings → MCP shows memnest enabled"),
    ClientSpec("vscode", "VS Code", "servers", True, True,
               "run `MCP: List Servers` in VS Code and start memnest"),
    ClientSpec("kiro", "Kiro", "mcpServers", True, False,
               "reconnect MCP servers from Kiro's MCP panel"),
    ClientSpec("kiro-cli", "Kiro CLI", "mcpServers", False, False,
               "start it with `kiro-cli chat --agent memnest` (or make memnest the default "
               "agent)", pins_workspace=False),
    ClientSpec("gemini", "Gemini CLI", "mcpServers", False, False,
               "`gemini mcp list` shows memnest (in a trusted folder; `/hooks panel` lists "
               "the hooks)", pins_workspace=False),
    ClientSpec("codex", "Codex CLI", "mcp_servers", False, False,
               "`codex mcp list` shows memnest; review and trust memnest's hooks once in "
               "Codex's /hooks view", pins_workspace=False),
)}


def claude_desktop_config() -> Path:
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "Claude" / "claude_desktop_config.json"


def mcp_command(program: str = "memnest-mcp") -> Path:
    """This install's memnest-mcp (or another of its programs), by absolute path."""
    beside = Path(sys.executable).with_name(program)  # the venv's bin, not resolved
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside.absolute()
    found = shutil.which(program)
    if found:
        return Path(found).absolute()
    raise ConfigError(f"{program} is not installed beside this memnest-ctl nor on PATH; "
                      "install memnest (pip install -e '.[offline]') first")


def choose_model(explicit: str | None) -> tuple[str | None, str]:
    """The model the entry must name, and where that choice came from. None: the default."""
    if explicit:
        model, source = explicit, "--model"
    else:
        model, source = None, "the default"
        client = DaemonClient(client_name="memnest-ctl config", autostart=False)
        try:
            if client.is_running():
                model, source = client.status().embedding_model, "the running memnestd"
        finally:
            client.close()
        if model is None and os.environ.get("MEMORY_EMBEDDING_MODEL", "").strip():
            model, source = os.environ["MEMORY_EMBEDDING_MODEL"].strip(), \
                "$MEMORY_EMBEDDING_MODEL"
    if model == DEFAULT_MODEL:
        return None, source
    return model, source


def desired_env(workspace: Path, model: str | None) -> dict[str, str]:
    env = {"MEMORY_WORKSPACE": str(workspace)}
    if model:
        env["MEMORY_EMBEDDING_MODEL"] = model
    for name in ("MEMNEST_SOCKET", "MEMNEST_LOG_FILE"):  # non-default daemon locations
        if os.environ.get(name, "").strip():
            env[name] = os.environ[name].strip()
    return env


# -- reading and writing -----------------------------------------------------------------

_JSONC_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r'("(?:\\.|[^"\\])*")|,(\s*[}\]])', re.S)


def _strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (VS Code's mcp.json allows both) → JSON."""
    text = _JSONC_TOKEN.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", text)
    return _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), text)


def load(path: Path) -> tuple[Document, bool]:
    """The document and whether comments or trailing commas had to be dropped to read it."""
    text = path.read_text(encoding="utf-8-sig")
    if not text.strip():
        return {}, False
    try:
        document, lenient = json.loads(text), False
    except json.JSONDecodeError as strict:
        try:
            document, lenient = json.loads(_strip_jsonc(text)), True
        except json.JSONDecodeError:
            raise ConfigError(f"{path} is not valid JSON (line {strict.lineno}, column "
                              f"{strict.colno}: {strict.msg}); fix it or move it away, then "
                              "run this again. Nothing was changed.") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path} holds a JSON {type(document).__name__}, not an object; "
                          "nothing was changed")
    return document, lenient


@dataclass
class FilePlan:
    """A JSON file as it is and as it is to be."""
    path: Path
    exists: bool
    before: Document
    after: Document
    lenient: bool

    @property
    def changed(self) -> bool:
        return not self.exists or self.before != self.after

    def text(self) -> str:
        return json.dumps(self.after, indent=2, ensure_ascii=False) + "\n"

    def kept_others(self, written: Document) -> bool:
        """Whether what this plan does not own reads back exactly as it was."""
        return True

    def reads_back(self) -> bool:
        written, _ = load(self.path)
        return written == self.after and self.kept_others(written)


@dataclass
class Plan(FilePlan):
    client: ClientSpec
    name: str
    model_source: str

    @property
    def entry(self) -> Document:
        entry: Document = self.after[self.client.servers_key][self.name]
        return entry

    @property
    def others(self) -> list[str]:
        return [k for k in self.after.get(self.client.servers_key, {}) if k != self.name]

    def kept_others(self, written: Document) -> bool:
        key = self.client.servers_key
        kept = {k: v for k, v in (self.before.get(key) or {}).items() if k != self.name}
        return {k: v for k, v in written.get(key, {}).items() if k != self.name} == kept


def refuse_links(workspace: Path, target: Path) -> None:
    """A file memnest writes inside the project must not be reached through a link planted
    there (it would write, or copy into a backup, a file elsewhere)."""
    try:
        rel = target.relative_to(workspace)
    except ValueError:
        return  # outside the project: a path the user chose
    here = workspace
    for part in rel.parts:
        here = here / part
        if here.is_symlink():
            raise ConfigError(f"{here} is a symbolic link; memnest does not write through "
                              "links inside a project. Remove it (or replace it with the file "
                              "itself), then run this again. Nothing was changed.")


def existing_file(target: Path) -> bool:
    """Whether `target` is there: a regular file, never a link (memnest would replace the
    link or write where it leads) nor anything else."""
    try:
        info = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(f"{target} is a symbolic link; memnest does not write through links "
                          f"(name the file it leads to with --file {os.path.realpath(target)}). "
                          "Nothing was changed.")
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{target} is not a regular file; nothing was changed")
    return True


def plan(client: str, workspace: Path, path: Path | None = None, name: str = "memnest",
         model: str | None = None) -> Plan:
    spec = CLIENTS[client]
    target = path or spec.path(workspace)
    refuse_links(workspace, target)
    exists = existing_file(target)
    before, lenient = _read(spec, target) if exists else ({}, False)
    after = json.loads(json.dumps(before))  # a deep copy that keeps key order
    servers = after.setdefault(spec.servers_key, {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{target}: \"{spec.servers_key}\" is a JSON "
                          f"{type(servers).__name__}, not an object; nothing was changed")
    chosen, source = choose_model(model)
    entry = servers.get(name)
    entry = dict(entry) if isinstance(entry, dict) else {}
    # Keep whatever else the user set on the entry (disabled, autoApprove, other env keys).
    env = {k: v for k, v in (entry.get("env") or {}).items() if k not in MANAGED_ENV} \
        if isinstance(entry.get("env"), dict) else {}
    env.update(desired_env(workspace, chosen))
    if not spec.pins_workspace:
        del env["MEMORY_WORKSPACE"]
    fresh: dict[str, object] = {"type": "stdio"} if spec.stdio_type else {}
    fresh.update({"command": str(mcp_command()), "args": [], "env": env})
    for key in ("url", "headers", "transport"):  # a remote entry of the same name is replaced
        entry.pop(key, None)
    entry.update(fresh)
    if not env:
        del entry["env"]
    servers[name] = entry
    if client == "codex":
        return TomlPlan(target, exists, before, after, lenient, spec, name, source)
    return Plan(target, exists, before, after, lenient, spec, name, source)


def _read(spec: ClientSpec, target: Path) -> tuple[Document, bool]:
    if spec.name != "codex":
        return load(target)
    from .codex_config import inline_entry, load_toml
    document = load_toml(target)
    if inline_entry(target.read_text(encoding="utf-8-sig"), "memnest"):
        raise ConfigError(f"{target} defines mcp_servers or memnest inline; memnest edits "
                          "only [mcp_servers.memnest] tables. Turn it into one (or remove "
                          "it), then run this again. Nothing was changed.")
    return document, False


@dataclass
class TomlPlan(Plan):
    """Codex's config.toml: edited as text (codex_config.py), checked by parsing it back."""

    def text(self) -> str:
        from .codex_config import merged_text
        current = self.path.read_text(encoding="utf-8-sig") if self.exists else ""
        return merged_text(current, self.name, self.entry)

    def reads_back(self) -> bool:
        from .codex_config import load_toml
        written = load_toml(self.path)
        return written == self.after and self.kept_others(written)


def notes(p: Plan) -> list[str]:
    """What the user should know about a merge that is not an error."""
    found = []
    key = p.client.servers_key
    if key != "mcpServers" and isinstance(p.before.get("mcpServers"), dict):
        found.append(f"{p.path} also has \"mcpServers\", which {p.client.title} does not "
                     f"read; memnest's entry is under \"{key}\"")
    old = (p.before.get(key) or {}).get(p.name)
    if isinstance(old, dict) and old.get("args") not in (None, [], p.entry.get("args")):
        found.append(f"the entry's args {old['args']!r} were replaced (memnest-mcp takes none)")
    return found


BACKUP_MARK = ".memnest-backup-"
KEEP_BACKUPS = 5  # per file; older ones are removed when a new one is made


def backup_path(target: Path, workspace: Path | None) -> Path:
    """Where the previous version of `target` is kept. A file inside the project is backed
    up under .memnest/backups/, which ignores itself in git, so backups neither clutter the
    project root nor get committed; a file elsewhere is backed up beside itself."""
    stamp = time.strftime('%Y%m%d-%H%M%S')
    try:
        rel = target.relative_to(workspace) if workspace else None
    except ValueError:
        rel = None
    if rel is None:
        return target.with_name(f"{target.name}{BACKUP_MARK}{stamp}")
    folder = workspace / ".memnest" / "backups"  # type: ignore[operator]
    return folder / f"{'__'.join(rel.parts)}{BACKUP_MARK}{stamp}"


def _make_backup(target: Path, workspace: Path | None) -> Path:
    """A copy of `target` (as it is, with its mode) made as a new file, never through a link;
    backups beyond the last KEEP_BACKUPS of the file are removed."""
    backup = backup_path(target, workspace)
    folder = backup.parent
    if folder.name == "backups" and folder.parent.name == ".memnest":
        _backups_folder(folder, create=True)
    fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        data, mode = f.read(), stat.S_IMODE(os.fstat(f.fileno()).st_mode)
    n = 1
    while True:
        try:
            out = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            break
        except FileExistsError:  # a backup of this second already, or a link by its name
            n += 1
            backup = backup.with_name(f"{backup.name.split('~')[0]}~{n}")
    with os.fdopen(out, "wb") as copy:
        copy.write(data)
        os.fchmod(copy.fileno(), mode)
    prefix = backup.name.split(BACKUP_MARK)[0] + BACKUP_MARK
    older = sorted((f for f in folder.iterdir() if f.name.startswith(prefix) and f != backup),
                   key=lambda f: f.name)
    for old in older[:max(0, len(older) - (KEEP_BACKUPS - 1))]:
        old.unlink()  # a link named like a backup goes, never what it points to
    return backup


def _backups_folder(folder: Path, create: bool) -> None:
    """.memnest/backups/: made 0700 (with .memnest/, 0700, when there is none) and ignoring
    itself in git; one that is there must be a real folder of the user's that others cannot
    enter, in a .memnest/ of the user's that others cannot write. Nothing there is chmodded."""
    own_folder(folder.parent, UNSHARED, create=create)
    if own_folder(folder, PRIVATE, create=create):
        fd = os.open(folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("# memnest's backups of editor config files\n*\n")


def check_writable(p: FilePlan, workspace: Path | None) -> None:
    """Raise ConfigError, having changed nothing, unless `p` can be written as apply writes
    it: its file no link, a regular file of the user's or none; the folders missing on the
    way to be made inside a folder of the user's (or root's); its backup folder usable."""
    if not p.changed:
        return
    try:
        if workspace is not None:
            refuse_links(workspace, p.path)
        if can_make_folders(p.path.parent) == []:
            check_target(p.path)
        backups = backup_path(p.path, workspace).parent
        if p.exists and backups.name == "backups" and backups.parent.name == ".memnest":
            if os.path.lexists(backups.parent):
                own_folder(backups.parent, UNSHARED, create=False)
            if os.path.lexists(backups):
                own_folder(backups, PRIVATE, create=False)
    except NotOurs as exc:
        raise ConfigError(f"{exc}. Nothing was changed.") from None


def apply(p: FilePlan, workspace: Path | None = None) -> Path | None:
    """Write the plan (check_writable first); returns the backup of the previous file, if
    there was one. The file replaces the old one whole, keeping its mode; the folders missing
    on the way are made, and none that was there is changed."""
    if not p.changed:
        return None
    check_writable(p, workspace)
    try:
        make_folders(p.path.parent)
        backup = _make_backup(p.path, workspace) if p.exists else None
        mode = stat.S_IMODE(os.lstat(p.path).st_mode) if p.exists else 0o600
        write_file(p.path, p.text().encode("utf-8"), mode)
    except NotOurs as exc:
        raise ConfigError(f"{exc}. Nothing was changed.") from None
    # Read it back: our part, and everything else exactly as it was.
    if not p.reads_back():
        if backup is None:
            raise ConfigError(f"{p.path} did not read back as written")
        try:
            write_file(p.path, backup.read_bytes(), mode)
        except NotOurs as exc:
            raise ConfigError(f"{p.path} did not read back as written, and the previous "
                              f"file could not be put back ({exc}): it is {backup}") from None
        raise ConfigError(f"{p.path} did not read back as written; the previous file was "
                          "restored")
    return backup


# -- checking --------------------------------------------------------------------------------------

@dataclass
class Check:
    ok: bool
    name: str
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class _Checked:
    """The entry `check` looks at, and what to run to set it right."""
    spec: ClientSpec
    target: Path
    name: str
    workspace: Path
    rerun: str


def check(client: str, workspace: Path, path: Path | None = None, name: str = "memnest",
          model: str | None = None) -> list[Check]:
    spec = CLIENTS[client]
    rerun = f"run `memnest-ctl config {client}`" + (f" in {workspace}" if spec.per_project
                                                     else "")
    it = _Checked(spec, path or spec.path(workspace), name, workspace, rerun)
    results, document = _check_file(it)
    if document is None:
        return results
    servers = document.get(spec.servers_key)
    entry = servers.get(name) if isinstance(servers, dict) else None
    if not isinstance(servers, dict) or not isinstance(entry, dict):
        return results + [Check(False, "entry", f"no \"{name}\" under \"{spec.servers_key}\"",
                                rerun)]
    others = [k for k in servers if k != name]
    results.append(Check(True, "entry", f"\"{name}\" present"
                         + (f", beside {', '.join(others)}" if others else "")))
    results += _check_shape(it, document, entry) + _check_command(it, entry.get("command", ""))
    env: dict[str, object] = entry["env"] if isinstance(entry.get("env"), dict) else {}
    return results + [_check_workspace(it, env.get("MEMORY_WORKSPACE")),
                      _check_model(env.get("MEMORY_EMBEDDING_MODEL"), model, rerun)]


def _check_file(it: _Checked) -> tuple[list[Check], Document | None]:
    """Whether the file is there and parses; the document when it does."""
    if not it.target.exists():
        return [Check(False, "config file", f"{it.target} does not exist", it.rerun)], None
    try:
        document, lenient = _read(it.spec, it.target)
    except ConfigError as exc:
        return [Check(False, "config file", str(exc).split("; fix")[0], "fix the file, then "
                      + it.rerun)], None
    kind = "TOML" if it.spec.name == "codex" else "JSON"
    return [Check(True, "config file", f"{it.target} is valid {kind}"
                  + (" (with comments)" if lenient else ""))], document


def _check_shape(it: _Checked, document: Document, entry: Document) -> list[Check]:
    """The entry's type, and no second entry under a key this client does not read."""
    found = []
    spec, name = it.spec, it.name
    if spec.stdio_type and entry.get("type") != "stdio":
        found.append(Check(False, "type", f"the entry's type is {entry.get('type')!r}, not "
                           "\"stdio\": the editor would not start memnest-mcp", it.rerun))
    stray = "mcpServers" if spec.servers_key != "mcpServers" else None
    if stray and isinstance(document.get(stray), dict) and name in document[stray]:
        found.append(Check(False, "servers key", f"{it.target} also has \"{name}\" under "
                           f"\"{stray}\", which {spec.title} does not read (it reads "
                           f"\"{spec.servers_key}\")", f"remove \"{stray}\" from {it.target}"))
    return found


def _check_command(it: _Checked, command: str) -> list[Check]:
    """The entry runs this install's memnest-mcp, by absolute path."""
    found = []
    try:
        expected: str | None = str(mcp_command())
    except ConfigError as exc:
        expected = None
        found.append(Check(False, "memnest-mcp", str(exc), "install memnest"))
    if not command or not Path(command).is_absolute():
        found.append(Check(False, "command", f"{command!r} is not an absolute path; editors "
                           "do not start servers from your shell's PATH", it.rerun))
    elif not (Path(command).is_file() and os.access(command, os.X_OK)):
        found.append(Check(False, "command", f"{command} does not exist or is not "
                           "executable", it.rerun))
    elif expected and command != expected:
        found.append(Check(False, "command", f"{command} is not this install's memnest-mcp "
                           f"({expected})", it.rerun))
    else:
        found.append(Check(True, "command", command))
    return found


def _check_workspace(it: _Checked, pinned: object) -> Check:
    """Pinned to this project, or, for a file every project shares, not pinned at all."""
    title = it.spec.title
    if not it.spec.pins_workspace:
        if pinned:
            return Check(False, "workspace", f"pinned to {pinned}, but this file serves every "
                         f"project of {title}", it.rerun)
        return Check(True, "workspace", "the folder the editor runs in")
    if pinned == str(it.workspace):
        return Check(True, "workspace", f"pinned to {pinned}")
    if pinned:
        return Check(False, "workspace", f"pinned to {pinned}, not {it.workspace}", it.rerun)
    return Check(False, "workspace", "not pinned (MEMORY_WORKSPACE)", it.rerun)


def _check_model(has: object, model: str | None, rerun: str) -> Check:
    """The entry names the model the existing databases were embedded with."""
    chosen, source = choose_model(model)
    if (has or None) == chosen:
        return Check(True, "model", f"{has or DEFAULT_MODEL} ({source})")
    if source == "the default" and has:  # no daemon and no setting to compare with
        return Check(True, "model", f"{has} (set in the entry; no running memnestd to "
                     "compare with)")
    return Check(False, "model", f"the entry names {has or 'the default model'}, but {source} "
                 f"uses {chosen or DEFAULT_MODEL}: a daemon this entry starts would refuse the "
                 "existing databases", rerun)


# -- keeping this machine's paths out of commits -------------------------------------------------

def keep_out_of_git(workspace: Path, written: list[Path]) -> list[str]:
    """The files memnest wrote inside the project with this machine's paths (the MCP entry,
    local hook settings), added to the repository's own exclude list (.git/info/exclude,
    never committed) when git does not track or ignore them yet; a note for each, and for
    one git already tracks (its memnest entry would be committed: the user decides)."""
    import subprocess
    inside = []
    for path in written:
        try:
            inside.append(path.relative_to(workspace).as_posix())
        except ValueError:
            continue  # a file of the user's, outside the project
    if not inside or not (workspace / ".git").exists():
        return []

    # The project's own git config may name programs git would run (an fsmonitor hook,
    # hooks, a pager): switched off, as the daemon's git calls do (daemon/code/git_cli.py).
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(workspace), "-c", "core.fsmonitor=false",
                               "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
                               "-c", "core.untrackedCache=false", *args],
                              capture_output=True, text=True, timeout=30, env=env,
                              stdin=subprocess.DEVNULL)
    try:
        where = git("rev-parse", "--git-path", "info/exclude")
    except (OSError, subprocess.TimeoutExpired):
        return []
    if where.returncode != 0:
        return []
    exclude = Path(where.stdout.strip())
    exclude = exclude if exclude.is_absolute() else workspace / exclude
    notes, added = [], []
    for rel in inside:
        if git("ls-files", "--error-unmatch", "--", rel).returncode == 0:
            notes.append(f"{rel} is tracked by git and now holds this machine's paths: keep "
                         "memnest's entry out of your commits (or untrack the file)")
        elif git("check-ignore", "-q", "--", rel).returncode != 0:
            added.append(rel)
    if added:
        notes.append(_exclude(workspace, exclude, added))
    return notes


def _exclude(workspace: Path, exclude: Path, added: list[str]) -> str:
    """`added` appended to the project's own .git/info/exclude (in a real .git folder of the
    user's; .git/info made as git makes it when missing); a note saying what was done, or
    what to add where when git names another file (a worktree's list is its repository's,
    found through a file the project carries: memnest does not follow it there)."""
    lines = "".join(f"/{rel}\n" for rel in added)
    own = workspace / ".git" / "info" / "exclude"
    try:
        if Path(os.path.normpath(exclude)) != own:
            raise NotOurs(f"{exclude} is not {own}")
        check_folder(own.parent.parent, UNSHARED)
        make_folders(own.parent)
        check_folder(own.parent, UNSHARED)
        fd = open_append(own)
    except NotOurs as exc:
        return (f"{', '.join(added)} name paths of this machine: add "
                f"{' '.join(lines.split())} to {exclude} to keep them out of commits "
                f"(memnest did not: {exc})")
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write("# memnest: files with this machine's paths\n" + lines)
    return (f"kept {', '.join(added)} out of commits (.git/info/exclude): they name paths "
            "of this machine")
