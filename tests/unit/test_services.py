from rich.console import Console

from tfprov import services, terminal


def _report(**hosts):
    return {"hosts": {name: {"data": data} for name, data in hosts.items()}}


def _render(table) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_serving_rows_come_from_the_hosts_that_served():
    report = _report(**{"tfprov-local-2": {"serving": [{"model": "digits", "version": 2, "state": "AVAILABLE",
                                                         "predicts": 20, "p50_ms": 3.21, "p99_ms": 9.9,
                                                         "versions": {"1": "END", "2": "AVAILABLE"},
                                                         "grpc": "10.0.0.5:8500", "rest": "10.0.0.5:8501"}]},
                        "tfprov-local-1": {"gpu_check": {}}})
    found = services.serving(report)
    assert list(found) == ["tfprov-local-2"]
    text = _render(terminal.serving_table(found))
    assert "digits" in text and "AVAILABLE" in text and "3.2" in text and "9.9" in text
    assert "grpc 10.0.0.5:8500 rest 10.0.0.5:8501" in text and "1:END 2:AVAILABLE" in text


def test_a_version_that_is_not_available_shows_its_state_and_no_latency():
    found = {"n1": [{"model": "m", "version": "3", "state": "END"}]}
    text = _render(terminal.serving_table(found))
    assert "END" in text and " - " in text


def test_notebook_lines_give_the_tunnel_and_where_the_token_is_never_the_token():
    report = _report(n1={"notebook": {"address": "127.0.0.1", "port": 8888, "token_file": "/etc/tfprov/jupyter/token",
                                      "user": "debian", "host": "10.1.2.3", "ssh_port": 22}})
    [line] = services.notebook_lines(services.notebooks(report))
    assert "ssh -p 22 debian@10.1.2.3 -N -L 8888:127.0.0.1:8888" in line
    assert "sudo cat /etc/tfprov/jupyter/token" in line
    assert "token=" not in line


def test_no_notebook_no_lines():
    assert services.notebook_lines(services.notebooks(_report(n1={"gpu_check": {}}))) == []
