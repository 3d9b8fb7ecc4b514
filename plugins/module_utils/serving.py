# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""TF Serving on a node: the release from the matrix, the models list checked, the ports checked.

Pure logic (no I/O but the matrix read): the action plugin tfprov.gpu.serving_models feeds it the user's settings,
the listings of the model sources and the node's listening sockets. Every refusal is a ServingError whose message
is one line naming the model, path or port and saying what to change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.tfprov.gpu.plugins.module_utils import compat

SCHEMES = ("file", "gs", "s3")
POLICIES = ("latest", "specific", "all")
# Model names end up in REST paths (/v1/models/<name>) and in a directory name on the node.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
LABEL_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
S3_ISSUE = "tensorflow/serving#1963"


class ServingError(Exception):
    """A setting that cannot work; the message is one line saying what to change."""


# -- the release -----------------------------------------------------------------------------------------------


def serving_matrix(path=None):
    """The matrix's tf_serving section (image_repository, releases {major.minor: {latest_patch, filesystems}})."""
    section = (compat.load_matrix(path) or {}).get("tf_serving")
    if not section or not section.get("releases"):
        raise ServingError("the compatibility matrix has no tf_serving section")
    return section


def resolve_release(section, version="", image="", gpu=False):
    """{version, minor, image, filesystems} for '' (newest), a major.minor or an exact version."""
    releases = section["releases"]
    known = sorted(releases, key=compat.version_tuple)
    version = str(version or "").strip()
    minor = known[-1] if not version else ".".join(version.split(".")[:2])
    if minor not in releases or not re.match(r"^\d+\.\d+(\.\d+)?$", version or minor):
        raise ServingError("TF Serving %s is not in the compatibility matrix (known: %s); set tf_serving_version"
                           % (version, ", ".join(known)))
    row = releases[minor]
    exact = version if version.count(".") == 2 else row["latest_patch"]
    tag = exact + ("-gpu" if gpu else "")
    return {"version": exact, "minor": minor, "filesystems": list(row.get("filesystems") or ["file"]),
            "image": image or "%s:%s" % (section["image_repository"], tag)}


# -- settings that do not depend on the models -----------------------------------------------------------------


def check_network(network_mode, bind_address, grpc_port, rest_port):
    if network_mode not in ("bridge", "host"):
        raise ServingError("tf_serving_network_mode is '%s': use bridge or host" % network_mode)
    if network_mode == "host" and bind_address != "0.0.0.0":
        raise ServingError("tf_serving_network_mode host makes TF Serving listen on every address of the node, not "
                           "only %s: set tf_serving_bind_address to 0.0.0.0 to accept that, or use bridge"
                           % (bind_address or "the bind address"))
    if not bind_address:
        raise ServingError("tf_serving_bind_address is empty (the node has no default IPv4 address): set it")
    for what, port in (("tf_serving_grpc_port", grpc_port), ("tf_serving_rest_port", rest_port)):
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise ServingError("%s is %r: give a TCP port (1-65535)" % (what, port))
    if grpc_port == rest_port:
        raise ServingError("tf_serving_grpc_port and tf_serving_rest_port are both %s: give them different ports"
                           % grpc_port)


BATCHING_KEYS = ("max_batch_size", "batch_timeout_micros", "num_batch_threads", "max_enqueued_batches")


def check_batching(batching):
    """{} (off) or positive integers for TF Serving's batching parameters."""
    if not isinstance(batching, dict):
        raise ServingError("tf_serving_batching must be a mapping ({} = off)")
    for key, value in batching.items():
        if key not in BATCHING_KEYS:
            raise ServingError("tf_serving_batching: unknown key %s (known: %s)" % (key, ", ".join(BATCHING_KEYS)))
        if isinstance(value, bool) or not re.match(r"^\d+$", str(value)) or int(value) < 1:
            raise ServingError("tf_serving_batching.%s is %r: give a positive integer" % (key, value))


# -- the models ------------------------------------------------------------------------------------------------


