"""Say whether an environment already holds what `pip install REQUIREMENT...` would install. Prints JSON.

Run with the environment's own Python; reads only installed metadata (no pip, no index), in milliseconds where
pip takes seconds. A requirement is met when its distribution is installed at a version its specifier allows and,
down the whole tree, so is everything it requires, its extras included (`tensorflow[and-cuda]` needs the NVIDIA
wheels). `tensorflow-cpu` and `tensorflow` are different distributions: one does not meet the other. Anything
this cannot read (a URL, a path, a malformed line) counts as unmet, so pip runs and decides.

Also prints the environment's digest (every installed distribution and its version; gpu_check.py beside it prints the
same digest of the environment it checked) and the record of the last quick check that passed in it, which the
role reuses while nothing the check depends on has changed (tasks/verify.yml), and, for each --file=PATH, that
file's sha1 and mode (null when it is not a regular file): the role rewrites a file it manages only where these
differ from what it would write, without copy's own two module runs.
"""

import hashlib
import json
import os
import stat
import sys
from importlib import metadata

CHECK_RECORD = "tfprov-gpu-check.json"  # in the environment's own directory (sys.prefix)

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a fresh venv has no packaging of its own, but pip vendors it
    try:
        from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
        from pip._vendor.packaging.utils import canonicalize_name
    except ImportError:
        Requirement = None


def installed_distributions(path=None):
    """{canonical name: (version, [Requires-Dist lines])} of the environment (or of the directories in path)."""
    found = {}
    for dist in metadata.distributions(**({"path": path} if path else {})):
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonicalize_name(name), (dist.version, list(dist.requires or [])))
    return found


def _wanted(requirement, extras):
    """Whether a requirement applies here: its marker, evaluated for the base and each extra asked for."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in ("", *sorted(extras)))


def _short(requirement):
    """name[extras]specifier, without the marker that brought it in."""
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    return f"{requirement.name}{extras}{requirement.specifier}"


def unmet(lines, installed):
    """The requirements (and the dependencies under them) that installed does not satisfy, each with why."""
    problems, seen = [], set()

    def visit(line, extras_of_parent, parent):
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            problems.append(f"{line}: not a requirement this check can read")
            return
        if requirement.url:
            problems.append(f"{line}: a URL requirement (pip decides)")
            return
        if not _wanted(requirement, extras_of_parent):
            return
        name = canonicalize_name(requirement.name)
        key = (name, frozenset(requirement.extras), str(requirement.specifier))
        if key in seen:
            return
        seen.add(key)
        where = f" (required by {parent})" if parent else ""
        if name not in installed:
            problems.append(f"{_short(requirement)}: not installed{where}")
            return
        version, requires = installed[name]
        if not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{_short(requirement)}: {version} installed{where}")
            return
        for child in requires:
            visit(child, requirement.extras, name)

    for line in lines:
        visit(line, set(), None)
    return problems


def environment_digest():
    """sha256 of every installed distribution's name==version, sorted: any pip install or removal changes it."""
    held = sorted({f"{dist.metadata['Name']}=={dist.version}" for dist in metadata.distributions()
                   if dist.metadata["Name"]})
    return hashlib.sha256("\n".join(held).encode()).hexdigest()


def last_check(prefix=sys.prefix):
    """The record the role wrote after the last quick check that passed here, or None (none, or unreadable)."""
    try:
        with open(os.path.join(prefix, CHECK_RECORD), encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def file_state(path):
    """{'sha1', 'mode'} of a regular file (a link is not followed: copy would replace it), or None."""
    try:
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW)) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            return {"sha1": hashlib.sha1(handle.read()).hexdigest(), "mode": f"{stat.S_IMODE(info.st_mode):04o}"}
    except OSError:
        return None


def main(argv):
    files = [arg.split("=", 1)[1] for arg in argv if arg.startswith("--file=")]
    lines = [arg for arg in argv if not arg.startswith("--file=")]
    if Requirement is None:
        problems = ["neither packaging nor pip is importable in this environment"]
    else:
        problems = unmet(lines, installed_distributions())
    print(json.dumps({"met": not problems, "unmet": problems[:10], "digest": environment_digest(),
                      "last_check": last_check(), "files": {path: file_state(path) for path in files}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
