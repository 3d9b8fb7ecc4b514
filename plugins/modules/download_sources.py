#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: download_sources
short_description: Check, from the node, that the paths and URLs the stack will download from are there
version_added: 1.4.0
description:
  - >-
    For the resolve play, before any package source, download or install: a path (or C(file://) URL) must exist on
    the node, an C(http(s)://) URL must answer 200 from the node, an C(ftp://) URL must open (directly, else through
    O(proxy) when given, as the installing plays would use it). One failure is one line naming the variable that set
    the value.
  - Changes nothing; runs the same in check mode. Other schemes are returned in RV(unchecked).
  - M(ansible.builtin.uri) and M(ansible.builtin.stat) would need four tasks per setting in every role that downloads,
    with the proxy retry each time; this module is that check once.
options:
  sources:
    description: >-
      What to check: {name: the variable, value: the path or URL (empty: skipped), cached: a path on the node where
      the download is kept (when it is there, the download is not needed and the value is not checked), fix: what
      the refusal tells the user to do (default: fix the setting)}.
    type: list
    elements: dict
    required: true
  ca_path:
    description: A CA bundle on the node for https URLs.
    type: str
  proxy:
    description: The node's HTTP(S) proxy, tried when a URL does not answer directly.
    type: str
  timeout:
    description: Seconds to wait for each URL.
    type: int
    default: 15
  attempts:
    description: Tries per URL (a moment apart), so one transient error is not a refusal.
    type: int
    default: 3
attributes:
  check_mode: {description: Reads only., support: full}
  diff_mode: {description: No diff., support: none}
author:
  - tfprov maintainers (@tfprov)
"""

EXAMPLES = r"""
- name: Check the wheelhouse and the CA bundle from the node
  tfprov.gpu.download_sources:
    sources:
      - {name: tensorflow_gpu_pip_find_links, value: "{{ tensorflow_gpu_pip_find_links }}"}
    ca_path: "{{ tensorflow_gpu_ca_bundle or omit }}"

- name: Check the archive's URL unless the archive is in the download cache already
  tfprov.gpu.download_sources:
    sources:
      - {name: cudnn_tarball_url, value: "{{ url }}", cached: "/var/cache/tfprov/{{ url | basename }}"}
"""

RETURN = r"""
checked: {description: The values checked., returned: always, type: list}
unchecked: {description: The values of a scheme this module does not check., returned: always, type: list}
"""

import os
import time
from urllib.parse import urlsplit, urlunsplit

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url


def shown(value):
    """The value as a message may show it: a URL's user and password (a private index's token) masked."""
    parts = urlsplit(value)
    if parts.password is None and parts.username is None:
        return value
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[-1]))


def local_path(value):
    if value.startswith("file://"):
        return value[len("file://"):]
    return value if value.startswith("/") else None


def answers(url, ca_path, timeout, proxy=None):
    """'' when the URL answers 200, else why not, in a few words."""
    saved = {key: os.environ.get(key) for key in ("http_proxy", "https_proxy")}
    try:
        if proxy:
            os.environ.update(http_proxy=proxy, https_proxy=proxy)
        # Accept any type, as curl and pip do: a package index without an Accept header may answer 406 (proxpi).
        response = open_url(url, method="GET", timeout=timeout, ca_path=ca_path, use_proxy=bool(proxy),
                            follow_redirects="safe", headers={"Accept": "*/*"})
        status = response.getcode()  # None for ftp://: it opened, so the file is there
        response.close()
        return "" if status in (200, None) else "HTTP %s" % status
    except Exception as exc:  # urllib's HTTPError, URLError, timeouts, TLS errors: one line each
        return " ".join(str(getattr(exc, "reason", None) or exc).split()) or type(exc).__name__
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def problem(source, ca_path, proxy, timeout, attempts=3, delay=2.0):
    """The one line refusing this source, or ''."""
    name, value = source["name"], str(source.get("value") or "").strip()
    if source.get("cached") and os.path.exists(source["cached"]):
        return ""  # downloaded already: the run needs no source
    path = local_path(value)
    if path is not None:
        return "" if os.path.exists(path) else "%s %s does not exist on the node" % (name, shown(value))
    why = ""
    for attempt in range(max(attempts, 1)):
        if attempt:
            time.sleep(delay)
        why = answers(value, ca_path, timeout)
        if why and proxy:
            why = answers(value, ca_path, timeout, proxy) and why
        if not why:
            return ""
    return "%s %s does not answer from the node (%s)" % (name, shown(value), why.replace(value, shown(value)))


def main():
    module = AnsibleModule(
        # A proxy URL may carry its password; a source URL's user and password are masked below, not the whole value
        # (no_log on sources would mask the path or URL in the refusal too).
        argument_spec=dict(sources=dict(type="list", elements="dict", required=True),
                           ca_path=dict(type="str"), proxy=dict(type="str", no_log=True),
                           timeout=dict(type="int", default=15),
                           attempts=dict(type="int", default=3)),
        supports_check_mode=True,
    )
    params = module.params
    for source in params["sources"]:  # a private index's token in a URL: masked in every output, the invocation too
        parts = urlsplit(str(source.get("value") or ""))
        module.no_log_values.update(secret for secret in (parts.username, parts.password) if secret)
    given = [s for s in params["sources"] if str(s.get("value") or "").strip()]
    checked = [s for s in given if s["value"].startswith(("/", "file://", "http://", "https://", "ftp://"))]
    unchecked = [s["value"] for s in given if s not in checked]
    seen = {"checked": [shown(s["value"]) for s in checked], "unchecked": [shown(v) for v in unchecked]}
    for source in checked:
        why = problem(source, params["ca_path"] or None, params["proxy"] or None, params["timeout"],
                      params["attempts"])
        if why:
            fix = source.get("fix") or "fix the setting (a path on the node, or a URL the node can reach)"
            module.fail_json(msg="%s: %s" % (why, fix), **seen)
    module.exit_json(changed=False, **seen)


if __name__ == "__main__":
    main()
