"""A pip cache for many nodes: proxpi's server, with its file downloads started once per file. The package_cache
role runs it on a cluster's tfprov_cache node; the local cloud's gateway runs this same file on the controller.

proxpi (1.3.1) records a file's download thread before starting it. A second node that asks for the same file in
that moment joins a thread that has not started, proxpi logs "cannot join thread before it is started" and sends
that node to PyPI itself: the file is fetched from outside twice (seen in bench/fleet_download.py on 2 nodes).
Two nodes that ask at the same instant can also both find no entry and both start a download. Here the first
asker starts the download and records it under one lock; every other asker finds the running thread and waits for
it, as proxpi intends (a download that ends before its thread is recorded stays cached: small wheels do).

    python pip_cache_server.py HOST PORT   (proxpi's settings from its PROXPI_* environment)
"""

from __future__ import annotations

import os
import posixpath
import sys
import threading

from proxpi import _cache

_FIRST_ASK = threading.Lock()
_original_get = _cache._FileCache.get


def _start_download_once(self, url: str) -> None:
    """Start the file's download unless it is cached or already being fetched: started first, then recorded."""
    key = self._get_key(url)
    with _FIRST_ASK:
        if key in self._files:
            return
        path = os.path.join(self.cache_dir, *_cache._split_path(key, posixpath.split))
        thread = _cache.Thread(target=self._download_file, args=(url, path))
        thread.start()
        # Unless it already ended: a small file can be downloaded and recorded as cached before this line, and
        # recording the finished thread over it would send every asker to PyPI for that file.
        self._files.setdefault(key, thread)
    with self._evict_lock:
        self._evict_lfu(url)


def get(self, url: str) -> str:
    if self.max_size:
        _start_download_once(self, url)
    return _original_get(self, url)


_cache._FileCache.get = get


def main(argv: list[str]) -> None:
    from proxpi.server import app

    host, port = argv
    app.run(host=host, port=int(port), threaded=True)


if __name__ == "__main__":
    main(sys.argv[1:])
