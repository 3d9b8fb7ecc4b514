# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep the Python code Jinja compiles for each template and conditional, from one worker and one run to the next.

Ansible renders every task's arguments, conditionals and variables with Jinja, which first compiles each string
into Python: it parses it, generates Python source and compiles that, 3-5 ms per string. ansible-core keeps none of
it, and each task runs in a worker forked for that task alone, so a run compiles the same strings again and again:
429 compiles of 245 distinct strings in one `tfprov run node --full`, about 1.2 s of the run's path for one node
(measured with cProfile in the workers). This callback, loaded in the main process before any worker forks, wraps
the environment's two compile entry points: a string compiled once is stored (a marshalled code object, under
ANSIBLE_HOME, per Python, ansible-core and Jinja version) and later loaded instead of compiled.

What decides the code, and so the key and the checks on a stored one:
- the string, and the environment's syntax settings (delimiters, whitespace handling, extensions, sandbox class),
  and whether Ansible escaped backslashes (its compile context);
- each filter and test the string names: Jinja writes into the code whether it passes the filter the context, the
  environment or neither. A stored code is used only when every one of those names still resolves to a plugin
  taking the same; otherwise the string is compiled again, as without this callback (a name that no longer
  resolves raises Jinja's own error at that point).
Anything unexpected (another ansible-core or Jinja whose entry points differ, an unreadable or untrusted store, a
record that does not load) leaves the compile to Jinja, as without this callback: the store is only ever a shortcut.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: template_code
type: aggregate
short_description: Reuse the code Jinja compiled for a template or conditional, across workers and runs
description:
  - Ansible compiles every template and conditional string with Jinja in each task's worker, and keeps none of it.
    This callback stores the compiled code of each string (under C(ANSIBLE_HOME), per Python, ansible-core and
    Jinja version) and loads it instead of compiling again, while the string, the environment's syntax settings and
    the calling convention of every filter and test it names are the same.
  - Enabled in the checkout's C(ansible.cfg) (C(callbacks_enabled)).
author:
  - tfprov maintainers
requirements:
  - enabled in C(callbacks_enabled)
"""

import contextlib
import contextvars
import hashlib
import importlib.util
import marshal
import os
import sys
import time
import types
from pathlib import Path

import jinja2
from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ANSIBLE_VERSION
from ansible.utils.display import Display
from ansible_collections.tfprov.gpu.plugins.plugin_utils.private_store import trusted, write_whole
from jinja2 import nodes
from jinja2.environment import TemplateExpression
from jinja2.parser import Parser
from jinja2.utils import _PassArg

display = Display()

try:  # ansible-core 2.19's templating; another layout leaves Jinja alone
    from ansible._internal._templating._jinja_bits import AnsibleEnvironment, _TemplateCompileContext
except ImportError:  # pragma: no cover - depends on the installed ansible-core
    AnsibleEnvironment = _TemplateCompileContext = None

# The environment's settings that change what Jinja generates for the same string.
SYNTAX = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
          "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
          "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized", "is_async",
          "autoescape")

KEEP = 4000  # records kept at most: a run of tfprov's node playbook stores about 250

# Set while an expression compiles, so that the code Jinja compiles for it is caught and stored.
_caught: contextvars.ContextVar[list | None] = contextvars.ContextVar("tfprov_template_code", default=None)


def store_dir() -> Path:
    tag = f"{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}"
    return (Path(C.ANSIBLE_HOME).expanduser() / "tfprov" / "template-code"
            / f"{tag}-ansible-{ANSIBLE_VERSION}-jinja2-{jinja2.__version__}")


def open_store(path: Path) -> Path | None:
    """The store, made if missing; None unless only this user can write to it (its records are code to run)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return path if trusted(path) else None


def prune(store: Path, keep: int = KEEP) -> int:
    """Delete the oldest records (by when they were written) beyond keep, and the parts of writes a killed worker
    left over an hour ago; return how many went. The store grows with each new string (a changed task, a variable
    holding a template): a record is 1-10 kB."""
    entries = list(os.scandir(store))
    parts = [entry for entry in entries if entry.name.startswith(".part-")
             and entry.stat().st_mtime < time.time() - 3600]
    records = [entry for entry in entries if not entry.name.startswith(".")]
    over = len(records) - keep  # each run reads only the names, until there are too many
    oldest = sorted(records, key=lambda entry: entry.stat().st_mtime)[:over] if over > 0 else []
    for entry in parts + oldest:
        with contextlib.suppress(OSError):  # another run pruning at the same time
            os.unlink(entry.path)
    return len(parts) + len(oldest)


def key(env, kind: str, source: str) -> str:
    context = _TemplateCompileContext.current(optional=True) if _TemplateCompileContext else None
    syntax = tuple(repr(getattr(env, name, None)) for name in SYNTAX)
    basis = (kind, source, getattr(context, "escape_backslashes", None), syntax, tuple(sorted(env.extensions)),
             f"{type(env).__module__}.{type(env).__qualname__}", repr(getattr(env, "code_generator_class", None)),
             # Jinja writes into the code how it calls these: finalize with its calling convention, and the
             # operators a sandbox intercepts.
             repr(_PassArg.from_obj(env.finalize)) if env.finalize else None,
             tuple(sorted(getattr(env, "intercepted_binops", ()))),
             tuple(sorted(getattr(env, "intercepted_unops", ()))))
    return hashlib.sha256(repr(basis).encode("utf-8", "surrogatepass")).hexdigest()


def calling(env, plugins: str, name: str) -> str | None:
    """How Jinja calls the filter or test of that name now (what it writes into the code); None: not found."""
    try:
        found = getattr(env, plugins).get(name)
    except Exception:  # noqa: BLE001 - a plugin that fails to load: never reuse code naming it
        return None
    return None if found is None else repr(_PassArg.from_obj(found))


def plugins_named(tree) -> list[tuple[str, str]]:
    return sorted({("filters", node.name) for node in tree.find_all(nodes.Filter)}
                  | {("tests", node.name) for node in tree.find_all(nodes.Test)})


def load(env, store: Path, digest: str):
    """The stored code for this key, if it was stored and every filter and test it names is called as then."""
    try:
        names, code = marshal.loads((store / digest).read_bytes())
        current = all(calling(env, plugins, name) == how for plugins, name, how in names)
    except (OSError, EOFError, ValueError, TypeError):  # none, cut short, or not a record of this shape
        return None
    return code if current and isinstance(code, types.CodeType) else None


def save(env, store: Path, digest: str, tree, code) -> None:
    names = [(plugins, name, calling(env, plugins, name)) for plugins, name in plugins_named(tree)]
    if any(how is None for _, _, how in names):
        return
    try:
        write_whole(store / digest, marshal.dumps((names, code)))  # another worker may read it at once
    except (OSError, ValueError):
        return


def install(store: Path) -> bool:
    """Wrap the environment's compile and compile_expression; False where this ansible-core has neither."""
    if AnsibleEnvironment is None or getattr(AnsibleEnvironment, "_tfprov_template_code", False):
        return False
    compile_template = AnsibleEnvironment.compile
    compile_expression = AnsibleEnvironment.compile_expression

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        # Ansible's template debugging keeps Jinja's own path.
        plain = (isinstance(source, str) and name is None and filename is None and not raw and not defer_init
                 and not getattr(self, "_debuggable_template_source", False))
        if not plain:
            code = compile_template(self, source, name, filename, raw, defer_init)
            caught = _caught.get()
            if caught is not None and isinstance(source, nodes.Template):
                caught.append(code)
            return code
        digest = key(self, "template", source)
        code = load(self, store, digest)
        if code is None:
            code = compile_template(self, source)
            save(self, store, digest, self.parse(source), code)
        return code

    def compile_expression_cached(self, source, undefined_to_none=True):
        if not isinstance(source, str) or getattr(self, "_debuggable_template_source", False):
            return compile_expression(self, source, undefined_to_none)
        digest = key(self, f"expression:{bool(undefined_to_none)}", source)
        code = load(self, store, digest)
        if code is not None:
            template = self.template_class.from_code(self, code, self.make_globals(None), None)
            return TemplateExpression(template, undefined_to_none)
        caught = []
        token = _caught.set(caught)
        try:
            expression = compile_expression(self, source, undefined_to_none)
        finally:
            _caught.reset(token)
        if len(caught) == 1:
            tree = Parser(self, source, state="variable").parse_expression()
            save(self, store, digest, tree, caught[0])
        return expression

    AnsibleEnvironment.compile = compile
    AnsibleEnvironment.compile_expression = compile_expression_cached
    AnsibleEnvironment._tfprov_template_code = True
    return True


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "tfprov.gpu.template_code"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        store = open_store(store_dir())
        if store is None:
            display.vvv("template_code: not used: no store only this user can write to")
        elif install(store):
            try:
                pruned = prune(store)
            except OSError:
                pruned = 0
            display.vvv(f"template_code: compiled templates kept in {store} ({pruned} old records deleted)")
