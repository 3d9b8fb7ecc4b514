"""tfprov's exit codes, in one place, and the one exception the CLI turns into a one-line message.

Scripts and CI branch on these codes; README's exit-code table and `tfprov --help` are written from EXIT_CODES.
"""

EXIT_OK = 0
EXIT_INTERNAL = 1  # an unexpected exception (a bug; traceback in .tfprov/logs/), or ansible-playbook's own crash
EXIT_BAD_INPUT = 2  # tfprov or ansible-playbook refused the input before any host was worked on
EXIT_NO_HOSTS = 3  # the inventory and --limit matched no host
EXIT_HOST_FAILED = 4  # one or more hosts failed a task
EXIT_UNREACHABLE = 5  # one or more hosts could not be reached, and none failed
EXIT_INTERRUPTED = 130  # Ctrl-C

EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_INTERNAL: "internal error: a bug (traceback in .tfprov/logs/), or ansible-playbook stopped on its own",
    EXIT_BAD_INPUT: "bad input, refused before any change (by tfprov, ansible-playbook or the run's checking plays): "
                    "one line on stderr says what to fix",
    EXIT_NO_HOSTS: "no host matched the inventory and --limit",
    EXIT_HOST_FAILED: "one or more hosts failed",
    EXIT_UNREACHABLE: "one or more hosts unreachable (and none failed)",
    EXIT_INTERRUPTED: "interrupted",
}


def exit_codes_text() -> str:
    """The table for --help."""
    return "exit codes:\n" + "\n".join(f"  {code:<4} {text}" for code, text in EXIT_CODES.items())


class TfprovError(Exception):
    """A problem the user can fix; its message says what and how."""

    exit_code = EXIT_BAD_INPUT


class RunFailed(TfprovError):
    """A refusal or failure inside the playbooks (or a job run over them), with the run's own exit code."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code
