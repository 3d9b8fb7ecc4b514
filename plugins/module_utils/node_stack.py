# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resolve the whole stack of one node in one call: TensorFlow, CUDA, cuDNN, Python, driver branch and action.

The tfprov.gpu.stack action plugin calls resolve_node() before anything changes on any host. Every refusal is
one CompatError line saying what is wrong and what to change; they come in a fixed order so that the most
fundamental problem wins (an unknown TensorFlow before a bad method, a GPU too old before its driver branch).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.tfprov.gpu.plugins.module_utils.compat import (
    CompatError,
    check_gpu,
    distribution,
    major,
    min_driver,
    oldest_gpu,
    pinned_version,
    recommended_branch,
    resolve_stack,
    tf_entry,
    tf_versions,
    version_tuple,
)

# Allowed values, and the variable a user sets for each (named in refusals).
CHOICES = (
    ("manager", "tfprov_tf_manager", ("venv", "conda")),
    ("driver_mode", "nvidia_driver_mode", ("auto", "install", "bake")),
    ("driver_method", "nvidia_driver_method", ("distro", "cuda_repo", "runfile")),
    ("cuda_method", "cuda_method", ("pip", "distro", "nvidia_repo", "conda")),
    ("cudnn_method", "cudnn_method", ("pip", "tarball", "nvidia_repo", "conda")),
    ("variant", "tensorflow_gpu_variant", ("auto", "gpu", "cpu", "tpu")),
)
DEFAULTS = {
    "tensorflow": "latest", "cuda": "", "cudnn": "", "cudnn_full": "", "manager": "venv", "python": "",
    "gpus": [], "loaded_driver": "", "driver_mode": "auto", "driver_method": "distro", "driver_branch": "",
    "driver_adopt": True, "cuda_method": "pip", "cudnn_method": "pip", "variant": "auto", "distribution": "",
    "distribution_version": "",
}
# Checked only when passed: the roles' own settings for downloads that must be verified.
OPTIONAL = ("driver_runfile_url", "driver_runfile_checksum", "cudnn_tarball_checksum", "repo_key_fingerprint")
_CHECKSUM = re.compile(r"^(sha256|sha512):[0-9a-fA-F]{64}([0-9a-fA-F]{64})?$")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0", "")


def _text(value):
    return "" if value is None else str(value).strip()


def _bool(name, value):
    if isinstance(value, bool):
        return value
    if _text(value).lower() in _TRUE + _FALSE:
        return _text(value).lower() in _TRUE
    raise CompatError("%s=%s is not a boolean: use true or false" % (name, value))


def _versions_phrase(matrix, versions):
    """'TensorFlow 2.12 to 2.14' for a run of consecutive matrix versions, else 'TensorFlow 2.12, 2.16'."""
    known = tf_versions(matrix)
    positions = [known.index(v) for v in versions]
    if len(versions) > 1 and positions == list(range(positions[0], positions[0] + len(versions))):
        return "TensorFlow %s to %s" % (versions[0], versions[-1])
    return "TensorFlow %s" % ", ".join(versions)


def _check_choices(s):
    for key, variable, allowed in CHOICES:
        if s[key] not in allowed:
            raise CompatError("%s=%s is not one of %s" % (variable, s[key] or "''", ", ".join(allowed)))
    for key in ("cuda_method", "cudnn_method"):
        if s[key] == "conda" and s["manager"] != "conda":
            raise CompatError("%s=conda installs into a conda environment: set tfprov_tf_manager=conda or use %s=pip"
                              % (key, key))
    if s["driver_branch"] and not s["driver_branch"].isdigit():
        raise CompatError("nvidia_driver_branch=%s is not a driver branch: use its number (e.g. 580) or '' to let "
                          "tfprov choose" % s["driver_branch"])


