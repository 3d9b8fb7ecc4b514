"""The one exception the CLI turns into a one-line message and a non-zero exit."""


class TfprovError(Exception):
    """A problem the user can fix; its message says what and how."""

    exit_code = 2
