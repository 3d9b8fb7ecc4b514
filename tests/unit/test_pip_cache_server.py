"""The pip cache: proxpi's file cache, asked for one file by many nodes at once, fetches it once and sends nobody to
PyPI (roles/package_cache/files/pip_cache_server.py, run by the local cloud's gateway and by the package_cache role
on a cluster's cache node; proxpi 1.3.1 alone let a second asker join a download thread that had not started and
redirected it to PyPI)."""

import runpy
import threading
import time
from pathlib import Path

from proxpi import _cache

# Loading the file installs the once-per-file download into proxpi's cache class.
runpy.run_path(str(Path(__file__).parents[2] / "roles" / "package_cache" / "files" / "pip_cache_server.py"))

URL = "https://files.pythonhosted.org/packages/aa/bb/tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_17_x86_64.whl"
BODY = b"wheel bytes " * 1000


class SlowUpstream:
    """PyPI's file host, slow enough that every node asks while the first download is running."""

    def __init__(self):
        self.gets, self.lock = 0, threading.Lock()

    def head(self, url):
        return type("Head", (), {"ok": True, "headers": {"Content-Length": str(len(BODY))}})()

    def get(self, url, stream=False):
        with self.lock:
            self.gets += 1

        class Response:
            status_code = 200

            def iter_content(self, chunk_size):
                for start in range(0, len(BODY), 2000):
                    time.sleep(0.05)
                    yield BODY[start:start + 2000]
        return Response()


def test_eight_nodes_asking_at_once_get_the_cached_file_from_one_download(tmp_path):
    upstream = SlowUpstream()
    files = _cache._FileCache(10 * 2**20, str(tmp_path), download_timeout=60, session=upstream)
    answers, start = [], threading.Barrier(8)

    def node():
        start.wait()
        answers.append(files.get(URL))

    threads = [threading.Thread(target=node) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert upstream.gets == 1
    assert len(answers) == 8 and len(set(answers)) == 1 and not answers[0].startswith("https://")  # no redirect
    assert open(answers[0], "rb").read() == BODY
    assert files.get(URL) == answers[0] and upstream.gets == 1  # later asks: the cache, no download


class FastUpstream(SlowUpstream):
    """A small file (a few KB): its download can end before the thread that runs it is recorded."""

    def get(self, url, stream=False):
        with self.lock:
            self.gets += 1
        return type("Response", (), {"status_code": 200, "iter_content": lambda self, chunk_size: iter([BODY])})()


def test_a_file_downloaded_before_its_thread_is_recorded_is_served_from_the_cache(tmp_path, monkeypatch):
    """Seen in the node test: termcolor's wheel was fetched, then its finished thread overwrote the cached entry and
    proxpi sent pip to PyPI for it. Here the download always ends before start() returns."""
    upstream = FastUpstream()
    files = _cache._FileCache(10 * 2**20, str(tmp_path), download_timeout=60, session=upstream)
    start = _cache.Thread.start

    def start_and_finish(thread):
        start(thread)
        thread.join()

    monkeypatch.setattr(_cache.Thread, "start", start_and_finish)
    answer = files.get(URL)
    assert not answer.startswith("https://") and open(answer, "rb").read() == BODY  # no redirect to PyPI
    assert files.get(URL) == answer and upstream.gets == 1
