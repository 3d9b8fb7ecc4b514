# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a command with a time limit, through AnsibleModule.run_command, and come back even when it cannot be killed.

A program stuck in the kernel (nvidia-smi on a GPU that fell off the bus sleeps uninterruptibly in the driver) does
not die of SIGKILL, so `timeout -k` would wait for it for ever, and so would anything reading its output. Here a
small POSIX shell runs the command in the background with its output in files, waits for it, and on the limit sends
it TERM, then KILL `kill_after` seconds later, then stops waiting one second after that: the command is left behind
if it still holds on, and the caller gets its answer (exit 124) within the limit plus `kill_after` + 1 seconds.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile
import time

TIMED_OUT = 124  # what coreutils' timeout returns, and this one
KILL_AFTER = 5

# $1 limit, $2 kill_after, $3 stdout file, $4 stderr file, then the command. The watcher polls each second whether
# the command still runs, so it goes away within a second of a command that ends in time.
WRAPPER = r"""
limit=$1 grace=$2 out=$3 err=$4
shift 4
trap 'exit 124' USR1
"$@" >"$out" 2>"$err" </dev/null &
pid=$!
shell=$$
(
  n=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$n" -ge "$limit" ]; then
      kill -TERM "$pid" 2>/dev/null
      sleep "$grace"
      kill -KILL "$pid" 2>/dev/null
      sleep 1
      kill -USR1 "$shell" 2>/dev/null
      exit 0
    fi
    sleep 1
    n=$((n + 1))
  done
) </dev/null >/dev/null 2>&1 &
wait "$pid"
exit $?
"""


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")
    except (IOError, OSError):
        return ""


def run_bounded(module, argv, seconds, kill_after=None):
    """(rc, stdout, stderr, timed_out) of argv run for at most `seconds` (None or 0: no limit)."""
    if not seconds or seconds <= 0:
        rc, out, err = module.run_command(argv, errors="surrogate_or_replace")
        return rc, out, err, False
    grace = KILL_AFTER if kill_after is None else kill_after
    workdir = tempfile.mkdtemp(prefix="tfprov-bounded-", dir=getattr(module, "tmpdir", None))
    out_path, err_path = os.path.join(workdir, "stdout"), os.path.join(workdir, "stderr")
    started = time.time()
    rc, shell_out, shell_err = module.run_command(
        ["/bin/sh", "-c", WRAPPER, "tfprov-bounded", str(int(seconds)), str(int(grace)), out_path, err_path]
        + list(argv), errors="surrogate_or_replace")
    elapsed = time.time() - started
    out, err = _read(out_path), _read(err_path) + shell_err
    for path in (out_path, err_path):
        try:
            os.remove(path)
        except OSError:
            pass
    try:
        os.rmdir(workdir)
    except OSError:
        pass
    # Killed on the limit: 124 from the wrapper, or the command's own death by TERM or KILL once the limit passed.
    timed_out = rc == TIMED_OUT or (rc != 0 and elapsed >= seconds)
    return rc, out, err, timed_out
