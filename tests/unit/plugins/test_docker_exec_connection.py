"""tfprov.gpu.docker_exec: `docker exec` whose stopped container is unreachable, not failed. A stand-in `docker`
command answers as Docker's CLI does (the texts and exit codes below are the CLI's, seen on the local cloud)."""

import json
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.playbook.play_context import PlayContext
from ansible_collections.community.docker.plugins.connection import docker as stock
from ansible_collections.tfprov.gpu.plugins.connection import docker_exec

NOT_RUNNING = "Error response from daemon: container 0123abc is not running\n"

# The stand-in `docker`: `exec` prints $EXEC_OUT / $EXEC_ERR and exits $EXEC_RC (cat's stdin first, as an exec
# given a module on stdin does); `cp` fails (a fetch then falls back to an exec of dd, as for a container being
# removed); the Nth `inspect` prints the Nth word of $STATUS (the last one after that), or fails
# like the CLI for a removed container when $STATUS is empty.
FAKE_DOCKER = """#!/bin/sh
echo "$*" >> "$CALLS"
case "$1" in
  exec) cat > /dev/null; printf '%s' "$EXEC_OUT"; printf '%s' "$EXEC_ERR" >&2; exit "$EXEC_RC" ;;
  cp) exit 1 ;;
  inspect)
    asked=$(grep -c '^inspect' "$CALLS"); found=""
    for status in $STATUS; do found=$status; asked=$((asked - 1)); [ "$asked" -le 0 ] && break; done
    if [ -n "$found" ]; then echo "$found"; else echo "Error: No such object: $5" >&2; exit 1; fi ;;
esac
"""


@pytest.fixture
def docker(tmp_path, monkeypatch, stand_in_docker):
    path = stand_in_docker(FAKE_DOCKER)

    def answer(rc=0, out="", err="", status="running"):
        for key, value in (("EXEC_RC", str(rc)), ("EXEC_OUT", out), ("EXEC_ERR", err), ("STATUS", status)):
            monkeypatch.setenv(key, value)

    def calls():
        log = tmp_path / "calls"
        return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []

    answer.calls, answer.path = calls, path
    return answer


@pytest.fixture
def connection(docker, monkeypatch):
    conn = docker_exec.Connection(PlayContext(), None, docker_command=docker.path)
    options = {"remote_addr": "tfprov-local-3", "docker_extra_args": "", "container_timeout": 10,
               "remote_user": None, "extra_env": None, "working_dir": None, "privileged": False}
    monkeypatch.setattr(conn, "get_option", lambda name, hostvars=None: options[name], raising=False)
    return conn


def test_a_stopped_container_is_a_connection_failure_naming_it(docker, connection):
    docker(rc=1, err=NOT_RUNNING, status="exited")
    with pytest.raises(AnsibleConnectionFailure, match=r"tfprov-local-3 is not running \(exited\): .*is not running"):
        connection.exec_command("/usr/bin/python3", in_data=b"module")


def test_a_removed_container_is_a_connection_failure(docker, connection):
    docker(rc=1, err="Error response from daemon: No such container: tfprov-local-3\n", status="")
    with pytest.raises(AnsibleConnectionFailure, match="not running \\(no such container\\)"):
        connection.exec_command("true")


def test_a_failing_command_on_a_running_container_is_returned_as_it_is(docker, connection):
    docker(rc=2, err="sh: 1: nosuch: not found\n")
    assert connection.exec_command("nosuch") == (2, b"", b"sh: 1: nosuch: not found\n")
    assert docker.calls() == ["exec", "inspect"]  # asked once, because nothing came from the node


def test_a_module_that_answered_is_never_second_guessed(docker, connection):
    answer = json.dumps({"failed": True, "msg": "the module's own failure"})
    docker(rc=1, out=answer, status="exited")
    assert connection.exec_command("/usr/bin/python3")[1] == answer.encode()
    assert docker.calls() == ["exec"]  # no state asked: the node answered
    docker(rc=0)
    assert connection.exec_command("true")[0] == 0


def test_a_copy_to_a_stopped_container_is_a_connection_failure(docker, connection, tmp_path):
    source = tmp_path / "module.py"
    source.write_text("print()\n")
    docker(rc=1, err=NOT_RUNNING, status="exited")
    with pytest.raises(AnsibleConnectionFailure, match="not running"):
        connection.put_file(str(source), "/tmp/module.py")
    docker(rc=1, err="dd: /nosuch/module.py: No such file or directory\n")
    with pytest.raises(AnsibleError, match="failed to transfer") as raised:
        connection.put_file(str(source), "/nosuch/module.py")
    assert not isinstance(raised.value, AnsibleConnectionFailure)