def _check_downloads(s, extra, gpu_stack):
    """Downloads must be verifiable: refuse a missing URL, checksum or key fingerprint before anything runs."""
    if s["driver_method"] == "runfile" and s["driver_action"] == "install":
        if "driver_runfile_url" in extra and not _text(extra["driver_runfile_url"]):
            raise CompatError("nvidia_driver_method=runfile needs nvidia_driver_runfile_url (NVIDIA's .run installer)")
        if "driver_runfile_checksum" in extra and not _CHECKSUM.match(_text(extra["driver_runfile_checksum"])):
            raise CompatError("nvidia_driver_method=runfile needs nvidia_driver_runfile_checksum as sha256:<64 hex>")
    if gpu_stack and s["cudnn_method"] == "tarball" and "cudnn_tarball_checksum" in extra \
            and not _CHECKSUM.match(_text(extra["cudnn_tarball_checksum"])):
        raise CompatError("cudnn_method=tarball needs cudnn_tarball_checksum as sha256:<64 hex> (got '%s')"
                          % _text(extra["cudnn_tarball_checksum"]))
    uses_repo = (s["driver_action"] == "install" and s["driver_method"] == "cuda_repo") or (
        gpu_stack and "nvidia_repo" in (s["cuda_method"], s["cudnn_method"]))
    if uses_repo and "repo_key_fingerprint" in extra and not re.match(
            r"^[0-9A-Fa-f]{40}$", _text(extra["repo_key_fingerprint"]).replace(" ", "")):
        raise CompatError("NVIDIA's repository needs nvidia_driver_repo_key_fingerprint: the 40-hex fingerprint of "
                          "its signing key (an empty value would accept any key)")


def _check_branch(matrix, key, stack, oldest, pinned):
    last = oldest and oldest["last_driver_branch"]
    if last and version_tuple(pinned) > version_tuple(last):
        raise CompatError("nvidia_driver_branch=%s cannot drive %s (%s): its last driver branch is %s; "
                          "set nvidia_driver_branch=%s or leave it empty"
                          % (pinned, oldest["name"], oldest["architecture"], last, last))
    needed = major(stack["min_driver"])
    if version_tuple(pinned) < version_tuple(needed):
        fits = [v for v in tf_versions(matrix)
                if version_tuple(major(min_driver(matrix, matrix["tensorflow"][v]["cuda"]))) <= version_tuple(pinned)]
        hint = " or pick %s" % _versions_phrase(matrix, fits) if fits else ""
        raise CompatError("nvidia_driver_branch=%s is older than TensorFlow %s's CUDA %s needs (driver >= %s): "
                          "set nvidia_driver_branch >= %s or leave it empty%s"
                          % (pinned, key, stack["cuda"], stack["min_driver"], needed, hint))


def _check_python(matrix, key, stack, python):
    low, high = stack["python_min"], stack["python_max"]
    node = ".".join(python.split(".")[:2])
    if not low or version_tuple(low) <= version_tuple(node) <= version_tuple(high):
        return
    fits = [v for v in tf_versions(matrix)
            if version_tuple(matrix["tensorflow"][v]["python"]["min"]) <= version_tuple(node)
            <= version_tuple(matrix["tensorflow"][v]["python"]["max"])]
    hint = "pick %s (they support Python %s) or set tfprov_tf_manager=conda" % (_versions_phrase(matrix, fits), node) \
        if fits else "set tfprov_tf_manager=conda, which brings its own Python"
    raise CompatError("TensorFlow %s supports Python %s to %s; this node's Python is %s: %s"
                      % (key, low, high, python, hint))


def _action(s, stack, oldest, warnings):
    """skip | adopt | install, from the mode, the GPUs and the loaded driver."""
    if s["variant_asked"] in ("cpu", "tpu"):
        return "skip"
    if s["driver_mode"] == "auto" and not s["gpus"]:
        return "skip"
    loaded = s["loaded_driver"]
    last = oldest and oldest["last_driver_branch"]
    if s["driver_adopt"] and loaded and version_tuple(loaded) >= version_tuple(stack["min_driver"]) and (
            not last or version_tuple(major(loaded)) <= version_tuple(last)):
        if s["driver_branch"] and major(loaded) != s["driver_branch"]:
            warnings.append("the loaded driver %s is adopted although nvidia_driver_branch=%s: set "
                            "nvidia_driver_adopt=false to replace it" % (loaded, s["driver_branch"]))
        return "adopt"
    return "install"


