"""SSH mode: the path real cloud VMs take. Each node runs sshd for a non-root login user with passwordless sudo;
key authentication only; host keys are recorded, never ignored. On the private network sshd listens on port 22 of
the node's own address, reached through a jump into the lab namespace; on the host's network, on its own loopback
port.

The key pair is made once under .tfprov/local/ssh/. Each node's host public key is read through `docker exec`
(a channel that needs no host key) into that cloud's known_hosts there, which the SSH inventory makes ssh require.
"""

from __future__ import annotations

import base64
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import TfprovError

LOGIN_USER = "debian"  # as on Debian cloud images; Ubuntu's is ubuntu, Amazon Linux's ec2-user
SSH_PORT_BASE = 22000  # host network: node N listens on 127.0.0.1:22000+N (plus the cloud's slot offset)
HOST_KEY = "/etc/ssh/ssh_host_ed25519_key"
SSHD_CONFIG = "/etc/ssh/sshd_config.d/tfprov.conf"
SUDOERS = "/etc/sudoers.d/tfprov-login"


@dataclass(frozen=True)
class SshFiles:
    """The controller's side: the key pair and the recorded host keys."""

    directory: Path
    cloud: str = "local"

    @property
    def key(self) -> Path:
        return self.directory / "id_ed25519"

    @property
    def public_key(self) -> Path:
        return self.directory / "id_ed25519.pub"

    @property
    def known_hosts(self) -> Path:
        return self.directory / f"known_hosts.{self.cloud}"


def ssh_files(root: Path, cloud: str = "local") -> SshFiles:
    return SshFiles(root / ".tfprov" / "local" / "ssh", cloud)


def ensure_key_pair(files: SshFiles) -> str:
    """The login key, made once (ssh refuses a private key others can read: 0600 in a 0700 directory)."""
    files.directory.mkdir(parents=True, exist_ok=True)
    files.directory.chmod(0o700)
    if not (files.key.is_file() and files.public_key.is_file()):
        files.key.unlink(missing_ok=True)
        files.public_key.unlink(missing_ok=True)
        try:
            proc = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tfprov local cloud",
                                   "-f", str(files.key)], capture_output=True, text=True)
        except FileNotFoundError:
            raise TfprovError("ssh-keygen is not installed: apt-get install openssh-client") from None
        if proc.returncode != 0:
            raise TfprovError(f"ssh-keygen failed: {proc.stderr.strip() or proc.returncode}")
    files.key.chmod(0o600)
    return files.public_key.read_text(encoding="utf-8").strip()


def render_sshd_config(port: int, user: str = LOGIN_USER, listen: str = "127.0.0.1") -> str:
    """sshd for one node: one address (its private one, or loopback on the host's network), its host key, one
    user, keys only."""
    return "\n".join([
        "# Written by `tfprov up local`: SSH mode of the local cloud (see README).",
        f"Port {port}",
        f"ListenAddress {listen}",
        f"HostKey {HOST_KEY}",
        f"AllowUsers {user}",
        "PermitRootLogin no",
        "AuthenticationMethods publickey",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "",
    ])


def render_setup_script(port: int, public_key: str, user: str = LOGIN_USER, listen: str = "127.0.0.1") -> str:
    """Run as root in the node (sh -eu): login user, sudo, authorized key, host key, sshd. Prints the host
    public key last. Idempotent: sshd restarts only when its configuration changed or it is not running."""
    q = shlex.quote
    return f"""set -eu
user={q(user)}
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)
install -d -m 0700 -o "$user" -g "$user" "$home/.ssh"
printf '%s\\n' {q(public_key)} > "$home/.ssh/authorized_keys"
chown "$user:$user" "$home/.ssh/authorized_keys"
chmod 0600 "$home/.ssh/authorized_keys"
printf '%s\\n' "$user ALL=(ALL:ALL) NOPASSWD: ALL" > {SUDOERS}.new
chmod 0440 {SUDOERS}.new
visudo -cqf {SUDOERS}.new
mv {SUDOERS}.new {SUDOERS}
[ -s {HOST_KEY} ] || ssh-keygen -q -t ed25519 -N '' -f {HOST_KEY}
printf '%s' {q(render_sshd_config(port, user, listen))} > {SSHD_CONFIG}.new
restart=0
if cmp -s {SSHD_CONFIG}.new {SSHD_CONFIG}; then rm {SSHD_CONFIG}.new
else mv {SSHD_CONFIG}.new {SSHD_CONFIG}; restart=1; fi
install -d -m 0755 /run/sshd  # the unit makes it on start; sshd -t needs it now
sshd -t
systemctl enable --quiet ssh.service
if [ "$restart" = 1 ] || ! systemctl is-active --quiet ssh.service; then systemctl restart ssh.service; fi
cat {HOST_KEY}.pub
"""


def known_hosts_line(host: str, port: int, host_public_key: str) -> str:
    """ssh's known_hosts entry: `HOST TYPE KEY` on port 22, `[HOST]:PORT TYPE KEY` on any other."""
    fields = host_public_key.split()
    if len(fields) < 2 or not fields[0].startswith(("ssh-", "ecdsa-")):
        raise TfprovError(f"not an SSH host public key: {host_public_key[:60]!r}")
    try:
        base64.b64decode(fields[1], validate=True)
    except ValueError:
        raise TfprovError(f"not an SSH host public key: {host_public_key[:60]!r}") from None
    where = host if port == 22 else f"[{host}]:{port}"
    return f"{where} {fields[0]} {fields[1]}"


def write_known_hosts(files: SshFiles, lines: list[str]) -> None:
    """Exactly the current nodes' host keys: a node made again has a new key, and its old line must go."""
    files.directory.mkdir(parents=True, exist_ok=True)
    tmp = files.known_hosts.with_suffix(".new")
    tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(files.known_hosts)
