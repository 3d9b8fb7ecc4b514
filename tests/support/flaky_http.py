#!/usr/bin/env python3
"""Serve a directory on 127.0.0.1, failing the first N requests for each file with 503: a flaky mirror.

Stops by itself after --lifetime seconds, so a test that forgets it leaves nothing behind.
"""

import argparse
import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer


class FlakyHandler(SimpleHTTPRequestHandler):
    failures: dict[str, int] = {}
    fail_first = 0

    def do_GET(self):  # noqa: N802 - http.server's naming
        seen = self.failures.get(self.path, 0)
        self.failures[self.path] = seen + 1
        if seen < self.fail_first:
            self.send_error(503, "flaky on purpose")
            return
        super().do_GET()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory")
    parser.add_argument("--port", type=int, default=18080)
    parser.add_argument("--fail-first", type=int, default=1)
    parser.add_argument("--lifetime", type=float, default=900)
    args = parser.parse_args()
    FlakyHandler.fail_first = args.fail_first
    handler = functools.partial(FlakyHandler, directory=args.directory)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    threading.Timer(args.lifetime, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
