#!/usr/bin/env python3
"""A stand-in `conda` for tests: the command lines tfprov's roles run, on top of venv and a wheelhouse.

No conda channel is reachable where tfprov is tested, so this program answers the subset of conda's CLI the
roles use (`create`, `install`, `list`, `--version`) with conda's flags, output and errors, and really builds
the environment:

- `python=X.Y` is the node's own pythonX.Y made into the prefix with `-m venv --without-pip` (Debian's
  python has no ensurepip without python3-venv; conda needs neither);
- `pip` is the pip wheel from the wheelhouse, installed into that Python from itself;
- `cuda-runtime`, `libcublas` and `cudnn` are NVIDIA's PyPI wheels from the wheelhouse, their `lib/` and
  `include/` unpacked into `<prefix>/lib` and `<prefix>/include`, where conda packages put them;
- every package gets a `conda-meta/<name>-<version>-<build>.json` record and a line in `conda-meta/history`,
  so tools that look for those (Ansible `creates:`, `conda list`) see a conda environment.

It fails as conda does (same exception names, exit 1; argparse errors, exit 2) on an unknown subcommand or
flag, a package no configured channel carries, a spec it cannot parse, a prefix that is not an environment.
Runs on the node's Python 3.9+, standard library only. The wheelhouse is $TFPROV_CONDA_STAND_IN_WHEELHOUSE,
else /wheelhouse (mounted by molecule), else /var/cache/tfprov/wheelhouse.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

CONDA_VERSION = "24.7.1"
BUILD = "0_tfprov_stand_in"
WHEELHOUSES = ("/wheelhouse", "/var/cache/tfprov/wheelhouse")
SPEC = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._-]*)"
                  r"(?:(?P<op>==|=|>=|<=|>|<|!=)(?P<version>[0-9][0-9A-Za-z.+_]*(\.\*)?))?$")
NVIDIA_LABEL = re.compile(r"^nvidia/label/cuda-(\d+\.\d+)(\.\d+)?$")

# conda package -> the wheel that provides its files, and the channels that carry it.
WHEELS = {
    "pip": ("pip", ("conda-forge", "defaults")),
    "cuda-runtime": ("nvidia_cuda_runtime_cu12", ("nvidia", "nvidia/label", "conda-forge")),
    "libcublas": ("nvidia_cublas_cu12", ("nvidia", "nvidia/label", "conda-forge")),
    "cudnn": ("nvidia_cudnn_cu12", ("conda-forge",)),
}
# Packages made from the node's Python.
PYTHON_CHANNELS = ("conda-forge", "defaults")


class CondaError(Exception):
    """An error conda reports as `Name: message` and exit status 1."""

    def __init__(self, name, message):
        super().__init__(message)
        self.name = name
        self.message = message


# ---- versions and specs ----------------------------------------------------------------------------------


def version_key(version):
    return tuple(int(part) if part.isdigit() else 0 for part in re.split(r"[.+_]", version))


def parse_spec(text):
    """'cudnn=9.3' -> ('cudnn', '=', '9.3'); conda's MatchSpec for the forms the roles write."""
    match = SPEC.match(text.strip())
    if not match:
        raise CondaError("InvalidMatchSpec", f"Invalid spec '{text}': the tfprov stand-in reads name, name=V, name==V, "
                         "name>=V (conda's MatchSpec has more)")
    return match.group("name"), match.group("op"), match.group("version")


def satisfies(version, op, wanted):
    if op is None:
        return True
    if op == "=":  # conda's fuzzy match: 9.3 is 9.3, 9.3.0.75, not 9.30
        wanted = wanted[:-2] if wanted.endswith(".*") else wanted
        return version == wanted or version.startswith(wanted + ".")
    have, want = version_key(version), version_key(wanted)
    return {"==": have == want, "!=": have != want, ">=": have >= want, "<=": have <= want,
            ">": have > want, "<": have < want}[op]


# ---- what the channels carry -----------------------------------------------------------------------------


def wheelhouse():
    configured = os.environ.get("TFPROV_CONDA_STAND_IN_WHEELHOUSE")
    for directory in ([configured] if configured else WHEELHOUSES):
        if directory and os.path.isdir(directory):
            return directory
    return None