def source_scheme(name, source):
    """file, gs or s3 for a model's source; a refusal for anything else."""
    text = str(source or "").strip()
    if not text:
        raise ServingError("model %s: no source: give a local path, gs://bucket/prefix or s3://bucket/prefix" % name)
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", text)
    scheme = match.group(1).lower() if match else "file"
    if scheme not in SCHEMES:
        raise ServingError("model %s: source %s uses an unknown scheme; use a local path, gs:// or s3://"
                           % (name, text))
    return scheme


def _version_number(name, what, value, source):
    text = str(value).strip()
    if isinstance(value, bool) or not re.match(r"^\d+$", text):
        raise ServingError("model %s: %s %r is not a version number; versions are the numeric directory names "
                           "under %s" % (name, what, value, source))
    return int(text)


def normalize_model(model, index):
    """The model's settings checked and completed with their defaults (no listing needed)."""
    if not isinstance(model, dict):
        raise ServingError("tf_serving_models[%d] is not a mapping with name and source" % index)
    unknown = sorted(set(model) - {"name", "source", "version_policy", "versions", "labels", "sync", "sample_input"})
    name = str(model.get("name") or "")
    if not NAME_RE.match(name):
        raise ServingError("tf_serving_models[%d]: name %r: use letters, digits, '.', '_' and '-' (a letter or "
                           "digit first)" % (index, model.get("name")))
    if unknown:
        raise ServingError("model %s: unknown key %s (known: name, source, version_policy, versions, labels, sync, "
                           "sample_input)" % (name, unknown[0]))
    source = str(model.get("source") or "").strip()
    scheme = source_scheme(name, source)
    policy = model.get("version_policy") or "latest"
    if policy not in POLICIES:
        raise ServingError("model %s: version_policy %r: use latest, specific or all" % (name, policy))
    versions = model.get("versions")
    if policy == "latest":
        versions = 1 if versions in (None, "") else versions
        if isinstance(versions, bool) or not re.match(r"^\d+$", str(versions)) or int(versions) < 1:
            raise ServingError("model %s: versions %r: with version_policy latest give how many (1 or more)"
                               % (name, versions))
        versions = int(versions)
    elif policy == "specific":
        if not isinstance(versions, list) or not versions:
            raise ServingError("model %s: version_policy specific needs versions: a list of version numbers"
                               % name)
        versions = sorted(set(_version_number(name, "version", v, source) for v in versions))
    else:
        versions = None
    labels = model.get("labels") or {}
    if not isinstance(labels, dict):
        raise ServingError("model %s: labels must map a label to a version ({stable: 1})" % name)
    checked = {}
    for label, version in labels.items():
        if not LABEL_RE.match(str(label)):
            raise ServingError("model %s: label %r: use letters, digits, '_' and '-'" % (name, label))
        checked[str(label)] = _version_number(name, "label %s version" % label, version, source)
    sync = model.get("sync", True)
    if not isinstance(sync, bool):
        raise ServingError("model %s: sync %r: use true or false" % (name, sync))
    return {"name": name, "source": source, "scheme": scheme, "version_policy": policy, "versions": versions,
            "labels": checked, "sync": sync, "sample_input": model.get("sample_input")}


def normalize_models(models):
    if not isinstance(models, list) or not models:
        raise ServingError("tf_serving_models is empty: give at least one model ({name, source})")
    result, seen = [], set()
    for index, model in enumerate(models):
        checked = normalize_model(model, index)
        if checked["name"] in seen:
            raise ServingError("two models are named %s in tf_serving_models: give each its own name"
                               % checked["name"])
        seen.add(checked["name"])
        result.append(checked)
    return result


def check_filesystem(model, release):
    """sync false: the server reads the source itself, so its release must read that scheme."""
    if model["sync"]:
        return
    if model["scheme"] == "file":
        raise ServingError("model %s: sync false needs a gs:// source the server reads itself; a local path is "
                           "always copied to the node (set sync: true)" % model["name"])
    if model["scheme"] not in release["filesystems"]:
        extra = (" (S3 support left TF Serving with TensorFlow 2.6, %s)" % S3_ISSUE) if model["scheme"] == "s3" else ""
        raise ServingError("model %s: TF Serving %s cannot read %s itself%s: set sync: true to copy it to the node"
                           % (model["name"], release["version"], model["source"], extra))


