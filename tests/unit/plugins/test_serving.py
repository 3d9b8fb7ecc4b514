"""TF Serving settings: module_utils/serving.py (pure) and the tfprov.gpu.serving_models action on real directories."""

import json
from pathlib import Path
from unittest.mock import MagicMock

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible_collections.tfprov.gpu.plugins.action.serving_models import ActionModule
from ansible_collections.tfprov.gpu.plugins.module_utils import serving
from ansible_collections.tfprov.gpu.plugins.module_utils.serving import ServingError

MATRIX = serving.serving_matrix()
NEWEST = sorted(MATRIX["releases"], key=lambda v: tuple(int(p) for p in v.split(".")))[-1]


def make_model(root, versions=(1,), name="digits", pb=True):
    base = Path(root) / name
    base.mkdir(parents=True, exist_ok=True)
    for version in versions:
        vdir = base / str(version)
        (vdir / "variables").mkdir(parents=True, exist_ok=True)
        (vdir / "variables" / "variables.index").write_bytes(b"x")
        if pb:
            (vdir / "saved_model.pb").write_bytes(b"pb")
    return str(base)


def run_action(args, check_mode=False):
    task = MagicMock(args=args, async_val=0, check_mode=check_mode, diff=False)
    action = ActionModule(task, MagicMock(), PlayContext(), loader=DataLoader(), templar=None,
                          shared_loader_obj=None)
    return action.run(task_vars={})


def base_args(models, **extra):
    args = {"models": models, "version": "", "image": "", "gpu": False, "network_mode": "bridge",
            "bind_address": "10.0.0.5", "grpc_port": 8500, "rest_port": 8501, "listeners": [], "node": "node1",
            "cache_dir": "/nonexistent-cache"}
    args.update(extra)
    return args


# -- release ---------------------------------------------------------------------------------------------------


def test_release_newest_minor_and_exact():
    newest = serving.resolve_release(MATRIX)
    assert newest["minor"] == NEWEST
    assert newest["image"] == "tensorflow/serving:{}".format(MATRIX["releases"][NEWEST]["latest_patch"])
    assert serving.resolve_release(MATRIX, "2.14", gpu=True)["image"] == "tensorflow/serving:2.14.1-gpu"
    assert serving.resolve_release(MATRIX, "2.14.0")["version"] == "2.14.0"
    assert serving.resolve_release(MATRIX, "", "tfprov/serving-stand-in:2.21.0")["image"] == \
        "tfprov/serving-stand-in:2.21.0"
    assert "s3" not in newest["filesystems"] and "gs" in newest["filesystems"]


def test_unknown_release_lists_the_known_ones():
    with pytest.raises(ServingError, match=r"^TF Serving 1.15 is not in the compatibility matrix \(known: 2.12, "):
        serving.resolve_release(MATRIX, "1.15")


# -- network ---------------------------------------------------------------------------------------------------


def test_host_mode_needs_every_address_asked_for():
    with pytest.raises(ServingError, match="^tf_serving_network_mode host makes TF Serving listen on every address "
                                           "of the node, not only 10.0.0.5: set tf_serving_bind_address to 0.0.0.0"):
        serving.check_network("host", "10.0.0.5", 8500, 8501)
    serving.check_network("host", "0.0.0.0", 8500, 8501)
    serving.check_network("bridge", "10.0.0.5", 8500, 8501)


def test_grpc_port_equal_to_rest_port():
    with pytest.raises(ServingError, match="^tf_serving_grpc_port and tf_serving_rest_port are both 8500: give them "
                                           "different ports$"):
        serving.check_network("bridge", "10.0.0.5", 8500, 8500)


@pytest.mark.parametrize("port", [0, 70000, "8500", True])
def test_bad_ports(port):
    with pytest.raises(ServingError, match="give a TCP port"):
        serving.check_network("bridge", "10.0.0.5", port, 8501)


# -- models ----------------------------------------------------------------------------------------------------


def test_unknown_scheme():
    with pytest.raises(ServingError, match=r"^model m: source hdfs://nn/models/m uses an unknown scheme; use a local "
                                           r"path, gs:// or s3://$"):
        serving.normalize_models([{"name": "m", "source": "hdfs://nn/models/m"}])


def test_two_models_with_one_name():
    with pytest.raises(ServingError, match="^two models are named m in tf_serving_models: give each its own name$"):
        serving.normalize_models([{"name": "m", "source": "/a"}, {"name": "m", "source": "/b"}])


