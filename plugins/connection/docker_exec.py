# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""community.docker.docker (`docker exec`), reporting a container that stopped as unreachable.

The local cloud reaches its nodes with `docker exec`: it costs the controller half the CPU of the Docker API
connection for the same converge (bench/connection_compare.py). But the stock plugin returns the CLI's own
failure when the container is gone ("Error response from daemon: container ... is not running", exit 1) as if it
were the module's: a node stopped in the middle of a run would read "failed" in the run's report, and the retry
would treat it as a task to fix rather than a node to start. Here, when a command, a file copy or a fetch fails
without any output of the node's (nothing, or only Docker's own error line), the container's state is asked: a
container that no longer runs raises the connection failure Ansible reports as unreachable. A running container's
failure is returned unchanged, after asking again for up to 2 s when the exec was cut (a signal, Docker's error, a
copy's `dd` ended without a word): a container being killed ends its exec a moment before Docker records it as exited.

Ansible reads a plugin's options from the literal DOCUMENTATION of its own file, so the stock plugin's options are
declared again below, with the same names and sources (variables, environment, ansible.cfg).
"""

DOCUMENTATION = r"""
name: docker_exec
short_description: Run tasks in Docker containers with C(docker exec), a stopped container being unreachable
description:
  - The P(community.docker.docker#connection) connection plugin, unchanged, except that a command, file copy or fetch
    that fails while the container is not running (stopped, or removed) raises a connection failure, so that Ansible
    reports the host as unreachable instead of failed.
  - Used by tfprov's local cloud inventory (C(inventories/local.docker_containers.yml)).
author:
  - tfprov maintainers (@tfprov)
options:
  remote_addr:
    description: The name of the container, as in P(community.docker.docker#connection).
    default: inventory_hostname
    vars:
      - name: inventory_hostname
      - name: ansible_host
      - name: ansible_docker_host
  remote_user:
    description: The user to execute as inside the container.
    vars:
      - name: ansible_user
      - name: ansible_docker_user
    ini:
      - section: defaults
        key: remote_user
    env:
      - name: ANSIBLE_REMOTE_USER
    cli:
      - name: user
    keyword:
      - name: remote_user
  docker_extra_args:
    description: Extra arguments to pass to the docker command line.
    default: ''
    vars:
      - name: ansible_docker_extra_args
    ini:
      - section: docker_connection
        key: extra_cli_args
  container_timeout:
    description: How long to wait for output from the container once execution started.
    default: 10
    type: integer
    env:
      - name: ANSIBLE_TIMEOUT
      - name: ANSIBLE_DOCKER_TIMEOUT
    ini:
      - key: timeout
        section: defaults
      - key: timeout
        section: docker_connection
    vars:
      - name: ansible_docker_timeout
    cli:
      - name: timeout
  extra_env:
    description: Extra environment variables for commands run in the container (Ansible variables only).
    type: dict
    vars:
      - name: ansible_docker_extra_env
  working_dir:
    description: The directory inside the container to run commands in.
    type: string
    env:
      - name: ANSIBLE_DOCKER_WORKING_DIR
    ini:
      - key: working_dir
        section: docker_connection
    vars:
      - name: ansible_docker_working_dir
  privileged:
    description: Whether commands run with extended privileges.
    type: boolean
    default: false
    env:
      - name: ANSIBLE_DOCKER_PRIVILEGED
    ini:
      - key: privileged
        section: docker_connection
    vars:
      - name: ansible_docker_privileged
"""

import subprocess
import time

from ansible.errors import AnsibleConnectionFailure, AnsibleError, AnsibleFileNotFound
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.community.docker.plugins.connection.docker import Connection as StockConnection

# A container being killed ends the exec running in it (killed by a signal, or with Docker's own error) a moment
# before Docker records the container as exited: then its state is asked again for up to this long before the exec's
# failure counts as the command's (an exec that fails on its own, with no signal and no error of Docker's, is asked
# once: a `test -e` answering 1 costs no wait).
KILL_GRACE_S = 2.0
# Docker's own words for an exec it could not run or finish; it may print them on the exec's stdout (seen: "cannot
# exec in a deleted state: unknown", rc 126, while the container was being killed).
DOCKER_ERRORS = ("Error response from daemon", "OCI runtime exec failed", "cannot exec in a")


def docker_errors(text: str) -> list[str]:
    """The lines of an exec's output that are Docker's own error, not the node's."""
    return [line for line in text.splitlines() if any(phrase in line for phrase in DOCKER_ERRORS)]


def docker_args(extra: str | None) -> list[str]:
    """The docker command's own arguments from the docker_extra_args option, as the stock plugin splits them."""
    return (extra or "").split()


def transfer_cut(error: str) -> bool:
    """Whether a failed copy's `dd` was ended from outside: Docker's own error, or not a word from `dd` (the stock
    plugin's message: its own first line, then dd's output; a `dd` that fails by itself says why). A fetch's message
    shows empty output as `None`/`b''`, so there only Docker's error counts: `docker cp`, tried first, works on a
    container that is still being killed."""
    return bool(docker_errors(error)) or not "".join(error.splitlines()[1:]).strip()


class Connection(StockConnection):
    transport = "tfprov.gpu.docker_exec"

    def exec_command(self, cmd, in_data=None, sudoable=False):
        rc, stdout, stderr = super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        if rc == 0:
            return rc, stdout, stderr
        out = to_text(stdout, errors="surrogate_or_replace").strip()
        docker_said = docker_errors(out + "\n" + to_text(stderr, errors="surrogate_or_replace"))
        if not out or (docker_said and len(out.splitlines()) == 1):  # nothing from the node: maybe no node
            self._fail_if_not_running(docker_said[-1] if docker_said else stderr, cut=rc >= 128 or bool(docker_said))
        return rc, stdout, stderr

    def put_file(self, in_path, out_path):
        try:
            super().put_file(in_path, out_path)
        except AnsibleFileNotFound:
            raise
        except AnsibleError as exc:
            self._fail_if_not_running(str(exc), cut=transfer_cut(str(exc)))
            raise

    def fetch_file(self, in_path, out_path):
        try:
            super().fetch_file(in_path, out_path)
        except AnsibleError as exc:
            self._fail_if_not_running(str(exc), cut=transfer_cut(str(exc)))
            raise

    def _fail_if_not_running(self, error, cut=False) -> None:
        """Raise the connection failure when the container is not running; return when it runs (cut: the exec was
        ended from outside, so a container still shown running is asked again for KILL_GRACE_S)."""
        container = self.get_option("remote_addr")
        deadline = time.monotonic() + (KILL_GRACE_S if cut else 0)
        while True:
            command = [self.docker_cmd, *docker_args(self.get_option("docker_extra_args")), "inspect", "--format",
                       "{{.State.Status}}", container]
            state = subprocess.run(command, capture_output=True, text=True, check=False)
            status = state.stdout.strip()
            if not (state.returncode == 0 and status == "running"):
                break
            if time.monotonic() >= deadline:
                return
            time.sleep(0.2)
        said = to_text(error, errors="surrogate_or_replace").strip().splitlines()
        raise AnsibleConnectionFailure(f"container {container} is not running ({status or 'no such container'})"
                                       + (f": {said[-1]}" if said else ""))
