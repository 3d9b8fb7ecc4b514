# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load CUDA libraries the way TensorFlow will (dlopen) and ask them their version."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import sys

# library => (soname prefix, version function, how to read its integer)
LIBRARIES = {
    "cudart": ("libcudart.so", "cudaRuntimeGetVersion", "out_int"),
    "cudnn": ("libcudnn.so", "cudnnGetVersion", "return_size_t"),
}


def decode_version(library, number):
    """cudart 12050 -> '12.5'; cuDNN 9: 90300 -> '9.3.0'; cuDNN 8: 8907 -> '8.9.7'."""
    if library == "cudart":
        return "%d.%d" % (number // 1000, (number % 1000) // 10)
    if number >= 90000:
        return "%d.%d.%d" % (number // 10000, (number % 10000) // 100, number % 100)
    return "%d.%d.%d" % (number // 1000, (number % 1000) // 100, number % 100)


# Runs in a child process: a library that aborts while loading (cuDNN 9 does when a sub-library is
# missing) must not take the caller down with it.
_CHILD = r"""
import ctypes, json, sys
path, function, style = sys.argv[1:4]
handle = ctypes.CDLL(path)
call = getattr(handle, function)
if style == "out_int":
    value = ctypes.c_int(0)
    status = call(ctypes.byref(value))
    print(json.dumps({"status": status, "number": value.value}))
else:
    call.restype = ctypes.c_size_t
    print(json.dumps({"status": 0, "number": call()}))
"""


def _candidates(prefix, search_paths):
    """Files in the given directories (newest soname first), else the bare soname for the system linker."""
    found = []
    for directory in search_paths:
        found += sorted(glob.glob(os.path.join(directory, prefix + ".*")), reverse=True)
    return found or [prefix + suffix for suffix in (".13", ".12", ".11", ".9", ".8", "")]


def _load(run_command, candidate, function, style):
    rc, out, err = run_command([sys.executable, "-c", _CHILD, candidate, function, style])
    if rc != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        raise OSError(lines[-1] if lines else "loading %s failed (exit %d)" % (candidate, rc))
    return json.loads(out)


def probe(library, search_paths, run_command):
    """{'path', 'version'} of the first copy that loads, or {'error'} saying why none did.

    run_command(argv) -> (rc, stdout, stderr) as text: the module's run_command (each copy loads in a child).
    """
    prefix, function, style = LIBRARIES[library]
    errors = []
    for candidate in _candidates(prefix, search_paths):
        try:
            result = _load(run_command, candidate, function, style)
        except OSError as exc:
            errors.append(str(exc))
            continue
        if result["status"] != 0:
            errors.append("%s: %s returned error %d" % (candidate, function, result["status"]))
            continue
        return {"path": candidate, "version": decode_version(library, result["number"])}
    return {"error": errors[-1] if errors else "%s not found" % prefix}