@pytest.mark.parametrize("name", ["", "a b", "-x", "x/y", None])
def test_bad_names(name):
    with pytest.raises(ServingError, match=r"^tf_serving_models\[0\]: name .*: use letters, digits"):
        serving.normalize_models([{"name": name, "source": "/a"}])


def test_empty_models_and_unknown_keys():
    with pytest.raises(ServingError, match="^tf_serving_models is empty"):
        serving.normalize_models([])
    with pytest.raises(ServingError, match="^model m: unknown key path"):
        serving.normalize_models([{"name": "m", "source": "/a", "path": "/b"}])


@pytest.mark.parametrize("model, what", [
    ({"version_policy": "specific", "versions": [1, "v2"]}, "version 'v2'"),
    ({"version_policy": "specific", "versions": [1.5]}, "version 1.5"),
    ({"labels": {"stable": "latest"}}, "label stable version 'latest'"),
])
def test_non_numeric_versions(model, what):
    model.update(name="m", source="/srv/m")
    with pytest.raises(ServingError, match=f"^model m: {what} is not a version number; versions are the numeric "
                                           "directory names under /srv/m$"):
        serving.normalize_models([model])


def test_policy_shapes():
    with pytest.raises(ServingError, match="^model m: version_policy 'newest': use latest, specific or all$"):
        serving.normalize_models([{"name": "m", "source": "/a", "version_policy": "newest"}])
    with pytest.raises(ServingError, match="with version_policy latest give how many"):
        serving.normalize_models([{"name": "m", "source": "/a", "versions": 0}])
    with pytest.raises(ServingError, match="version_policy specific needs versions"):
        serving.normalize_models([{"name": "m", "source": "/a", "version_policy": "specific"}])


@pytest.mark.parametrize("policy, versions, expected", [
    ("latest", 1, [7]), ("latest", 2, [3, 7]), ("latest", 9, [1, 3, 7]), ("all", None, [1, 3, 7]),
    ("specific", [1, 3], [1, 3]),
])
def test_policy_gives_expected_versions(policy, versions, expected):
    assert serving.expected_versions(policy, versions, [7, 1, 3]) == expected


def files(*paths):
    return {p: {"size": 1, "md5": None} for p in paths}


def one(model, **over):
    model = dict({"name": "m", "source": "/srv/m"}, **model)
    return serving.normalize_models([model])[0]


def test_no_numeric_version_directory():
    with pytest.raises(ServingError, match=r"^model m: no numeric version directory under /srv/m \(TF Serving would "
                                           r"log 'No versions of servable m found under base path'\)$"):
        serving.plan_model(one({}), files("saved_model.pb", "variables/variables.index", "v1/saved_model.pb"))


def test_version_without_saved_model():
    with pytest.raises(ServingError, match="^model m: /srv/m/2 has no saved_model.pb"):
        serving.plan_model(one({}), files("1/saved_model.pb", "2/variables/variables.index"))


def test_specific_version_not_present():
    with pytest.raises(ServingError, match=r"^model m: version 4 is not under /srv/m \(found: 1, 2\)$"):
        serving.plan_model(one({"version_policy": "specific", "versions": [1, 4]}),
                           files("1/saved_model.pb", "2/saved_model.pb"))


def test_labels_must_point_to_served_versions():
    model = one({"labels": {"stable": 3}})
    with pytest.raises(ServingError, match=r"^model m: label stable points to version 3, which is not under"):
        serving.plan_model(model, files("1/saved_model.pb", "2/saved_model.pb"))
    model = one({"labels": {"stable": 1}})
    with pytest.raises(ServingError, match=r"which version_policy latest does not serve \(serves 2\)$"):
        serving.plan_model(model, files("1/saved_model.pb", "2/saved_model.pb"))


def test_plan_of_a_synced_model():
    model = one({"version_policy": "latest", "versions": 2, "labels": {"stable": 2, "canary": 10}})
    plan = serving.plan_model(model, files("1/saved_model.pb", "2/saved_model.pbtxt", "10/saved_model.pb",
                                           "README", "tmp/x"))
    assert plan["base_path"] == "/models/m" and plan["available"] == [1, 2, 10] and plan["expected"] == [2, 10]
    assert plan["version_dirs"] == ["1", "2", "10"] and plan["local_path"] == "/srv/m"


