"""memnest-ctl status, stop, logs with no daemon running: what they say and how they exit."""
import json

import pytest

from memnest_shims.cli import main as ctl


@pytest.fixture(autouse=True)
def nothing_running(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMNEST_SOCKET", str(tmp_path / "nobody.sock"))
    monkeypatch.setenv("MEMNEST_LOG_FILE", str(tmp_path / "never.log"))
    monkeypatch.delenv("MEMNEST_REMOTE", raising=False)
    return tmp_path


def test_status_says_nothing_runs_and_exits_1(nothing_running, capsys):
    assert ctl.main(["status"]) == 1
    assert capsys.readouterr().err == (f"memnest-ctl: memnestd is not running on "
                                       f"{nothing_running / 'nobody.sock'}\n")


def test_status_json_prints_why_and_exits_3(nothing_running, capsys):
    with pytest.raises(SystemExit) as exited:
        ctl.main(["status", "--json"])
    assert exited.value.code == 3
    facts = json.loads(capsys.readouterr().out)
    assert facts["running"] is False and facts["socket"] == str(nothing_running / "nobody.sock")


def test_stop_with_nothing_running_is_not_a_failure(capsys):
    assert ctl.main(["stop", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stopped"] is False


def test_logs_before_any_log_is_written(nothing_running, capsys):
    assert ctl.main(["logs"]) == 1
    assert f"no log at {nothing_running / 'never.log'} yet" in capsys.readouterr().err


def test_logs_json_cannot_follow(nothing_running, capsys):
    (nothing_running / "never.log").write_text("one\ntwo\nthree\n")
    assert ctl.main(["logs", "--json", "-f"]) == 1
    assert "drop -f" in capsys.readouterr().err
    assert ctl.main(["logs", "--json", "-n", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["lines"] == ["two", "three"]
