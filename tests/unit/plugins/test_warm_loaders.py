"""tfprov.gpu.warm_loaders: a collection's connection plugin loaded once, before the workers fork, not by each. The
end-to-end test runs ansible-playbook with a connection plugin of a throw-away collection and counts, in Ansible's
debug lines, how often the plugin's settings were parsed once the tasks had begun (each worker's doing)."""

import os
import subprocess
import sys
import types
from pathlib import Path

from ansible import constants as C
from ansible_collections.tfprov.gpu.plugins.callback import warm_loaders

ROOT = Path(__file__).resolve().parents[3]


def play(connection="ssh", become_method="sudo"):
    return types.SimpleNamespace(connection=connection, become_method=become_method)


def holder(**variables):
    return types.SimpleNamespace(vars=variables)


def test_the_names_come_from_the_play_the_hosts_the_groups_and_the_extra_vars():
    hosts = [holder(ansible_connection="tfprov.gpu.docker_exec"), holder(),
             holder(ansible_connection="{{ 'ssh' if x else 'local' }}")]  # a template: only a worker can render it
    groups = [holder(ansible_connection="amazon.aws.aws_ssm", ansible_become_method="community.general.machinectl")]
    connections, becomes = warm_loaders.plugin_names(play(), hosts, groups, {"ansible_connection": "local"})
    assert connections == {"ssh", "tfprov.gpu.docker_exec", "amazon.aws.aws_ssm", "local"}
    assert becomes == {"sudo", "community.general.machinectl"}
    assert warm_loaders.plugin_names(play(None, None), [], [], {}) == ({C.DEFAULT_TRANSPORT},
                                                                      {C.DEFAULT_BECOME_METHOD})


def test_warm_loads_the_plugins_settings_and_leaves_an_unknown_name_to_the_workers():
    """In a process of its own: the plugin loaders are global, and this one needs Ansible's collection finder."""
    code = (f"from ansible.plugins.loader import init_plugin_loader\n"
            f"init_plugin_loader([{str(ROOT / '.tfprov' / 'collections')!r}])\n"
            "from ansible import constants as C\n"
            "from ansible_collections.tfprov.gpu.plugins.callback.warm_loaders import warm\n"
            "print(warm({'tfprov.gpu.docker_exec', 'nobody.here.nosuch'}, {'sudo'}))\n"
            "print(C.config.has_configuration_definition('connection',"
            " 'ansible_collections.tfprov.gpu.plugins.connection.docker_exec'))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["['tfprov.gpu.docker_exec', 'sh', 'sudo']", "True"]


CONNECTION = '''
from ansible.plugins.connection import local

DOCUMENTATION = local.DOCUMENTATION.replace("name: local", "name: here")


class Connection(local.Connection):
    transport = "demo.conn.here"
'''


def test_the_workers_inherit_the_plugin_instead_of_loading_it_each(tmp_path):
    plugins = tmp_path / "collections" / "ansible_collections" / "demo" / "conn" / "plugins" / "connection"
    plugins.mkdir(parents=True)
    (plugins / "here.py").write_text(CONNECTION)
    (tmp_path / "inventory.yml").write_text(f"all:\n  hosts:\n    one:\n    two:\n  vars:\n"
                                            f"    ansible_connection: demo.conn.here\n"
                                            f"    ansible_python_interpreter: {sys.executable}\n")
    (tmp_path / "play.yml").write_text("- hosts: all\n  gather_facts: false\n  tasks:\n"
                                       "    - ansible.builtin.ping:\n    - ansible.builtin.ping:\n")

    def parsed_in_tasks(callbacks: str) -> int:
        """How many times the plugin's settings were parsed once the tasks began (by their workers: the main
        process warms it before the play's first task line)."""
        env = {**os.environ, "ANSIBLE_DEBUG": "1", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
               "ANSIBLE_CALLBACKS_ENABLED": callbacks, "ANSIBLE_HOME": str(tmp_path / "home"),
               "ANSIBLE_COLLECTIONS_PATH": f"{tmp_path / 'collections'}:{ROOT / '.tfprov' / 'collections'}"}
        proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "inventory.yml",
                               "play.yml"], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "ok=2" in proc.stdout
        tasks = proc.stdout[proc.stdout.index("TASK ["):]
        return tasks.count("Loaded config def from plugin (connection/ansible_collections.demo.conn.plugins"
                           ".connection.here)")

    assert parsed_in_tasks("tfprov.gpu.payload_cache") == 4  # two tasks on two hosts: each worker parses it again
    assert parsed_in_tasks("tfprov.gpu.payload_cache,tfprov.gpu.warm_loaders") == 0


def test_the_workers_inherit_ansibles_own_filters_instead_of_loading_them_each(tmp_path):
    (tmp_path / "play.yml").write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                                       "    - ansible.builtin.debug:\n        msg: \"{{ [3, 1] | min }}\"\n"
                                       "    - ansible.builtin.debug:\n        msg: \"{{ [3, 1] | max }}\"\n")

    def loaded_by_workers(callbacks: str) -> int:
        """How many times ansible-core's core filters were loaded once the tasks began (by their workers: the main
        process warms them before the play's first task line)."""
        env = {**os.environ, "ANSIBLE_DEBUG": "1", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
               "ANSIBLE_CALLBACKS_ENABLED": callbacks, "ANSIBLE_HOME": str(tmp_path / "home")}
        proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c",
                               "local", "play.yml"], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "msg: 1" in proc.stdout and "msg: 3" in proc.stdout
        tasks = proc.stdout[proc.stdout.index("TASK ["):]
        return tasks.count("Loading FilterModule 'core' from")

    assert loaded_by_workers("tfprov.gpu.payload_cache") == 2  # each task's worker loads them again
    assert loaded_by_workers("tfprov.gpu.payload_cache,tfprov.gpu.warm_loaders") == 0