def _distro_driver(matrix, s, key, stack, oldest, warnings):
    """What the distribution ships for the chosen branch; refuses what it cannot provide. Returns (branch, row)."""
    name, version = s["distribution"], s["distribution_version"]
    rows, row = distribution(matrix, name, version)
    where = "%s %s" % (name, version)
    last = oldest and oldest["last_driver_branch"]
    branch = s["driver_branch"] or stack["driver_branch"]
    if row and row.get("driver"):
        shipped = row["driver"]
        if version_tuple(shipped["version"]) < version_tuple(stack["min_driver"]):
            raise CompatError("%s ships driver %s; TensorFlow %s needs CUDA %s (driver >= %s): use "
                              "nvidia_driver_method=cuda_repo with nvidia_driver_branch >= %s"
                              % (where, shipped["version"], key, stack["cuda"], stack["min_driver"],
                                 major(stack["min_driver"])))
        if last and version_tuple(shipped["branch"]) > version_tuple(last):
            raise CompatError("%s ships driver %s, which cannot drive %s (%s; last driver branch %s): use "
                              "nvidia_driver_method=runfile with a %s driver"
                              % (where, shipped["version"], oldest["name"], oldest["architecture"], last, last))
        if s["driver_branch"] and s["driver_branch"] != shipped["branch"]:
            raise CompatError("%s ships driver branch %s only; nvidia_driver_branch=%s needs "
                              "nvidia_driver_method=cuda_repo or runfile"
                              % (where, shipped["branch"], s["driver_branch"]))
        return shipped["branch"], dict(shipped)
    if row and row.get("server_driver_branches"):
        offered = [str(b) for b in row["server_driver_branches"]]
        if branch not in offered and not s["driver_branch"]:
            usable = [b for b in offered if version_tuple(b) >= version_tuple(major(stack["min_driver"]))
                      and (not last or version_tuple(b) <= version_tuple(last))]
            branch = usable[-1] if usable else branch
        if branch not in offered:
            raise CompatError("%s has no nvidia-headless-%s-server (it has branches %s): set nvidia_driver_branch "
                              "to one of those or use nvidia_driver_method=cuda_repo"
                              % (where, branch, ", ".join(offered)))
        return branch, {"package": "nvidia-headless-%s-server" % branch, "version": None, "branch": branch}
    if rows is not None and row is None and "cuda_toolkit" not in rows:
        warnings.append("the matrix does not know the driver %s ships; the nvidia_driver role checks it at install"
                        % where)
    return branch, None


def _distro_cuda(matrix, s, key, stack, warnings):
    name, version = s["distribution"], s["distribution_version"]
    rows, row = distribution(matrix, name, version)
    where = "%s %s" % (name, version)
    if rows is not None and "cuda_toolkit" in rows and not rows["cuda_toolkit"]:
        raise CompatError("cuda_method=distro: %s ships no CUDA toolkit; use cuda_method=pip or nvidia_repo" % name)
    if row is None:
        warnings.append("the matrix does not know the CUDA toolkit %s ships; the cuda role checks it after install"
                        % where)
        return None
    if not row.get("cuda_toolkit"):
        raise CompatError("cuda_method=distro: %s ships no CUDA toolkit; use cuda_method=pip or nvidia_repo" % where)
    shipped = row["cuda_toolkit"]["version"]
    if major(shipped) != major(stack["cuda"]):
        fits = [v for v in tf_versions(matrix) if major(matrix["tensorflow"][v]["cuda"]) == major(shipped)]
        hint = ", or %s" % _versions_phrase(matrix, fits) if fits else ""
        if fits and all(version_tuple(v) < version_tuple(key) for v in fits):
            hint = ", or TensorFlow <= %s" % fits[-1]
        elif fits and all(version_tuple(v) > version_tuple(key) for v in fits):
            hint = ", or TensorFlow >= %s" % fits[0]
        raise CompatError("%s ships CUDA %s: TensorFlow %s needs CUDA %s.x; use cuda_method=pip or nvidia_repo%s"
                          % (where, shipped, key, major(stack["cuda"]), hint))
    if version_tuple(shipped) < version_tuple(stack["cuda"]):
        warnings.append("%s ships CUDA %s, older than the %s TensorFlow %s was built with"
                        % (where, shipped, stack["cuda"], key))
    return dict(row["cuda_toolkit"])


