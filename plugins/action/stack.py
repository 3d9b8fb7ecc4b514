# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tfprov.gpu.stack: resolve a node's whole stack on the controller, before anything changes on it.

Reads data/compat.yml through module_utils/compat.py and sets ansible_facts.tfprov_stack, or fails with one
line saying what is wrong and what to change. Nothing runs on the node (see plugins/modules/stack.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.tfprov.gpu.plugins.module_utils import compat
from ansible_collections.tfprov.gpu.plugins.module_utils.node_stack import resolve_node

_MATRIX = {}


def _matrix():
    # One read per controller process: every host of a play resolves against the same file.
    if "data" not in _MATRIX:
        _MATRIX["data"] = compat.load_matrix()
    return _MATRIX["data"]


def one_line(text):
    """A refusal is one line: newlines and runs of spaces collapse to single spaces."""
    return " ".join(str(text).split())


def node_distribution(task_vars):
    """(name, version) the matrix keys distributions by: the full version for Ubuntu (22.04), else the major."""
    facts = (task_vars or {}).get("ansible_facts") or {}
    name = facts.get("distribution")
    version = facts.get("distribution_version") if name == "Ubuntu" else facts.get("distribution_major_version")
    return name, version


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        result["changed"] = False
        args = dict(self._task.args)
        # Every caller resolves for the node it runs on: its distribution comes from its facts unless given.
        if not args.get("distribution"):
            args["distribution"], args["distribution_version"] = node_distribution(task_vars)
        try:
            stack = resolve_node(_matrix(), **args)
        except compat.CompatError as exc:
            result.update(failed=True, msg=one_line(exc))
            return result
        except (OSError, ValueError) as exc:
            result.update(failed=True, msg=one_line("cannot read the compatibility matrix %s: %s"
                                                    % (compat.default_matrix_path(), exc)))
            return result
        result["ansible_facts"] = {"tfprov_stack": stack}
        return result
