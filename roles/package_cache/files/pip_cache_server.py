"""A pip cache for many nodes: proxpi's server, with the requests for one file answered one after another. The
package_cache role runs it on a cluster's tfprov_cache node; the local cloud's gateway runs this same file on the
controller.

proxpi records a file's download thread before starting it: a second node that asks for the same file in that moment
joins a thread that has not started, and proxpi sends that node to PyPI itself (the file is fetched from outside
twice). Here proxpi is used as released, through Flask's own extension point (a WSGI middleware around
`app.wsgi_app`): the requests for one file wait for each other, so the first starts the download and waits for it
(PROXPI_DOWNLOAD_TIMEOUT), and the others then find the file cached. Requests for different files, and for the
index pages, run side by side as before.

    python pip_cache_server.py HOST PORT   (proxpi's settings from its PROXPI_* environment)
"""

from __future__ import annotations

import sys
import threading


class OneRequestPerFile:
    """WSGI middleware: requests for the same /index/<project>/<file> are handled one at a time."""

    def __init__(self, app):
        self.app = app
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @staticmethod
    def file_path(path: str) -> bool:
        parts = path.strip("/").split("/")
        return len(parts) == 3 and parts[0] == "index" and bool(parts[2])

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if not self.file_path(path):
            return self.app(environ, start_response)
        with self._guard:
            lock = self._locks.setdefault(path, threading.Lock())
        with lock:  # proxpi's own handler waits for the download before it answers
            return self.app(environ, start_response)


def main(argv: list[str]) -> None:
    from proxpi.server import app

    host, port = argv
    app.wsgi_app = OneRequestPerFile(app.wsgi_app)
    app.run(host=host, port=int(port), threaded=True)


if __name__ == "__main__":
    main(sys.argv[1:])
