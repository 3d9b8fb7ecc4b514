"""tfprov.gpu.template_code: the code Jinja compiles for a template or conditional, stored and loaded instead of
compiled again, and compiled again whenever what it was compiled against changed. Each case runs Ansible's own
Templar in a process of its own (the wrapper patches Ansible's environment class, and the plugin loaders are
global); the last runs ansible-playbook twice, the collection's filter changing its calling convention between."""

import json
import marshal
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

from ansible._internal._templating._jinja_bits import AnsibleEnvironment
from ansible_collections.tfprov.gpu.plugins.callback import template_code

ROOT = Path(__file__).resolve().parents[3]
COLLECTIONS = ROOT / ".tfprov" / "collections"

# Renders each template and conditional given as arguments in a fresh Templar (as each task's worker does), with the
# wrapper on a store; prints each result and how many strings Jinja generated code for.
RENDER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from ansible.plugins.loader import init_plugin_loader
    init_plugin_loader(sys.argv[2].split(":"))
    from ansible.template import Templar, trust_as_template
    from ansible._internal._templating._jinja_bits import AnsibleEnvironment
    from ansible_collections.tfprov.gpu.plugins.callback import template_code
    assert template_code.install(template_code.open_store(Path(sys.argv[1])))
    generate, generated = AnsibleEnvironment._generate, []
    def counting(self, *args, **kwargs):
        generated.append(1)
        return generate(self, *args, **kwargs)
    AnsibleEnvironment._generate = counting
    out = []
    for kind, text in json.loads(sys.argv[3]):
        templar = Templar(variables={"x": 2, "names": ["b", "a"]})
        try:
            if kind == "template":
                out.append(templar.template(trust_as_template(text)))
            else:
                out.append(templar.evaluate_conditional(trust_as_template(text)))
        except Exception as exc:
            out.append(f"error: {exc}")
    print(json.dumps({"out": out, "generated": len(generated)}))
""")


def render(store: Path, strings: list[tuple[str, str]], collections: Path | None = None) -> dict:
    paths = ":".join(str(path) for path in (collections, COLLECTIONS) if path)
    proc = subprocess.run([sys.executable, "-c", RENDER, str(store), paths, json.dumps(strings)], capture_output=True,
                          text=True, env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


STRINGS = [("template", "{{ x * 21 }} {{ names | sort | join(',') }}"), ("conditional", "x is number and x > 1")]


def test_a_string_compiled_once_is_loaded_not_compiled_again(tmp_path):
    store = tmp_path / "store"
    first = render(store, STRINGS)
    assert first == {"out": ["42 a,b", True], "generated": 2}
    assert len([path for path in store.iterdir() if not path.name.startswith(".")]) == 2
    assert render(store, STRINGS) == {"out": ["42 a,b", True], "generated": 0}  # a later run (or worker)
    assert render(store, STRINGS + [("template", "{{ x }}")])["generated"] == 1  # only the new string


def test_a_record_that_does_not_load_is_compiled_again_and_replaced(tmp_path):
    store = tmp_path / "store"
    render(store, STRINGS)
    records = sorted(store.iterdir())
    records[0].write_bytes(b"not a record")
    records[1].write_bytes(marshal.dumps((5, "not code")))  # loads, but not as a record
    assert render(store, STRINGS) == {"out": ["42 a,b", True], "generated": 2}
    assert render(store, STRINGS)["generated"] == 0


PLAIN = """
def shout(value):
    return str(value).upper() + "!"
"""
# Jinja passes it the environment first: code compiled for the plain one would call it with the value alone.
TAKES_ENVIRONMENT = """
from jinja2 import Environment, pass_environment


@pass_environment
def shout(environment, value):
    assert isinstance(environment, Environment)
    return str(value).upper() + "!"
"""
FILTERS = """

class FilterModule:
    def filters(self):
        return {"shout": shout}
"""


def demo_filter(root: Path, source: str = PLAIN) -> Path:
    plugins = root / "ansible_collections" / "demo" / "talk" / "plugins" / "filter"
    plugins.mkdir(parents=True, exist_ok=True)
    (plugins / "shout.py").write_text(source + FILTERS)
    return root


def test_a_filter_that_now_takes_the_environment_or_is_gone_gets_its_strings_compiled_again(tmp_path):
    """Jinja writes into the code whether a filter is passed the environment: a stored code must not outlive it."""
    store, strings = tmp_path / "store", [("template", "{{ 'hi' | demo.talk.shout }}")]
    collections = demo_filter(tmp_path / "collections")
    assert render(store, strings, collections) == {"out": ["HI!"], "generated": 1}
    assert render(store, strings, collections)["generated"] == 0
    demo_filter(collections, TAKES_ENVIRONMENT)
    assert render(store, strings, collections) == {"out": ["HI!"], "generated": 1}
    (collections / "ansible_collections" / "demo" / "talk" / "plugins" / "filter" / "shout.py").unlink()
    gone = render(store, strings, collections)
    assert gone["generated"] == 1 and gone["out"][0].startswith("error: ") and "shout" in gone["out"][0]


def test_the_key_changes_with_the_string_its_kind_and_the_syntax():
    env = AnsibleEnvironment()
    keys = {template_code.key(env, "template", "{{ x }}"), template_code.key(env, "expression:False", "{{ x }}"),
            template_code.key(env.overlay(variable_start_string="<<"), "template", "{{ x }}"),
            template_code.key(env, "template", "{{ y }}")}
    assert len(keys) == 4
    assert template_code.key(env, "template", "{{ x }}") == template_code.key(AnsibleEnvironment(), "template",
                                                                              "{{ x }}")


def test_a_store_others_can_write_to_is_not_used(tmp_path):
    store = tmp_path / "store"
    assert template_code.open_store(store) == store
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    store.chmod(0o777)
    assert template_code.open_store(store) is None


def test_the_oldest_records_go_when_the_store_is_over_its_size(tmp_path):
    for number in range(6):
        record = tmp_path / f"{number:064x}"
        record.write_bytes(b"x")
        os.utime(record, (1_000_000 + number, 1_000_000 + number))
    (tmp_path / ".part-left-by-a-killed-worker").write_bytes(b"x")
    os.utime(tmp_path / ".part-left-by-a-killed-worker", (1_000_000, 1_000_000))
    (tmp_path / ".part-being-written").write_bytes(b"x")
    assert template_code.prune(tmp_path, keep=4) == 3
    assert sorted(path.name[-1] for path in tmp_path.iterdir()) == ["2", "3", "4", "5", "n"]


PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Say it
      ansible.builtin.debug:
        msg: "said {{ 'it' | demo.talk.shout }}"
      when: "'it' | demo.talk.shout == 'IT!'"
"""


def test_a_playbook_run_after_its_filter_changed_says_the_same(tmp_path):
    """Through ansible-playbook: the callback in the main process, the templates compiled in the workers."""
    collections = demo_filter(tmp_path / "collections")
    (tmp_path / "play.yml").write_text(PLAY)

    def run() -> str:
        env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_HOME": str(tmp_path / "home"),
               "ANSIBLE_CALLBACKS_ENABLED": "tfprov.gpu.template_code",
               "ANSIBLE_COLLECTIONS_PATH": f"{collections}:{COLLECTIONS}"}
        proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c",
                               "local", "play.yml"], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout

    assert "msg: said IT!" in run()
    store = next((tmp_path / "home" / "tfprov" / "template-code").iterdir())
    assert len(list(store.iterdir())) >= 2  # the message and the conditional, at least
    demo_filter(collections, TAKES_ENVIRONMENT)
    assert "msg: said IT!" in run()
