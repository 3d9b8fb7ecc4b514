import os
import subprocess
import sys
import time

from ansible_collections.tfprov.gpu.plugins.module_utils.package_locks import lock_holders, parse_proc_locks

PROC_LOCKS = """\
1: POSIX  ADVISORY  WRITE 812 fe:01:1048601 0 EOF
1: -> POSIX  ADVISORY  WRITE 900 fe:01:1048601 0 EOF
2: FLOCK  ADVISORY  WRITE 77 00:19:42 0 EOF
3: OFDLCK ADVISORY  READ  -1 00:05:12 0 EOF
garbage line
"""


def test_parse_proc_locks_keeps_holders_not_waiters():
    held = parse_proc_locks(PROC_LOCKS)
    assert held[(0xFE, 0x01, 1048601)] == 812
    assert held[(0x00, 0x19, 42)] == 77
    assert (0x00, 0x05, 12) in held  # OFD locks have no pid (-1) but still block
    assert len(held) == 3


def test_a_real_fcntl_lock_is_found_with_its_holder(tmp_path):
    lock = tmp_path / "lock-frontend"
    lock.write_text("")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import fcntl,time; f=open({str(lock)!r},'w'); fcntl.lockf(f, fcntl.LOCK_EX); print('held', flush=True); "
         "time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        holders = lock_holders(fcntl_paths=[str(lock)], pid_paths=[])
        assert holders == [{"path": str(lock), "pid": holder.pid, "command": holders[0]["command"]}]
        assert "fcntl" in holders[0]["command"]
    finally:
        holder.kill()
        holder.wait()
    assert lock_holders(fcntl_paths=[str(lock)], pid_paths=[]) == []


def test_an_unlocked_file_and_a_missing_file_are_not_holders(tmp_path):
    free = tmp_path / "lock"
    free.write_text("")
    with open(free):  # open but not locked
        assert lock_holders(fcntl_paths=[str(free), str(tmp_path / "missing")], pid_paths=[]) == []


def test_pid_files_count_only_while_the_process_lives(tmp_path):
    live, stale = tmp_path / "dnf.pid", tmp_path / "yum.pid"
    live.write_text(f"{os.getpid()}\n")
    sleeper = subprocess.Popen(["sleep", "0"])
    sleeper.wait()
    time.sleep(0.05)
    stale.write_text(f"{sleeper.pid}\n")
    holders = lock_holders(fcntl_paths=[], pid_paths=[str(live), str(stale), str(tmp_path / "none.pid")])
    assert [h["path"] for h in holders] == [str(live)]
    assert holders[0]["pid"] == os.getpid()