def test_options_are_the_stock_plugins_with_the_same_sources():
    """Ansible reads options from each file's own DOCUMENTATION: ours must follow the stock plugin's."""
    ours = yaml.safe_load(docker_exec.DOCUMENTATION)["options"]
    theirs = yaml.safe_load(stock.DOCUMENTATION)["options"]
    assert ours.keys() == theirs.keys()
    sources = ("vars", "env", "ini", "cli", "keyword")  # lists of where the value may come from
    for name, option in theirs.items():
        strip = [{k: v for k, v in entry.items() if k != "version_added"} for key in sources
                 for entry in option.get(key, [])]
        assert [entry for key in sources for entry in ours[name].get(key, [])] == strip, name
        assert {k: ours[name].get(k) for k in ("default", "type")} == {k: option.get(k) for k in ("default", "type")}


def test_the_local_inventory_uses_it():
    inventory = yaml.safe_load((Path(__file__).resolve().parents[3] / "inventories/local.docker_containers.yml")
                               .read_text())
    assert inventory["compose"]["ansible_connection"] == "'tfprov.gpu.docker_exec'"


def test_an_exec_killed_before_docker_says_the_container_stopped_waits_for_it(docker, connection):
    """`docker kill` ends the exec (137: SIGKILL) a moment before the container reads as exited."""
    docker(rc=137, status="running running exited")
    with pytest.raises(AnsibleConnectionFailure, match=r"tfprov-local-3 is not running \(exited\)"):
        connection.exec_command("/usr/bin/python3", in_data=b"module")
    assert docker.calls() == ["exec", "inspect", "inspect", "inspect"]


def test_a_killed_exec_in_a_container_that_keeps_running_is_the_commands_after_the_grace(docker, connection,
                                                                                       monkeypatch):
    monkeypatch.setattr(docker_exec, "KILL_GRACE_S", 0.3)
    docker(rc=137, status="running")
    assert connection.exec_command("sleep 100")[0] == 137  # killed inside the node, by the node's own doing
    assert docker.calls()[:3] == ["exec", "inspect", "inspect"]


def test_dockers_own_error_on_the_execs_stdout_is_not_the_nodes_answer(docker, connection):
    """Seen in CI: `docker kill` during a module's exec; Docker printed its error on stdout, rc 126."""
    docker(rc=126, out="cannot exec in a deleted state: unknown\r\n", status="running exited")
    with pytest.raises(AnsibleConnectionFailure,
                       match=r"not running \(exited\): cannot exec in a deleted state"):
        connection.exec_command("/usr/bin/python3", in_data=b"module")
    assert docker.calls() == ["exec", "inspect", "inspect"]


def test_a_copy_killed_before_docker_says_the_container_stopped_waits_for_it(docker, connection, tmp_path):
    """A `script` task's copy cut by `docker kill`: dd ends without a word (137) while the container still runs."""
    source = tmp_path / "script.py"
    source.write_text("print()\n")
    docker(rc=137, status="running running exited")
    with pytest.raises(AnsibleConnectionFailure, match=r"tfprov-local-3 is not running \(exited\)"):
        connection.put_file(str(source), "/tmp/script.py")
    assert docker.calls() == ["exec", "inspect", "inspect", "inspect"]


def test_a_fetch_cut_by_dockers_own_error_waits_for_the_container_to_stop(docker, connection, tmp_path):
    docker(rc=126, err="cannot exec in a deleted state: unknown\r\n", status="running exited")
    with pytest.raises(AnsibleConnectionFailure, match=r"not running \(exited\)"):
        connection.fetch_file("/tmp/report.json", str(tmp_path / "report.json"))
    assert docker.calls() == ["cp", "exec", "inspect", "inspect"]


def test_a_copy_that_dd_refused_is_asked_once_and_returned(docker, connection, tmp_path):
    source = tmp_path / "script.py"
    source.write_text("print()\n")
    docker(rc=1, err="dd: /full/script.py: No space left on device\n", status="running exited")
    with pytest.raises(AnsibleError, match="No space left") as raised:
        connection.put_file(str(source), "/full/script.py")
    assert not isinstance(raised.value, AnsibleConnectionFailure)
    assert docker.calls() == ["exec", "inspect"]
