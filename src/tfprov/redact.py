"""Keep secrets passed as extra vars out of what a run records, should a task echo them.

Extra vars never reach the run directory as such (runner.extravars_file). A task can still print one (a debug, a
failed command's message, module arguments in a result); for variables whose names say they are secret, the value
is masked in the events (before ansible-runner writes them), the report, and ansible's stdout/stderr files.
Roles mark their own secret-taking tasks no_log; this is the net under them.
"""

from __future__ import annotations

import re
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
