"""memnest-ctl hook: run one agent hook event, the same program as memnest-hook (hook.py)."""
import argparse

from .. import hook
from ..common import Command


def cmd_hook(args: argparse.Namespace) -> None:
    raise SystemExit(hook.run(args))  # the hook's own exit code, whatever happened


COMMANDS = (
    Command("hook", "run one agent hook event (what `config` installs; reads the editor's "
            "hook JSON on stdin)", cmd_hook, "none", hook.add_arguments, to_terminal=False),
)