def expected_versions(policy, versions, available):
    """The versions the server will load under a policy, from the numeric versions the source has."""
    available = sorted(available)
    if policy == "latest":
        return available[-versions:]
    if policy == "specific":
        return list(versions)
    return available


def plan_model(model, files, cache_path=""):
    """Check a model against its source's files (relative path -> info) and plan it; a refusal names the path."""
    name, source = model["name"], model["source"]
    tops = {}
    for rel in files:
        top, sep, inner = rel.partition("/")
        if sep:
            tops.setdefault(top, set()).add(inner)
    dirs = dict((int(top), top) for top in tops if re.match(r"^\d+$", top))
    numeric = sorted(dirs)
    if not numeric:
        raise ServingError("model %s: no numeric version directory under %s (TF Serving would log 'No versions of "
                           "servable %s found under base path')" % (name, source, name))
    for version in numeric:
        if not any(f in tops[dirs[version]] for f in SAVED_MODEL_FILES):
            raise ServingError("model %s: %s/%s has no saved_model.pb (each version directory holds one SavedModel)"
                               % (name, source.rstrip("/"), dirs[version]))
    found = ", ".join(str(v) for v in numeric)
    if model["version_policy"] == "specific":
        for version in model["versions"]:
            if version not in numeric:
                raise ServingError("model %s: version %s is not under %s (found: %s)" % (name, version, source, found))
    expected = expected_versions(model["version_policy"], model["versions"], numeric)
    for label, version in sorted(model["labels"].items()):
        if version not in numeric:
            raise ServingError("model %s: label %s points to version %s, which is not under %s (found: %s)"
                               % (name, label, version, source, found))
        if version not in expected:
            raise ServingError("model %s: label %s points to version %s, which version_policy %s does not serve "
                               "(serves %s)" % (name, label, version, model["version_policy"],
                                                ", ".join(str(v) for v in expected)))
    plan = dict(model)
    plan.update(entries=sorted(set(rel.partition("/")[0] for rel in files)), available=numeric, expected=expected,
                base_path=("/models/%s" % name) if model["sync"] else source,
                local_path=cache_path or (source if model["scheme"] == "file" else ""),
                version_dirs=[dirs[v] for v in numeric])
    return plan


# -- models.config ------------------------------------------------------------------------------------------------


def render_models_config(plans):
    """The text ModelServerConfig for the plans (what templates/models.config.j2 writes too)."""
    lines = ["model_config_list {"]
    for plan in plans:
        lines += ["  config {", '    name: "%s"' % plan["name"], '    base_path: "%s"' % plan["base_path"],
                  '    model_platform: "tensorflow"']
        if plan["version_policy"] == "latest":
            lines.append("    model_version_policy { latest { num_versions: %d } }" % plan["versions"])
        elif plan["version_policy"] == "specific":
            lines.append("    model_version_policy { specific { %s } }"
                         % " ".join("versions: %d" % v for v in plan["versions"]))
        else:
            lines.append("    model_version_policy { all {} }")
        for label, version in sorted(plan["labels"].items()):
            lines.append('    version_labels { key: "%s" value: %d }' % (label, version))
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- ports -------------------------------------------------------------------------------------------------------


def _overlaps(ours, theirs):
    wild = ("0.0.0.0", "::", "")
    return ours in wild or theirs in wild or ours == theirs


def port_clashes(listeners, ports, bind_address, node):
    """Refusal lines for our ports held by a listener that is not our serving container.

    listeners: tfprov.gpu.listening_ports entries {port, address, pid, process, ours}; ports: {variable: port}.
    """
    problems = []
    for variable, port in sorted(ports.items(), key=lambda item: item[1]):
        for entry in listeners or []:
            if entry.get("port") != port or entry.get("ours") or not _overlaps(bind_address, entry.get("address")):
                continue
            who = ("%s (pid %s)" % (entry["process"], entry["pid"]) if entry.get("process") and entry.get("pid")
                   else "a process this user cannot see (another user's, or outside the node's process namespace)")
            problems.append("port %s on node %s is in use by %s: set %s" % (port, node, who, variable))
            break
    return problems