def _cudnn_full(s, stack, gpu_stack):
    """The full cuDNN version: the one given, else the matrix's pip pin (TensorFlow 2.14+)."""
    pins = [pinned_version(spec) for name, spec in sorted(stack["pip_cuda_packages"].items()) if "cudnn" in name]
    full = s["cudnn_full"] or (pins[0] if pins and pins[0] else "")
    by_full_version = gpu_stack and s["cudnn_method"] in ("tarball", "nvidia_repo")
    if by_full_version and ".".join(full.split(".")[:2]) != stack["cudnn"]:
        raise CompatError("cudnn_method=%s installs cuDNN %s by its full version, but that is %s: set "
                          "cudnn_full_version (e.g. %s.0.x)" % (s["cudnn_method"], stack["cudnn"], full or "unknown",
                                                                stack["cudnn"]))
    return full


def settings(args):
    """Arguments with defaults filled in and text normalised; unknown arguments are refused."""
    unknown = sorted(set(args) - set(DEFAULTS) - set(OPTIONAL))
    if unknown:
        raise CompatError("tfprov.gpu.stack does not take %s (it takes %s)"
                          % (", ".join(unknown), ", ".join(sorted(DEFAULTS) + list(OPTIONAL))))
    if isinstance(args.get("tensorflow"), float):
        # YAML reads an unquoted 2.20 as the number 2.2.
        raise CompatError("TensorFlow version %r is a number, not a version: quote it (e.g. \"2.20\")"
                          % args["tensorflow"])
    s = dict(DEFAULTS)
    s.update({k: v for k, v in args.items() if k in DEFAULTS and v is not None})
    for k in DEFAULTS:
        if k not in ("gpus", "driver_adopt"):
            s[k] = _text(s[k])
    s["driver_adopt"] = _bool("nvidia_driver_adopt", s["driver_adopt"])
    if s["gpus"] in ("", None):
        s["gpus"] = []
    if not isinstance(s["gpus"], (list, tuple)) or not all(isinstance(g, dict) for g in s["gpus"]):
        raise CompatError("gpus must be the list ansible_facts.nvidia_gpu.gpus from tfprov.gpu.nvidia_gpu_facts")
    return s


def _tpu_release(matrix, key):
    """The tensorflow-tpu release of a TensorFlow minor (data/compat.yml `tpu`), or CompatError naming those known."""
    table = matrix.get("tpu") or {}
    releases = table.get("releases") or {}
    if key not in releases:
        raise CompatError("tensorflow_gpu_variant=tpu: TensorFlow %s has no tensorflow-tpu release tfprov knows: pick "
                          "%s" % (key, _versions_phrase(matrix, [v for v in tf_versions(matrix) if v in releases])))
    return {"version": releases[key], "package": table["package"], "find_links": table["find_links"]}


