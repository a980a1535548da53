"""The hooks `memnest-ctl config` installs beside the MCP entry, so that recall and capture
happen without the model deciding to call a tool (what they do: hook.py).

Claude Code reads hooks from the project's `.claude/settings.json` under "hooks": for each
event a list of matcher groups, each with a list of {"type": "command", "command", "timeout"}
(https://docs.claude.com/en/docs/claude-code/hooks). memnest's commands are recognised by the
program they run; every other hook and every other key of the file is kept as it was.
"""
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from .editor_configs import (
    Check,
    ConfigError,
    FilePlan,
    choose_model,
    desired_env,
    load,
    mcp_command,
)

HOOK_PROGRAM = "memnest-hook"
# Claude Code event -> (memnest-hook event, seconds Claude Code waits before killing it). The
# hook keeps its own, shorter budget; these only bound a hook that would hang regardless.
CLAUDE_EVENTS = {
    "SessionStart": ("session-start", 10),
    "UserPromptSubmit": ("prompt", 5),
    "Stop": ("stop", 5),
}
HOOK_CLIENTS = ("claude-code",)


def settings_path(workspace: Path) -> Path:
    return workspace / ".claude" / "settings.json"


def hook_command(event: str, workspace: Path, model: str | None) -> str:
    env = {k: v for k, v in desired_env(workspace, model).items() if k != "MEMORY_WORKSPACE"}
    words = [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    words += [shlex.quote(str(mcp_command(HOOK_PROGRAM))), event, "--workspace",
              shlex.quote(str(workspace))]
    return " ".join(words)


def _ours(hook: object) -> bool:
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    words = hook["command"].split()
    return any(Path(w.strip("'\"")).name == HOOK_PROGRAM for w in words) or \
        "memnest-ctl hook" in hook["command"]


def _without_ours(groups: list) -> list:
    """The event's matcher groups with memnest's hooks taken out (a group left empty goes)."""
    kept = []
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        hooks = [h for h in group["hooks"] if not _ours(h)]
        if hooks or not group["hooks"]:
            kept.append({**group, "hooks": hooks})
    return kept


@dataclass
class HooksPlan(FilePlan):
    commands: dict[str, str] = field(default_factory=dict)  # Claude event -> our command

    def kept_others(self, written: dict) -> bool:
        def others(document: dict) -> dict:
            hooks = document.get("hooks") or {}
            return {"file": {k: v for k, v in document.items() if k != "hooks"},
                    "hooks": {e: _without_ours(g) for e, g in hooks.items()
                              if _without_ours(g)}}
        return others(written) == others(self.before)


def plan_hooks(workspace: Path, model: str | None = None, path: Path | None = None
               ) -> HooksPlan:
    target = path or settings_path(workspace)
    exists = target.exists()
    before, lenient = load(target) if exists else ({}, False)
    after = json.loads(json.dumps(before))
    hooks = after.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"{target}: \"hooks\" is a JSON {type(hooks).__name__}, not an "
                          "object; nothing was changed")
    chosen, _ = choose_model(model)
    commands = {}
    for event, (ours, timeout) in CLAUDE_EVENTS.items():
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{target}: hooks.{event} is not a list; nothing was changed")
        commands[event] = hook_command(ours, workspace, chosen)
        hooks[event] = _without_ours(groups) + [
            {"hooks": [{"type": "command", "command": commands[event], "timeout": timeout}]}]
    return HooksPlan(target, exists, before, after, lenient, commands)


def check_hooks(workspace: Path, model: str | None = None, path: Path | None = None
                ) -> list[Check]:
    target = path or settings_path(workspace)
    fix = f"run `memnest-ctl config claude-code` in {workspace}"
    if not target.exists():
        return [Check(False, "hooks", f"{target} does not exist", fix)]
    try:
        document, _ = load(target)
        wanted = plan_hooks(workspace, model, target).commands
    except ConfigError as exc:
        return [Check(False, "hooks", str(exc), fix)]
    found = document.get("hooks")
    hooks: dict = found if isinstance(found, dict) else {}
    results = []
    for event, command in wanted.items():
        present = [h.get("command") for g in (hooks.get(event) or []) if isinstance(g, dict)
                   for h in (g.get("hooks") or []) if _ours(h)]
        if command in present:
            results.append(Check(True, f"hook {event}", command))
        elif present:
            results.append(Check(False, f"hook {event}", f"runs {present[0]!r}, not this "
                                 "install's memnest-hook for this workspace", fix))
        else:
            results.append(Check(False, f"hook {event}", f"missing from {target}", fix))
    return results
