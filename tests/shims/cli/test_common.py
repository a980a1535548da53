"""The helpers every memnest-ctl command shares, without a daemon: how failures become one
line on stderr and an exit code, how a tool's error becomes a Failure, and the argument
types."""
import argparse

import pytest

from memnest_shims.cli import common
from memnest_shims.cli.common import ExitCode, Failure, NothingInstalled
from memnest_shims.client import DaemonUnavailable, ToolFailure


def _raising(exc: BaseException):
    def handler(args: argparse.Namespace) -> None:
        raise exc
    return handler


@pytest.mark.parametrize("exc, code, err", [
    (Failure("tls init: /x exists"), 1, "memnest-ctl: tls init: /x exists\n"),
    (DaemonUnavailable("memnestd did not start"), 1, "memnest-ctl: memnestd did not start\n"),
    (NothingInstalled(), 3, ""),
    (KeyboardInterrupt(), 130, ""),
])
def test_a_failure_is_one_line_and_an_exit_code(exc, code, err, capsys):
    assert common.run(_raising(exc), argparse.Namespace()) == code
    out = capsys.readouterr()
    assert out.err == err and out.out == ""


def test_a_command_that_returns_exits_0():
    assert common.run(lambda args: None, argparse.Namespace()) == ExitCode.OK == 0


def test_an_exit_a_command_chose_passes_through():
    with pytest.raises(SystemExit) as exited:
        common.run(_raising(SystemExit(ExitCode.NOT_THERE)), argparse.Namespace())
    assert exited.value.code == 3


def test_an_unexpected_error_is_not_hidden():
    with pytest.raises(ZeroDivisionError):
        common.run(_raising(ZeroDivisionError()), argparse.Namespace())


class _FailingClient:
    """A daemon client whose tool call fails, as the daemon answers a refused call."""

    def call_tool(self, tool, arguments, workspace, db_path="", on_progress=None, origin=None):
        self.seen = (tool, arguments, workspace, origin)
        raise ToolFailure("invalid_argument", "content is empty")


def test_a_tool_error_becomes_a_failure_naming_the_tool(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMNEST_REMOTE", raising=False)
    daemon = _FailingClient()
    args = argparse.Namespace(workspace=str(tmp_path), json=True)
    with pytest.raises(Failure, match=r"^memory_store: content is empty$"):
        common.call(daemon, args, "memory_store", {"content": ""})
    assert daemon.seen == ("memory_store", {"content": ""}, str(tmp_path.resolve()),
                           common.CLI_ORIGIN)


def test_a_remote_daemon_needs_a_workspace_named(monkeypatch):
    monkeypatch.setenv("MEMNEST_REMOTE", "daemon.example:7443")
    monkeypatch.delenv("MEMORY_WORKSPACE", raising=False)
    with pytest.raises(Failure, match="MEMORY_WORKSPACE"):
        common.workspace(argparse.Namespace(workspace=None, json=False))
    named = argparse.Namespace(workspace="/srv/app", json=False)
    assert common.workspace(named) == "/srv/app"  # a folder there: never resolved here


def test_a_workspace_found_elsewhere_is_said_once_on_stderr(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MEMNEST_REMOTE", raising=False)
    monkeypatch.setenv("MEMORY_WORKSPACE", str(tmp_path))
    monkeypatch.setattr(common, "_said", set())
    args = argparse.Namespace(workspace=None, json=False)
    assert common.workspace(args) == common.workspace(args) == str(tmp_path.resolve())
    assert capsys.readouterr().err == f"memnest-ctl: workspace {tmp_path.resolve()}\n"


def test_bounded_says_the_range():
    parse = common.bounded(1, 5)
    assert parse("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="7 is outside 1-5"):
        parse("7")
    with pytest.raises(argparse.ArgumentTypeError, match="'x' is not a whole number"):
        parse("x")


def test_help_says_defaults_once():
    parser = argparse.ArgumentParser(formatter_class=common.HelpWithDefaults)
    parser.add_argument("--lines", default=50, help="lines to show")
    parser.add_argument("--name", default="memnest", help="server name (default: memnest)")
    parser.add_argument("--quiet", action="store_true", help="say less")
    text = parser.format_help()
    assert "lines to show (default: 50)" in text
    assert text.count("default: memnest") == 1
    assert "say less\n" in text


def test_an_unknown_model_is_refused_before_anything_is_written():
    pytest.importorskip("fastembed")
    with pytest.raises(Failure, match="is not a model memnestd can load.*Nothing was changed"):
        common.check_model("no-such/model-anywhere")
    common.check_model(None)
