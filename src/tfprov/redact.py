"""Keep secrets passed as extra vars out of what a run records, should a task echo them.

Extra vars never reach the run directory as such (runner.extravars_file). A task can still print one (a debug, a
failed command's message, module arguments in a result); for variables whose names say they are secret, the value
is masked in the events (before ansible-runner writes them), the report, and ansible's stdout/stderr files.
Roles mark their own secret-taking tasks no_log; this is the net under them.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

MASK = "********"
SECRET_NAME = re.compile(r"pass(word|wd|phrase)?|secret|token|credential|api_?key|private_?key|auth", re.IGNORECASE)
_MIN_LENGTH = 4  # masking 'a' or 'no' everywhere would mangle the record and hide nothing


def secret_values(value: object, secret: bool = False) -> set[str]:
    """String values under secret-looking names, at any depth."""
    if isinstance(value, dict):
        found: set[str] = set()
        for key, inner in value.items():
            found |= secret_values(inner, secret or bool(SECRET_NAME.search(str(key))))
        return found
    if isinstance(value, list):
        return set().union(*(secret_values(inner, secret) for inner in value))
    if secret and value is not None and not isinstance(value, bool):
        text = str(value)
        return {text} if len(text) >= _MIN_LENGTH else set()
    return set()


class Redactor:
    def __init__(self, extravars: dict):
        # Longest first, so a secret containing another is masked whole.
        self.secrets = sorted(secret_values(extravars), key=len, reverse=True)

    def text(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text

    def _value(self, value: object) -> object:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self._value(k) if isinstance(k, str) else k: self._value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._value(v) for v in value]
        return value

    def event(self, event: dict) -> None:
        """Mask in place: ansible-runner writes the very dict its event handler was given."""
        if self.secrets:
            masked = self._value(event)
            event.clear()
            event.update(masked)

    def files(self, *paths: Path) -> None:
        if not self.secrets:
            return
        for path in paths:
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                if any(secret in text for secret in self.secrets):
                    path.write_text(self.text(text), encoding="utf-8")


# Options whose values reach the nodes as extra vars: a run's record names them, never their values.
VALUE_FLAGS = ("-e", "--extra-vars", "--job-arg")


def command_line(argv: list[str]) -> str:
    """tfprov's command line for the report: each extra var's name with its value masked (-e 'a=******** b=****'),
    a vars file by its @path, every --job-arg masked; the rest as given."""
    from .extravars import parse_one  # extravars imports nothing of ours; kept local to keep this module light

    out, argv = ["tfprov"], list(argv)
    while argv:
        arg = argv.pop(0)
        flag, joined, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if flag in VALUE_FLAGS and (joined or argv):
            value = value if joined else argv.pop(0)
            if flag == "--job-arg" or not value.startswith("@"):
                try:
                    value = MASK if flag == "--job-arg" else " ".join(f"{name}={MASK}" for name in parse_one(value))
                except Exception:  # noqa: BLE001 - unparsable: masked whole
                    value = MASK
            out += [f"{flag}={value}"] if joined else [flag, value]
        elif arg.startswith("-e") and len(arg) > 2 and not arg.startswith("--"):  # -ekey=value
            out += ["-e", MASK]
        else:
            out.append(arg)
    return shlex.join(out)
