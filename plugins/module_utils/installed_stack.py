# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node has installed (driver, CUDA, cuDNN, TensorFlow, Python), read from files only.

Nothing is imported or run (but rpm's query on RPM systems): importing TensorFlow takes seconds, and a fleet report
reads every node. Every path is taken under `root`, so tests build fake trees.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re

# Distributions of TensorFlow a pip environment may hold, by normalised dist-info name, and their variant.
TF_DISTRIBUTIONS = {
    "tensorflow": "gpu", "tensorflow_cpu": "cpu", "tensorflow_gpu": "gpu", "tensorflow_intel": "cpu",
    "intel_tensorflow": "cpu", "tensorflow_rocm": "rocm", "tensorflow_macos": "cpu", "tf_nightly": "gpu",
    "tf_nightly_cpu": "cpu",
}
# NVIDIA's wheels: CUDA's runtime and cuDNN (cu11, cu12; CUDA 13's drop the suffix).
_PIP_CUDA = re.compile(r"^nvidia_cuda_runtime(_cu\d+)?$")
_PIP_CUDNN = re.compile(r"^nvidia_cudnn(_cu\d+)?$")
# System packages, Debian and RPM names: the driver's, the toolkit's and cuDNN's.
_DRIVER_PACKAGES = re.compile(r"^(nvidia-driver(-\d+)?(-server|-open|-cuda)?|nvidia-headless-\d+(-server|-open)?"
                              r"|cuda-drivers(-\d+)?|kmod-nvidia.*|nvidia-kernel-dkms)$")
_CUDA_PACKAGES = re.compile(r"^(cuda-toolkit-\d+-\d+|cuda-cudart-\d+-\d+|nvidia-cuda-toolkit)$")
_CUDNN_PACKAGES = re.compile(r"^(libcudnn\d+(-cuda-\d+)?|nvidia-cudnn|cudnn\d*(-cuda-\d+)?)$")
_RPM_PATTERNS = ["nvidia-driver*", "cuda-drivers*", "kmod-nvidia*", "cuda-toolkit-*", "cuda-cudart-*",
                 "libcudnn*", "cudnn*"]
_LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
_VERSION = re.compile(r"(\d+(?:\.\d+)+)")


def _under(root, path):
    return os.path.join(root, path.lstrip("/"))


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def upstream_version(text):
    """The upstream part of a package version: '1:535.183.01-1~deb12u1' -> '535.183.01', '8.9.2.26~cuda12+3' ->
    '8.9.2.26', '11.8.89~11.8.0-5~deb12u1' -> '11.8.89'."""
    text = (text or "").split(":", 1)[-1]
    match = _VERSION.match(text)
    return match.group(1) if match else None


def dpkg_packages(root):
    """{name: version} of the installed packages in dpkg's status file (empty where there is none)."""
    text = _read(_under(root, "/var/lib/dpkg/status")) or ""
    found = {}
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
        if fields.get("Package") and " installed" in fields.get("Status", "") and fields.get("Version"):
            found[fields["Package"]] = fields["Version"]
    return found


def rpm_packages(run_command):
    """{name: version} of the NVIDIA packages rpm knows; run_command(argv) -> (rc, out, err)."""
    rc, out, dummy = run_command(["rpm", "-q", "-a", "--qf", "%{NAME}\t%{VERSION}\n"] + _RPM_PATTERNS)
    if rc not in (0, 1):
        return {}
    return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)


def _matching(packages, pattern):
    return {name: upstream_version(version) for name, version in sorted(packages.items()) if pattern.match(name)}


def site_packages(root, env):
    """The environment's site-packages directories (lib/pythonX.Y; lib64 is usually a link to lib)."""
    return sorted(glob.glob(os.path.join(_under(root, env), "lib", "python*", "site-packages")))


def dist_infos(root, env):
    """{normalised name: version} from the environment's *.dist-info directory names (PEP 427/491 escaping)."""
    found = {}
    for directory in site_packages(root, env):
        for entry in os.listdir(directory):
            if entry.endswith(".dist-info") and "-" in entry:
                name, version = entry[:-len(".dist-info")].rsplit("-", 1)
                found[re.sub(r"[-_.]+", "_", name).lower()] = version
    return found


def conda_packages(root, env):
    """{name: version} from a conda environment's conda-meta/*.json (name-version-build.json)."""
    found = {}
    for path in glob.glob(os.path.join(_under(root, env), "conda-meta", "*.json")):
        parts = os.path.basename(path)[:-len(".json")].rsplit("-", 2)
        if len(parts) == 3:
            found[parts[0]] = parts[1]
    return found


def env_python(root, env, conda):
    """The environment's Python: pyvenv.cfg (venv: version, virtualenv: version_info), conda's python package, or
    the lib/pythonX.Y directory's name."""
    text = _read(os.path.join(_under(root, env), "pyvenv.cfg")) or ""
    for line in text.splitlines():
        key, dummy, value = line.partition("=")
        if key.strip() in ("version", "version_info") and _VERSION.match(value.strip()):
            return ".".join(_VERSION.match(value.strip()).group(1).split(".")[:3])
    if conda.get("python"):
        return conda["python"]
    dirs = site_packages(root, env)
    return os.path.basename(os.path.dirname(dirs[0]))[len("python"):] if dirs else None


