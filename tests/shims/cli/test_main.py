"""memnest-ctl's parser, built from the command modules, without a daemon: every subcommand
is there and answers --help, a wrong command line exits 2 with a message, and no module
reaches back into main.py."""
import argparse
import ast
from pathlib import Path

import pytest

from memnest_shims.cli import main as ctl

CLI = Path(ctl.__file__).resolve().parent


def _subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser) of every subcommand, nested ones (tls init) included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield path + (name,), sub
                yield from _subcommands(sub, path + (name,))


def test_the_parser_has_every_command_in_the_order_help_lists():
    names = [path[0] for path, _ in _subcommands(ctl.build_parser()) if len(path) == 1]
    assert names == list(ctl.LISTED)
    assert sorted(c.name for c in ctl.commands()) == sorted(ctl.LISTED)


def test_each_command_is_declared_once():
    declared = [c.name for group in ctl.GROUPS for c in group.COMMANDS]
    assert len(declared) == len(set(declared))


@pytest.mark.parametrize("path", [p for p, _ in _subcommands(ctl.build_parser())],
                         ids=" ".join)
def test_every_subcommand_answers_help(path, capsys):
    with pytest.raises(SystemExit) as exited:
        ctl.main([*path, "--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: memnest-ctl {' '.join(path)}")


def test_version(capsys):
    with pytest.raises(SystemExit) as exited:
        ctl.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("memnest-ctl ")


@pytest.mark.parametrize("argv, says", [
    ([], "the following arguments are required: COMMAND"),
    (["remember"], "invalid choice: 'remember'"),
    (["store", "x", "--importance", "9"], "9 is outside 1-5"),
    (["store", "x", "--importance", "high"], "'high' is not a whole number"),
    (["store", "x", "--category", "gossip"], "invalid choice: 'gossip'"),
    (["search", "q", "--top-k", "0"], "0 is outside 1-100"),
    (["relate", "1", "two"], "invalid int value: 'two'"),
    (["keep-separate"], "the following arguments are required: ID"),
    (["logs", "-n", "-1"], "-1 is outside 0-1000000"),
    (["service", "restart"], "invalid choice: 'restart'"),
    (["config", "emacs"], "invalid choice: 'emacs'"),
    (["config", "vscode", "--check", "--print"], "not allowed with argument"),
    (["tls"], "the following arguments are required: ACTION"),
    (["tls", "client"], "the following arguments are required: name"),
    (["hook", "lunch"], "invalid choice: 'lunch'"),
    (["status", "--root", "x"], "unrecognized arguments: --root x"),
])
def test_a_wrong_command_line_exits_2_with_a_message(argv, says, capsys):
    with pytest.raises(SystemExit) as exited:
        ctl.main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: memnest-ctl") and says in err, err


def test_shared_options_go_where_they_belong():
    parser = ctl.build_parser()
    assert parser.parse_args(["stats", "--json", "--workspace", "/w"]).workspace == "/w"
    assert parser.parse_args(["status", "--json"]).json is True
    assert not hasattr(parser.parse_args(["tls", "init"]), "json")
    assert parser.parse_args(["import", "f"]).all is False  # one workspace, never --all


def _imports(path: Path) -> list[str]:
    """The modules of shims/cli a file imports, relative ones resolved."""
    package = ["memnest_shims", *path.parent.relative_to(CLI.parent).parts]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package[:len(package) - node.level + 1])
            module = f"{base}.{node.module}" if node.module else base
            found += [module] + [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append(node.module or "")
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def test_no_module_imports_main():
    wrong = [str(path.relative_to(CLI)) for path in CLI.rglob("*.py")
             if path.name != "main.py" and "memnest_shims.cli.main" in _imports(path)]
    assert not wrong


def test_command_modules_do_not_import_each_other():
    wrong = [f"{path.name} imports {module}" for path in (CLI / "commands").glob("*.py")
             for module in _imports(path)
             if module.startswith("memnest_shims.cli.commands.")
             and module != f"memnest_shims.cli.commands.{path.stem}"]
    assert not wrong
