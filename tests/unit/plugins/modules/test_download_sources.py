"""download_sources: a path must be on the node, a URL must answer 200 from it (directly, else through the node's
proxy); one line names the variable. Against real sockets on 127.0.0.1: a file server and a stand-in proxy."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.modules import download_sources
from pyftpdlib.authorizers import DummyAuthorizer
from pyftpdlib.handlers import FTPHandler
from pyftpdlib.servers import ThreadedFTPServer


class Answer(BaseHTTPRequestHandler):
    seen: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        Answer.seen.append(self.path)
        if self.path.endswith("/index/pip/"):  # a package index that, like proxpi, wants to be told what to send
            self.send_response(200 if "*/*" in self.headers.get("Accept", "") else 406)
        else:
            self.send_response(200 if self.path.endswith("/wheels/") else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    Answer.seen = []
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


def check(value, proxy=None, attempts=1):
    return download_sources.problem({"name": "tfprov_pip_find_links", "value": value}, None, proxy, 5, attempts, 0)


def test_a_path_or_file_url_must_exist_on_the_node(tmp_path):
    assert check(str(tmp_path)) == check(f"file://{tmp_path}") == ""
    assert check("/no/such/wheelhouse") == "tfprov_pip_find_links /no/such/wheelhouse does not exist on the node"


def test_a_url_must_answer_200(server):
    assert check(f"{server}/wheels/") == ""
    assert check(f"{server}/gone/") == f"tfprov_pip_find_links {server}/gone/ does not answer from the node (Not Found)"
    assert check("http://127.0.0.1:9/wheels/").startswith("tfprov_pip_find_links http://127.0.0.1:9/wheels/ does "
                                                          "not answer from the node (")


def test_a_package_index_that_negotiates_its_answer_is_asked_as_pip_asks_it(server):
    assert check(f"{server}/index/pip/") == ""


def test_a_url_only_the_proxy_reaches_is_asked_again_through_it(server, monkeypatch):
    monkeypatch.delenv("http_proxy", raising=False)
    url = "http://wheels.invalid/wheels/"  # no such host for the node itself
    assert check(url).startswith(f"tfprov_pip_find_links {url} does not answer")
    assert check(url, proxy=server) == "" and Answer.seen == [url]  # the proxy was asked for the absolute URL
    assert "http_proxy" not in __import__("os").environ  # the node's own environment is left as it was


def test_one_transient_error_is_tried_again_before_refusing(server, monkeypatch):
    url, real, fails = f"{server}/flaky/wheels/", download_sources.answers, ["HTTP 503"]
    monkeypatch.setattr(download_sources, "answers", lambda *a, **k: fails.pop() if fails else real(*a, **k))
    assert check(url, attempts=2) == "" and Answer.seen == ["/flaky/wheels/"]


def test_a_token_in_a_url_never_reaches_the_message():
    line = check("https://user:s3cret-token@127.0.0.1:9/simple/")
    assert "s3cret-token" not in line and "user" not in line and "https://***@127.0.0.1:9/simple/" in line


def test_a_download_already_in_the_cache_needs_no_source(tmp_path):
    cached = tmp_path / "cudnn.tar.xz"
    source = {"name": "cudnn_tarball_url", "value": "http://127.0.0.1:9/cudnn.tar.xz", "cached": str(cached)}
    assert download_sources.problem(source, None, None, 5, 1, 0).startswith("cudnn_tarball_url http://127.0.0.1:9/")
    cached.write_bytes(b"archive")
    assert download_sources.problem(source, None, None, 5, 1, 0) == ""


@pytest.fixture
def ftp_server(tmp_path):
    (tmp_path / "NVIDIA-Linux-x86_64.run").write_bytes(b"#!/bin/sh\n")
    authorizer = DummyAuthorizer()
    authorizer.add_anonymous(str(tmp_path))
    handler = type("Handler", (FTPHandler,), {"authorizer": authorizer})
    server = ThreadedFTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"handle_exit": False}, daemon=True).start()
    yield f"ftp://127.0.0.1:{server.address[1]}"
    server.close_all()


def test_an_ftp_url_must_open(ftp_server):
    assert check(f"{ftp_server}/NVIDIA-Linux-x86_64.run") == ""
    assert check(f"{ftp_server}/gone.run").startswith(f"tfprov_pip_find_links {ftp_server}/gone.run does not answer")


def test_the_refusal_says_what_to_do_the_sources_own_words_when_it_gives_them(tmp_path, capsys):
    def refusal(**source):
        with patch_module_args({"sources": [dict(name="the cache", value=str(tmp_path / "none"), **source)]}), \
                pytest.raises(SystemExit):
            download_sources.main()
        return json.loads(capsys.readouterr().out)["msg"]
    assert refusal().endswith("does not exist on the node: fix the setting (a path on the node, or a URL the node "
                              "can reach)")
    assert refusal(fix="start the cache").endswith("does not exist on the node: start the cache")
