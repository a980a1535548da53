"""service_units.Report: the steps a service install reports, without a service manager."""
from memnest_shims.cli.service_units import Report


def test_a_step_records_the_facts_given_and_prints_its_text():
    printed: list[str] = []
    report = Report(out=printed.append)
    report.step("command", "ran: systemctl --user daemon-reload", command=["systemctl"],
                exit=0)
    report.step("note", "nothing to do")
    assert printed == ["ran: systemctl --user daemon-reload", "nothing to do"]
    assert report.steps == [
        {"step": "command", "text": "ran: systemctl --user daemon-reload",
         "command": ["systemctl"], "exit": 0},
        {"step": "note", "text": "nothing to do"}]
    assert list(report.steps[0]) == ["step", "text", "command", "exit"]