def test_s3_without_sync_is_refused_naming_the_issue():
    release = serving.resolve_release(MATRIX)
    model = one({"source": "s3://bucket/models/m", "sync": False})
    with pytest.raises(ServingError, match=r"^model m: TF Serving \S+ cannot read s3://bucket/models/m itself \(S3 "
                                           r"support left TF Serving with TensorFlow 2.6, tensorflow/serving#1963\): "
                                           r"set sync: true"):
        serving.check_filesystem(model, release)
    serving.check_filesystem(one({"source": "gs://bucket/m", "sync": False}), release)
    serving.check_filesystem(one({"source": "s3://bucket/m"}), release)


def test_gs_without_sync_reads_the_bucket():
    model = one({"source": "gs://bucket/m", "sync": False})
    plan = serving.plan_model(model, files("1/saved_model.pb"), "/cache/gs/bucket/abc")
    assert plan["base_path"] == "gs://bucket/m"


def test_models_config_text():
    plans = [serving.plan_model(one({"labels": {"stable": 2}, "versions": 2}), files("1/saved_model.pb",
                                                                                    "2/saved_model.pb")),
             serving.plan_model(one({"name": "b", "version_policy": "specific", "versions": [1, 3]}),
                                files("1/saved_model.pb", "3/saved_model.pb")),
             serving.plan_model(one({"name": "c", "version_policy": "all"}), files("5/saved_model.pb"))]
    assert serving.render_models_config(plans) == """model_config_list {
  config {
    name: "m"
    base_path: "/models/m"
    model_platform: "tensorflow"
    model_version_policy { latest { num_versions: 2 } }
    version_labels { key: "stable" value: 2 }
  }
  config {
    name: "b"
    base_path: "/models/b"
    model_platform: "tensorflow"
    model_version_policy { specific { versions: 1 versions: 3 } }
  }
  config {
    name: "c"
    base_path: "/models/c"
    model_platform: "tensorflow"
    model_version_policy { all {} }
  }
}
"""


def test_models_config_matches_the_role_template():
    """The role writes models.config from its Jinja template: it must say the same as the Python rendering."""
    from jinja2 import Environment, FileSystemLoader

    root = Path(__file__).resolve().parents[3]
    env = Environment(loader=FileSystemLoader(str(root / "roles" / "tf_serving" / "templates")),
                      keep_trailing_newline=True, trim_blocks=True)
    plans = [serving.plan_model(one({"labels": {"stable": 2, "a": 1}, "versions": 2}),
                                files("1/saved_model.pb", "2/saved_model.pb")),
             serving.plan_model(one({"name": "b", "version_policy": "specific", "versions": [1, 3]}),
                                files("1/saved_model.pb", "3/saved_model.pb")),
             serving.plan_model(one({"name": "c", "version_policy": "all"}), files("5/saved_model.pb"))]
    text = env.get_template("models.config.j2").render(__tf_serving_plans=plans, ansible_managed="managed")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#")) + "\n"
    assert body == serving.render_models_config(plans)


# -- ports -----------------------------------------------------------------------------------------------------

LISTENERS = [
    {"port": 22, "address": "0.0.0.0", "pid": 10, "process": "sshd", "ours": False},
    {"port": 8501, "address": "0.0.0.0", "pid": 123, "process": "nginx", "ours": False},
    {"port": 8500, "address": "::", "pid": 300, "process": "tensorflow_mode", "ours": True},
    {"port": 9000, "address": "127.0.0.1", "pid": None, "process": None, "ours": False},
]


def test_port_held_by_another_process():
    problems = serving.port_clashes(LISTENERS, {"tf_serving_grpc_port": 8500, "tf_serving_rest_port": 8501},
                                    "10.0.0.5", "node1")
    assert problems == ["port 8501 on node node1 is in use by nginx (pid 123): set tf_serving_rest_port"]


def test_port_of_our_container_and_other_addresses_are_fine():
    assert serving.port_clashes(LISTENERS, {"tf_serving_grpc_port": 8500, "tf_serving_rest_port": 9000},
                                "10.0.0.5", "n") == []
    assert serving.port_clashes(LISTENERS, {"tf_serving_grpc_port": 8500, "tf_serving_rest_port": 9000},
                                "0.0.0.0", "n") == [
        "port 9000 on node n is in use by a process this user cannot see (another user's, or outside the node's "
        "process namespace): set tf_serving_rest_port"]


# -- the action, on real directories ---------------------------------------------------------------------------