def node_pythons(wanted=None):
    """{full version: executable} for the python3.N on PATH (and /usr/bin); only N=wanted's minor when given."""
    found = {}
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/bin"
    minors = range(6, 30)
    if wanted and re.match(r"^3\.\d+", wanted):
        minors = [int(wanted.split(".")[1])]
    elif wanted:
        minors = []
    for minor in minors:
        executable = shutil.which(f"python3.{minor}", path=path)
        if not executable:
            continue
        result = subprocess.run([executable, "-c", "import platform; print(platform.python_version())"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if result.returncode == 0 and result.stdout.strip():
            found.setdefault(result.stdout.strip(), executable)
    return found


def channel_carries(channel, name, version):
    """Does this channel have this package at this version? (nvidia/label/cuda-X.Y.Z: CUDA X.Y only)"""
    label = NVIDIA_LABEL.match(channel)
    if name in WHEELS and name != "pip":
        channels = WHEELS[name][1]
        if label:
            return "nvidia/label" in channels and (version == label.group(1)
                                                   or version.startswith(label.group(1) + "."))
        return channel in channels
    if name == "pip":
        return channel in WHEELS["pip"][1]
    return channel in PYTHON_CHANNELS


def candidates(name, wanted=None):
    """[(version, source)] the stand-in can provide for a package name, newest first."""
    if name == "python":
        return sorted(node_pythons(wanted).items(), key=lambda item: version_key(item[0]), reverse=True)
    if name in WHEELS:
        directory = wheelhouse()
        if not directory:
            return []
        prefix = WHEELS[name][0] + "-"
        found = []
        for file_name in os.listdir(directory):
            if file_name.startswith(prefix) and file_name.endswith(".whl"):
                found.append((file_name[len(prefix):].split("-")[0], os.path.join(directory, file_name)))
        return sorted(found, key=lambda item: version_key(item[0]), reverse=True)
    return []


def resolve(specs, channels, strict):
    """[(name, version, channel, source, spec)] for the specs, or PackagesNotFoundError naming what is missing."""
    plan, missing = [], []
    for spec in specs:
        name, op, wanted = parse_spec(spec)
        chosen = None
        available = candidates(name, wanted)
        for channel in channels:
            offered = [c for c in available if channel_carries(channel, name, c[0])]
            matching = [c for c in offered if satisfies(c[0], op, wanted)]
            if matching:
                chosen = (name, matching[0][0], channel, matching[0][1], spec)
                break
            if offered and strict:  # strict priority: a lower channel is not asked once one carries the name
                break
        if chosen:
            plan.append(chosen)
        else:
            missing.append(spec)
    if missing:
        raise CondaError("PackagesNotFoundError", "The following packages are not available from current channels:"
                         "\n\n" + "".join(f"  - {spec}\n" for spec in missing)
                         + "\nCurrent channels:\n\n" + "".join(f"  - {c}\n" for c in channels)
                         + "\n(tfprov stand-in: python is the node's pythonX.Y, CUDA and cuDNN come from the "
                         "wheelhouse %s)" % (wheelhouse() or "(none found)"))
    return plan


# ---- configuration and prefixes --------------------------------------------------------------------------


def root_prefix():
    return os.path.dirname(os.path.dirname(os.path.realpath(os.path.abspath(sys.argv[0]))))


def condarc(root):
    """(channels, strict) from <root>/.condarc, the two keys the miniconda role writes."""
    channels, strict, in_channels = [], False, False
    path = os.path.join(root, ".condarc")
    if os.path.isfile(path):
        with open(path) as handle:
            for line in handle:
                if line.startswith("channels:"):
                    in_channels = True
                elif in_channels and line.strip().startswith("- "):
                    channels.append(line.strip()[2:].strip())
                elif line.strip() and not line.startswith((" ", "#")):
                    in_channels = False
                    if line.split(":", 1)[0] == "channel_priority":
                        strict = line.split(":", 1)[1].strip() == "strict"
    return channels or ["defaults"], strict


def channels_for(args, root):
    configured, strict = condarc(root)
    if args.override_channels and not args.channel:
        raise CondaError("ArgumentError", "At least one -c / --channel flag must be supplied when using "
                         "--override-channels.")
    given = [normalize_channel(c) for c in args.channel or []]
    ordered = given + ([] if args.override_channels else [c for c in configured if c not in given])
    return ordered, strict


def normalize_channel(channel):
    """'https://<host>/conda-forge/' -> 'conda-forge' (the stand-in knows channels by name)."""
    channel = channel.rstrip("/")
    for known in ("nvidia/label/", "conda-forge", "nvidia", "defaults"):
        index = channel.find(known)
        if index >= 0:
            return channel[index:]
    return channel


def target_prefix(args, root):
    if args.prefix:
        return os.path.abspath(args.prefix)
    if args.name:
        return root if args.name == "base" else os.path.join(root, "envs", args.name)
    return None


def is_environment(prefix):
    return os.path.isfile(os.path.join(prefix, "conda-meta", "history"))


def installed(prefix):
    """{name: record} from conda-meta."""
    records = {}
    meta = os.path.join(prefix, "conda-meta")
    if os.path.isdir(meta):
        for file_name in sorted(os.listdir(meta)):
            if file_name.endswith(".json"):
                with open(os.path.join(meta, file_name)) as handle:
                    record = json.load(handle)
                records[record["name"]] = record
    return records


# ---- making packages -------------------------------------------------------------------------------------


def run(argv):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        last = (result.stdout.strip().splitlines() or [""])[-1]
        raise CondaError("CondaError", f"tfprov stand-in: {' '.join(argv)} failed (exit {result.returncode}): {last}")
    return result.stdout


def make_python(prefix, executable):
    existing = os.path.join(prefix, "bin", "python")
    if os.path.exists(existing):
        raise CondaError("CondaError", f"tfprov stand-in: {prefix} already has a python; it cannot replace one")
    run([executable, "-m", "venv", "--without-pip", prefix])
    return []


def install_pip(prefix, wheel):
    """pip installs itself from its own wheel: no ensurepip, no index."""
    python = os.path.join(prefix, "bin", "python")
    if not os.path.exists(python):
        raise CondaError("UnsatisfiableError", f"pip needs python in {prefix}: ask for python=X.Y too")
    run([python, os.path.join(wheel, "pip"), "install", "--quiet", "--no-index", "--no-deps", wheel])
    return []


def unpack_wheel(prefix, wheel):
    """Put the wheel's nvidia/<part>/{lib,include}/ files where a conda package has them: <prefix>/lib, include."""
    files = []
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            parts = member.filename.split("/")
            if len(parts) < 4 or parts[0] != "nvidia" or parts[2] not in ("lib", "include") or member.is_dir():
                continue
            if parts[-1] == "__init__.py" or "__pycache__" in parts:  # the wheel's Python package, not conda's
                continue
            relative = "/".join([parts[2]] + parts[3:])
            destination = os.path.join(prefix, relative)
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            with archive.open(member) as source, open(destination, "wb") as target:
                shutil.copyfileobj(source, target, 1 << 20)
            os.chmod(destination, 0o755 if parts[2] == "lib" else 0o644)
            files.append(relative)
    if not files:
        raise CondaError("CondaError", f"tfprov stand-in: {wheel} has no nvidia/*/lib or include files")
    return files


def write_record(prefix, name, version, channel, files, spec):
    record = {
        "name": name, "version": version, "build": BUILD, "build_number": 0, "channel": channel,
        "subdir": "linux-64", "fn": f"{name}-{version}-{BUILD}.conda", "files": sorted(files),
        "requested_spec": spec, "depends": [], "license": "see the wheel's own", "timestamp": int(time.time()),
    }
    path = os.path.join(prefix, "conda-meta", f"{name}-{version}-{BUILD}.json")
    with open(path, "w") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
    return f"{channel}/linux-64::{name}-{version}-{BUILD}"


def apply(prefix, plan):
    """Make each planned package, python first (pip comes with it), and record them."""
    added = []
    for name, version, channel, source, spec in sorted(plan, key=lambda step: step[0] != "python"):
        if name == "python":
            files = make_python(prefix, source)
        elif name == "pip":
            files = install_pip(prefix, source)
        else:
            files = unpack_wheel(prefix, source)
        added.append(write_record(prefix, name, version, channel, files, spec))
    return added


def append_history(prefix, added, specs):
    with open(os.path.join(prefix, "conda-meta", "history"), "a") as handle:
        handle.write("==> {} <==\n".format(time.strftime("%Y-%m-%d %H:%M:%S")))
        handle.write("# cmd: {}\n# conda version: {}\n".format(" ".join(sys.argv), CONDA_VERSION))
        handle.write("".join(f"+{line}\n" for line in added))
        handle.write(f"# update specs: {json.dumps(specs)}\n")


# ---- subcommands -----------------------------------------------------------------------------------------


def confirm(args, question):
    if args.yes:
        return
    sys.stdout.write(f"{question} ([y]/n)? ")
    sys.stdout.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("", "y", "yes"):
        raise CondaError("CondaSystemExit", "Exiting.")


def show_plan(prefix, specs, channels, plan, quiet):
    if quiet:
        return
    print("Channels:")
    print("".join(f" - {channel}\n" for channel in channels), end="")
    print("Platform: linux-64\nCollecting package metadata (repodata.json): done\nSolving environment: done\n")
    print(f"## Package Plan ##\n\n  environment location: {prefix}\n\n  added / updated specs:")
    print("".join(f"    - {spec}\n" for spec in specs))
    print("The following NEW packages will be INSTALLED:\n")
    for name, version, channel, _, _ in plan:
        print(f"  {name:<18} {channel}/linux-64::{name}-{version}-{BUILD}")
    print()


def transaction(args, prefix, specs, channels, plan):
    show_plan(prefix, specs, channels, plan, args.quiet)
    if args.dry_run:
        print("DryRunExit: Dry run. Exiting.")
        return 0
    confirm(args, "Proceed")
    added = apply(prefix, plan)
    append_history(prefix, added, specs)
    if not args.quiet:
        print("Preparing transaction: done\nVerifying transaction: done\nExecuting transaction: done")
    return 0


def command_create(args, root):
    prefix = target_prefix(args, root)
    if prefix is None:
        raise CondaError("CondaValueError", "either -n NAME or -p PREFIX option required,\n"
                         'try "conda create -h" for more details')
    if os.path.realpath(prefix) == os.path.realpath(root):
        raise CondaError("CondaValueError", "The target prefix is the base prefix. Aborting.")
    channels, strict = channels_for(args, root)
    plan = resolve(args.package_spec, channels, strict)  # before touching the prefix
    if is_environment(prefix):
        if args.dry_run:
            raise CondaError("CondaValueError", "Cannot `create --dry-run` with an existing conda environment")
        print(f"WARNING: A conda environment already exists at '{prefix}'")
        confirm(args, "Remove existing environment")
        shutil.rmtree(prefix)
    elif os.path.isdir(prefix) and os.listdir(prefix):
        print(f"WARNING: A directory already exists at the target location '{prefix}'\n"
              "but it is not a conda environment.")
        confirm(args, "Continue creating environment")
    if not args.dry_run:
        os.makedirs(os.path.join(prefix, "conda-meta"), exist_ok=True)
        open(os.path.join(prefix, "conda-meta", "history"), "a").close()
    status = transaction(args, prefix, args.package_spec, channels, plan)
    if not args.dry_run and not args.quiet:
        print(f"#\n# To activate this environment, use\n#\n#     $ conda activate {prefix}\n#")
    return status


def command_install(args, root):
    prefix = target_prefix(args, root) or root
    if not is_environment(prefix):
        raise CondaError("EnvironmentLocationNotFound", f"Not a conda environment: {prefix}")
    if not args.package_spec:
        raise CondaError("CondaValueError", "too few arguments, must supply command line package specs or --file")
    channels, strict = channels_for(args, root)
    present = installed(prefix)
    wanted = []
    for spec in args.package_spec:
        name, op, version = parse_spec(spec)
        record = present.get(name)
        if not (record and satisfies(record["version"], op, version)):
            wanted.append(spec)
    if not wanted:
        print("\n# All requested packages already installed.\n")
        return 0
    plan = resolve(wanted, channels, strict)
    return transaction(args, prefix, args.package_spec, channels, plan)


def command_list(args, root):
    prefix = target_prefix(args, root) or root
    if not is_environment(prefix):
        raise CondaError("EnvironmentLocationNotFound", f"Not a conda environment: {prefix}")
    print(f"# packages in environment at {prefix}:\n#\n# {'Name':<24} {'Version':<16} {'Build':<24} Channel")
    for name, record in sorted(installed(prefix).items()):
        print(f"{name:<26} {record['version']:<16} {record['build']:<24} {record['channel']}")
    return 0


def parser():
    top = argparse.ArgumentParser(prog="conda", description="conda (tfprov stand-in): create, install, list.")
    top.add_argument("-V", "--version", action="version", version=f"conda {CONDA_VERSION}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for name, function in (("create", command_create), ("install", command_install), ("list", command_list)):
        sub = commands.add_parser(name)
        sub.set_defaults(function=function)
        target = sub.add_mutually_exclusive_group()
        target.add_argument("-n", "--name")
        target.add_argument("-p", "--prefix")
        if name == "list":
            continue
        sub.add_argument("package_spec", nargs="*")
        sub.add_argument("-c", "--channel", action="append")
        sub.add_argument("--override-channels", action="store_true")
        sub.add_argument("-y", "--yes", action="store_true")
        sub.add_argument("-q", "--quiet", action="store_true")
        sub.add_argument("-d", "--dry-run", action="store_true")
        sub.add_argument("--offline", action="store_true")  # always offline: the wheelhouse is local
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return args.function(args, root_prefix())
    except CondaError as error:
        sys.stderr.write(f"\n{error.name}: {error.message}\n\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
