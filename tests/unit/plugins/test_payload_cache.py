"""tfprov.gpu.payload_cache: module payloads kept from one run to the next, each reused only while every file in it
is still the controller's own (its SHA-256, kept with the payload). The end-to-end test runs ansible-playbook on
localhost with a module of a throw-away collection and changes its module_utils between runs: the run after the
change must run the new code."""

import base64
import hashlib
import io
import os
import pickle
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import ansible
import pytest
from ansible_collections.tfprov.gpu.plugins.callback import payload_cache

ROOT = Path(__file__).resolve().parents[3]
BASIC = "ansible/module_utils/basic.py"
OWN_UTILS = "ansible_collections/tfprov/gpu/plugins/module_utils/node_boot.py"


def record(members: dict[str, bytes]) -> bytes:
    """A kept payload as Ansible pickles it: a record whose zip_data is the base64 of the zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as payload:
        for name, data in members.items():
            payload.writestr(name, data)
    return pickle.dumps(types.SimpleNamespace(zip_data=base64.b64encode(buffer.getvalue())))


def source(member: str) -> bytes:
    return payload_cache.controller_file(member).read_bytes()


def test_a_payload_whose_files_are_all_the_controllers_own_still_stands():
    members = {"ansible/__init__.py": b"written by Ansible for its version", BASIC: source(BASIC),
               OWN_UTILS: source(OWN_UTILS),
               "ansible_collections/tfprov/gpu/plugins/module_utils/__init__.py": b""}  # Ansible's empty package
    assert payload_cache.stands(payload_cache.manifest(record(members)), {})
    assert "ansible/__init__.py" not in payload_cache.manifest(record(members))  # Ansible writes it, per version


@pytest.mark.parametrize("change", [
    {BASIC: b"# an older basic.py\n"},  # a file changed
    {"ansible/module_utils/gone_since.py": b"x = 1\n"},  # a file that no longer exists
    {"ansible_collections/tfprov/gpu/plugins/module_utils/gone_since.py": b""},  # even empty, if not a package
    {"ansible_collections/nobody/here/plugins/module_utils/x.py": b"x = 1\n"},  # a collection not installed now
    {"ansible/module_utils/facts/__init__.py": b""},  # a package that has code now, where Ansible wrote it empty
])
def test_a_payload_with_any_file_changed_added_or_gone_does_not(change):
    members = {BASIC: source(BASIC), OWN_UTILS: source(OWN_UTILS)} | change
    assert not payload_cache.stands(payload_cache.manifest(record(members)), {})


def test_reuse_copies_what_stands_drops_what_does_not_and_keep_stores_only_named_modules(tmp_path):
    store, run_cache = tmp_path / "store", tmp_path / "run" / "ansiballz_cache"
    store.mkdir(mode=0o700)
    ping = record({BASIC: source(BASIC)})
    (store / "ansible.modules.ping-ZIP_STORED-none").write_bytes(payload_cache.entry(ping))
    (store / "ansible_collections.tfprov.gpu.plugins.modules.node_boot-ZIP_STORED-none").write_bytes(
        payload_cache.entry(record({OWN_UTILS: b"# stale\n"})))
    (store / "ansible.modules.setup-ZIP_STORED-none").write_bytes(ping)  # an older store's file: no digests
    assert payload_cache.reuse(store, run_cache) == (1, 2)
    assert sorted(path.name for path in run_cache.iterdir()) == ["ansible.modules.ping-ZIP_STORED-none"]
    assert (run_cache / "ansible.modules.ping-ZIP_STORED-none").read_bytes() == ping  # Ansible's record, as built
    assert sorted(path.name for path in store.iterdir()) == ["ansible.modules.ping-ZIP_STORED-none"]

    for name in ("ansible.legacy.my_module-ZIP_STORED-none",  # a bare name: another project's file, maybe
                 "ansible.modules.apt-ZIP_STORED-none.lock", "ansible.modules.setup-ZIP_STORED-none-part",
                 "ansible.modules.apt-ZIP_STORED-none"):
        (run_cache / name).write_bytes(record({BASIC: source(BASIC)}))
    (run_cache / "ansible.modules.copy-ZIP_STORED-none").write_bytes(b"not a record")  # not kept
    assert payload_cache.keep(run_cache, store) == 1
    assert sorted(path.name for path in store.iterdir()) == [
        "ansible.modules.apt-ZIP_STORED-none", "ansible.modules.ping-ZIP_STORED-none"]
    files, kept = payload_cache.parse((store / "ansible.modules.apt-ZIP_STORED-none").read_bytes())
    assert kept == (run_cache / "ansible.modules.apt-ZIP_STORED-none").read_bytes()
    assert files == {BASIC: hashlib.sha256(source(BASIC)).hexdigest()}


def test_a_store_others_can_write_to_is_not_read(tmp_path):
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "ansible.modules.ping-ZIP_STORED-none").write_bytes(payload_cache.entry(record({BASIC: source(BASIC)})))
    store.chmod(0o777)
    assert payload_cache.reuse(store, tmp_path / "run") == (0, 0)
    assert payload_cache.reuse(tmp_path / "none", tmp_path / "run") == (0, 0)


ECHO = '''from ansible.module_utils.basic import AnsibleModule
from ansible_collections.demo.cache.plugins.module_utils.word import WORD

AnsibleModule(argument_spec={}).exit_json(changed=False, word=WORD)
'''
PLAY = """- hosts: localhost
  gather_facts: false
  tasks:
    - demo.cache.echo:
      register: said
    - ansible.builtin.debug:
        msg: "said {{ said.word }}"
"""


def test_a_run_after_a_module_utils_change_runs_the_new_code(tmp_path):
    collection = tmp_path / "collections" / "ansible_collections" / "demo" / "cache"
    (collection / "plugins" / "modules").mkdir(parents=True)
    (collection / "plugins" / "module_utils").mkdir()
    (collection / "plugins" / "modules" / "echo.py").write_text(ECHO)
    word = collection / "plugins" / "module_utils" / "word.py"
    (tmp_path / "play.yml").write_text(PLAY)
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / "home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
           "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_CALLBACKS_ENABLED": "tfprov.gpu.payload_cache",
           "ANSIBLE_COLLECTIONS_PATH": f"{tmp_path / 'collections'}:{ROOT / '.tfprov' / 'collections'}"}

    def run():
        proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-vvv", "-i", "localhost,",
                               "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
                               str(tmp_path / "play.yml")], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        lines = [line.strip() for line in proc.stdout.splitlines()]
        said = next(line for line in lines if line.startswith("msg: said "))  # ansible.cfg: results as YAML
        return said.split("said ")[1], next(line for line in lines if "module payloads reused" in line)

    word.write_text('WORD = "one"\n')
    assert run() == ("one", f"payload_cache: 0 module payloads reused, 0 rebuilt "
                            f"({tmp_path / 'home' / 'tfprov' / 'payloads' / ansible.__version__})")
    assert run()[0] == "one"
    assert " 1 module payloads reused, 0 rebuilt" in run()[1]

    word.write_text('WORD = "two"\n')  # the kept payload holds "one": it must not run again
    found, said = run()
    assert found == "two" and " 0 module payloads reused, 1 rebuilt" in said
    assert run() == ("two", said.replace("0 module payloads reused, 1 rebuilt", "1 module payloads reused, 0 rebuilt"))
