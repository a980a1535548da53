"""memnest-ctl ui: the workbench, a local web page over the daemon's memories."""
import argparse

from ... import workspace as ws
from ..common import Command, bounded, workspace


def add_ui_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=bounded(0, 65535), default=0, metavar="PORT",
                        help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--no-browser", action="store_true",
                        help="do not open a browser; the address to open is the first line "
                             "printed")


def cmd_ui(args: argparse.Namespace) -> None:
    from ...workbench.launch import serve  # the web stack, only for this command
    serve(workspace(args), ws.db_path_override(), args.port, not args.no_browser, args.json)


COMMANDS = [
    Command("ui", "open the workbench: see, search, correct and forget memories in a browser",
            cmd_ui, add_arguments=add_ui_arguments),
]