def test_action_plans_a_local_model(tmp_path):
    source = make_model(tmp_path, versions=(1, 2))
    sample = tmp_path / "sample.json"
    sample.write_text(json.dumps({"instances": [[0.0] * 64]}))
    result = run_action(base_args([{"name": "digits", "source": source, "sample_input": str(sample)}]))
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is False
    plan = result["models"][0]
    assert plan["expected"] == [2] and plan["scheme"] == "file" and plan["sample_input"] == {"instances": [[0.0] * 64]}
    assert result["release"]["image"].startswith("tensorflow/serving:")
    assert 'base_path: "/models/digits"' in result["models_config"]


@pytest.mark.parametrize("setup, message", [
    (lambda p: str(p / "absent"), "^model digits: source {root}/absent does not exist on the controller$"),
    (lambda p: make_model(p, versions=()), r"^model digits: no numeric version directory under {root}/digits "),
    (lambda p: make_model(p, versions=(1,), pb=False), "^model digits: {root}/digits/1 has no saved_model.pb"),
])
def test_action_refusals_name_the_path(tmp_path, setup, message):
    source = setup(tmp_path)
    (tmp_path / "digits").mkdir(exist_ok=True)
    result = run_action(base_args([{"name": "digits", "source": source}]))
    assert result["failed"] is True and result["changed"] is False and "models" not in result
    assert __import__("re").match(message.format(root=tmp_path), result["msg"]), result["msg"]


def test_action_refuses_a_port_clash(tmp_path):
    source = make_model(tmp_path)
    result = run_action(base_args([{"name": "digits", "source": source}], listeners=LISTENERS, node="n1"))
    assert result["failed"] and result["msg"] == "port 8501 on node n1 is in use by nginx (pid 123): set " \
                                                 "tf_serving_rest_port"


def test_action_refuses_a_sample_that_is_not_a_predict_body(tmp_path):
    source = make_model(tmp_path)
    result = run_action(base_args([{"name": "digits", "source": source, "sample_input": {"pixels": [1]}}]))
    assert result["failed"] and result["msg"].startswith("model digits: sample_input is not a :predict body")


def test_action_lists_s3_through_the_sources_library(tmp_path, monkeypatch):
    from ansible_collections.tfprov.gpu.plugins.action import serving_models as plugin

    calls = []

    def fake_list(source, **options):
        calls.append((source, options))
        return files("1/saved_model.pb", "1/variables/variables.index")

    monkeypatch.setattr(plugin.model_sources, "list_files", fake_list)
    result = run_action(base_args([{"name": "r", "source": "s3://bucket/models/r"}],
                                  s3_endpoint_url="http://127.0.0.1:5000", cache_dir=str(tmp_path)))
    assert not result.get("failed"), result.get("msg")
    assert calls == [("s3://bucket/models/r", {"s3_endpoint_url": "http://127.0.0.1:5000", "gcs_endpoint": None,
                                               "gcs_anonymous": False})]
    assert result["models"][0]["local_path"].startswith(str(tmp_path / "s3" / "bucket"))


def test_action_refuses_s3_without_sync_before_listing(monkeypatch):
    from ansible_collections.tfprov.gpu.plugins.action import serving_models as plugin

    monkeypatch.setattr(plugin.model_sources, "list_files", MagicMock(side_effect=AssertionError("listed")))
    result = run_action(base_args([{"name": "r", "source": "s3://bucket/r", "sync": False}]))
    assert result["failed"] and "tensorflow/serving#1963" in result["msg"]


def test_batching_settings():
    serving.check_batching({})
    serving.check_batching({"max_batch_size": 32, "batch_timeout_micros": "1000"})
    with pytest.raises(ServingError, match="^tf_serving_batching: unknown key max_batch \\(known: max_batch_size"):
        serving.check_batching({"max_batch": 3})
    with pytest.raises(ServingError, match="^tf_serving_batching.num_batch_threads is 0: give a positive integer$"):
        serving.check_batching({"num_batch_threads": 0})


def test_action_local_paths_are_absolute(tmp_path, monkeypatch):
    make_model(tmp_path)
    monkeypatch.chdir(tmp_path)
    for source in ("digits", "file://" + str(tmp_path / "digits")):
        result = run_action(base_args([{"name": "digits", "source": source}]))
        assert not result.get("failed"), result.get("msg")
        assert result["models"][0]["local_path"] == str(tmp_path / "digits")