def resolve_node(matrix, **args):
    """The tfprov_stack fact of one node, or CompatError with the one-line reason."""
    s = settings(args)
    extra = {k: args[k] for k in OPTIONAL if k in args}
    key, row = tf_entry(matrix, s["tensorflow"])
    _check_choices(s)
    warnings = []
    stack = resolve_stack(matrix, key, cuda=s["cuda"] or None, cudnn=s["cudnn"] or None)
    warnings.extend(stack["warnings"])
    gpu_node = bool(s["gpus"]) or s["driver_mode"] == "bake"
    s["variant_asked"] = s["variant"]
    s["variant"] = ("gpu" if gpu_node else "cpu") if s["variant"] == "auto" else s["variant"]
    gpu_stack = s["variant"] == "gpu"
    tpu = _tpu_release(matrix, key) if s["variant"] == "tpu" else None
    if tpu:  # a TPU VM: the tensorflow-tpu wheel and its libtpu, no CUDA or cuDNN wheels
        stack["pip_cuda_packages"] = {}
    oldest, unknown = oldest_gpu(matrix, s["gpus"])
    for name in unknown:
        warnings.append("%s is not in the matrix and reported no compute capability: its generation is not checked"
                        % name)
    if oldest and gpu_stack:
        check_gpu(matrix, key, row, oldest)
    elif oldest:
        try:
            check_gpu(matrix, key, row, oldest)
        except CompatError as exc:
            warnings.append("TensorFlow runs on the CPU only (tensorflow_gpu_variant=cpu): %s" % exc)
    last = oldest and oldest["last_driver_branch"]
    s["driver_action"] = _action(s, stack, oldest, warnings)
    if s["driver_branch"] and (gpu_stack or s["driver_action"] == "install"):
        _check_branch(matrix, key, stack, oldest, s["driver_branch"])
    stack["driver_branch"] = s["driver_branch"] or recommended_branch(matrix, stack["cuda"], last)
    if gpu_node and not s["gpus"]:
        warnings.append("no GPU on this node to check the driver branch against (bake mode): for Kepler GPUs set "
                        "nvidia_driver_branch=470 and TensorFlow <= 2.14")
    if s["manager"] == "venv" and s["python"]:
        _check_python(matrix, key, stack, s["python"])
    distro_driver = distro_cuda = None
    if s["driver_action"] == "install" and s["driver_method"] == "distro":
        stack["driver_branch"], distro_driver = _distro_driver(matrix, s, key, stack, oldest, warnings)
    if gpu_stack and s["cuda_method"] == "distro":
        distro_cuda = _distro_cuda(matrix, s, key, stack, warnings)
    cudnn_full = _cudnn_full(s, stack, gpu_stack)
    _check_downloads(s, extra, gpu_stack)
    exact = len(s["tensorflow"].split(".")) > 2
    return {
        "tensorflow": key,
        "tensorflow_version": s["tensorflow"] if exact else (tpu or {}).get("version") or stack["tensorflow_patch"],
        "tpu_package": (tpu or {}).get("package"),
        "tpu_find_links": (tpu or {}).get("find_links"),
        "variant": s["variant"],
        "gpu_node": gpu_node,
        "manager": s["manager"],
        "cuda": stack["cuda"],
        "cuda_method": s["cuda_method"],
        "cudnn": stack["cudnn"],
        "cudnn_full": cudnn_full or None,
        "cudnn_method": s["cudnn_method"],
        "min_driver": stack["min_driver"],
        "min_driver_branch": major(stack["min_driver"]),
        "min_compute_capability": stack["min_compute_capability"],
        "recommended_driver_branch": stack["recommended_driver_branch"],
        "driver_branch": stack["driver_branch"],
        "driver_action": s["driver_action"],
        "driver_mode": s["driver_mode"],
        "driver_method": s["driver_method"],
        "loaded_driver": s["loaded_driver"] or None,
        "oldest_gpu": oldest,
        "gpu_count": len(s["gpus"]),
        "python_min": stack["python_min"],
        "python_max": stack["python_max"],
        "python": (s["python"] or None) if s["manager"] == "venv" else stack["python_max"],
        "pip_cuda_packages": stack["pip_cuda_packages"],
        "pip_cuda_requirements": ["%s==%s" % (name, pinned_version(spec))
                                  for name, spec in sorted(stack["pip_cuda_packages"].items()) if pinned_version(spec)],
        "distro_driver": distro_driver,
        "distro_cuda": distro_cuda,
        "warnings": warnings,
    }
