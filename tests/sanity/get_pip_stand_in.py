"""A stand-in for the get-pip script that ansible-test downloads (unreachable from tfprov's machines and CI).

ansible-test bootstraps pip into each sanity test's virtual environment by running
~/.ansible/test/cache/get_pip_<version>.py, downloading it first only when it is not there. tests/sanity/run.sh
copies this file there under that name: it installs the pip wheel bundled with Python (ensurepip), then has that pip
install what ansible-test asked for (its pinned pip) from PyPI. ansible-test runs pip with PIP_CONFIG_FILE=/dev/null,
so the machine's pip.conf is not read: its CA bundle is passed with --cert where the system has one.
"""

import ensurepip
import os
import subprocess
import sys

CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def main():
    ensurepip.bootstrap()
    # get-pip's own options, which pip install does not take.
    args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
    cert = ["--cert", CA_BUNDLE] if os.path.exists(CA_BUNDLE) else []
    sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *cert, *args]))


if __name__ == "__main__":
    main()
