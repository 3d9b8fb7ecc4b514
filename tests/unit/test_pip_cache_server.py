"""The pip cache (roles/package_cache/files/pip_cache_server.py): proxpi's own server, as released, behind a WSGI
middleware that answers the requests for one file one after another, so that eight nodes asking for one wheel at
once cause one download, and nobody is sent to PyPI."""

import runpy
import threading
import time
from pathlib import Path

import proxpi.server
from proxpi import _cache

SERVER = runpy.run_path(str(Path(__file__).parents[2] / "roles" / "package_cache" / "files" / "pip_cache_server.py"))
OneRequestPerFile = SERVER["OneRequestPerFile"]

URL = "https://files.pythonhosted.org/packages/aa/bb/tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_17_x86_64.whl"
BODY = b"wheel bytes " * 1000


def test_loading_the_server_changes_nothing_of_proxpis():
    assert _cache._FileCache.get.__module__ == "proxpi._cache"
    assert proxpi.server.app.wsgi_app.__func__ is type(proxpi.server.app).wsgi_app  # main() wraps it, not the import


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

    def proxpi_app(environ, start_response):  # proxpi's file handler: its cache's answer for the file
        answer = files.get(URL)
        start_response("200 OK", [])
        return [answer.encode()]

    app = OneRequestPerFile(proxpi_app)
    answers, start = [], threading.Barrier(8)

    def node():
        start.wait()
        answers.append(b"".join(app({"PATH_INFO": "/index/tensorflow-cpu/" + URL.rsplit("/", 1)[1]},
                                    lambda status, headers: None)).decode())

    threads = [threading.Thread(target=node) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert upstream.gets == 1
    assert len(answers) == 8 and len(set(answers)) == 1 and not answers[0].startswith("https://")  # no redirect
    assert open(answers[0], "rb").read() == BODY


def test_index_pages_and_other_files_are_not_held_back():
    held, release = threading.Event(), threading.Event()

    def app(environ, start_response):
        if environ["PATH_INFO"].endswith("a.whl"):
            held.set()
            release.wait(10)
        return [environ["PATH_INFO"].encode()]

    wrapped = OneRequestPerFile(app)
    first = threading.Thread(target=wrapped, args=({"PATH_INFO": "/index/p/a.whl"}, None))
    first.start()
    assert held.wait(10)
    try:
        assert wrapped({"PATH_INFO": "/index/p/"}, None) == [b"/index/p/"]  # while a.whl's request waits
        assert wrapped({"PATH_INFO": "/index/p/b.whl"}, None) == [b"/index/p/b.whl"]
    finally:
        release.set()
        first.join(10)
    assert [OneRequestPerFile.file_path(p) for p in ("/index/p/a.whl", "/index/p/", "/index/", "/health")] == \
        [True, False, False, False]