def tensorflow(dists, conda):
    """{'version', 'package', 'variant'} of the TensorFlow in the environment, or Nones."""
    for name, variant in TF_DISTRIBUTIONS.items():
        if name in dists:
            return {"version": dists[name], "package": name.replace("_", "-"), "variant": variant}
    for name in ("tensorflow", "tensorflow-base", "tensorflow-gpu", "tensorflow-cpu"):
        if name in conda:
            return {"version": conda[name], "package": name, "variant": "cpu" if name.endswith("cpu") else "gpu"}
    return {"version": None, "package": None, "variant": None}


def _first(pattern, names):
    for name in sorted(names):
        if pattern.match(name):
            return name
    return None


def loaded_driver(root):
    """The loaded kernel module's version (/sys/module/nvidia/version, else /proc/driver/nvidia/version)."""
    text = _read(_under(root, "/sys/module/nvidia/version"))
    if text and text.strip():
        return text.strip()
    text = _read(_under(root, "/proc/driver/nvidia/version")) or ""
    match = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None


def library_driver(root):
    """The user-space driver's version from libnvidia-ml.so.<version> (a runfile install has no package)."""
    for directory in _LIB_DIRS:
        for path in sorted(glob.glob(os.path.join(_under(root, directory), "libnvidia-ml.so.*.*"))):
            return os.path.basename(path)[len("libnvidia-ml.so."):]
    return None


def driver(root, packages):
    loaded = loaded_driver(root)
    pkgs = _matching(packages, _DRIVER_PACKAGES)
    packaged = next((v for v in pkgs.values() if v), None)
    library = library_driver(root)
    version = loaded or packaged or library
    return {
        "version": version,
        "source": "loaded" if loaded else "package" if packaged else "library" if library else None,
        "loaded": loaded,
        "packages": pkgs,
        "library": library,
        # The module in memory is not the one installed: a reboot (or module reload) is due.
        "reboot_needed": bool(loaded and (packaged or library) and loaded != (packaged or library)),
    }


def toolkit_versions(root):
    """{CUDA home: version} from version.json (CUDA >= 11.1) or version.txt under /usr/local/cuda*."""
    found = {}
    for home in sorted(glob.glob(_under(root, "/usr/local/cuda*"))):
        text = _read(os.path.join(home, "version.json"))
        version = None
        if text:
            try:
                version = json.loads(text)["cuda"]["version"]
            except (ValueError, KeyError, TypeError):
                version = None
        if version is None:
            match = _VERSION.search(_read(os.path.join(home, "version.txt")) or "")
            version = match.group(1) if match else None
        if version:
            found["/" + os.path.relpath(home, root)] = version
    return found


def cudnn_header_versions(root, extra_dirs=()):
    """{header: version} from cudnn_version*.h (CUDNN_MAJOR/MINOR/PATCHLEVEL) where the roles and packages put it."""
    patterns = ["/usr/include/cudnn_version*.h", "/usr/include/*-linux-gnu/cudnn_version*.h",
                "/usr/local/cuda*/include/cudnn_version*.h", "/opt/tfprov/cudnn/*/include/cudnn_version*.h"]
    patterns += [os.path.join(d, "include", "cudnn_version*.h") for d in extra_dirs]
    found = {}
    for pattern in patterns:
        for path in sorted(glob.glob(_under(root, pattern))):
            text = _read(path) or ""
            parts = [re.search(r"#define\s+CUDNN_%s\s+(\d+)" % key, text) for key in ("MAJOR", "MINOR", "PATCHLEVEL")]
            if all(parts):
                found["/" + os.path.relpath(path, root)] = ".".join(p.group(1) for p in parts)
    return found


def _component(sources, order):
    """The version a program would most likely use, first in `order` of the sources that hold one."""
    for source in order:
        values = [v for v in (sources.get(source) or {}).values() if v]
        if values:
            return {"version": values[0], "source": source, "sources": sources}
    return {"version": None, "source": None, "sources": sources}


def gather(root="/", env="/opt/tfprov/envs/tf", run_command=None):
    """The fact tfprov_installed. run_command is used only on RPM systems (rpm -q), when given."""
    packages = dpkg_packages(root)
    if run_command and os.path.isdir(_under(root, "/var/lib/rpm")):
        packages.update(rpm_packages(run_command))
    dists = dist_infos(root, env)
    conda = conda_packages(root, env)
    pip_cuda = {n: v for n, v in dists.items() if _PIP_CUDA.match(n)}
    pip_cudnn = {n: v for n, v in dists.items() if _PIP_CUDNN.match(n)}
    conda_cuda = {n: v for n, v in conda.items() if n in ("cuda-cudart", "cuda-runtime", "cudatoolkit", "cuda-version")}
    # TensorFlow loads the wheels in its own environment first; the system's copies only without them.
    cuda = _component({"pip": pip_cuda, "conda": conda_cuda, "toolkit": toolkit_versions(root),
                       "package": _matching(packages, _CUDA_PACKAGES)}, ("pip", "conda", "toolkit", "package"))
    cudnn = _component({"pip": pip_cudnn, "conda": {n: v for n, v in conda.items() if n == "cudnn"},
                        "header": cudnn_header_versions(root), "package": _matching(packages, _CUDNN_PACKAGES)},
                       ("pip", "conda", "header", "package"))
    env_exists = os.path.isdir(_under(root, env))
    return {
        "env": env,
        "env_exists": env_exists,
        "python": env_python(root, env, conda) if env_exists else None,
        "tensorflow": tensorflow(dists, conda),
        "driver": driver(root, packages),
        "cuda": cuda,
        "cudnn": cudnn,
    }
