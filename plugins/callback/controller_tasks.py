# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the tasks that never reach a node in the controller's own process, not in a worker forked for each one.

ansible-core's linear strategy forks a worker for every task on every host, even for a `set_fact`, an `assert`, a
`debug` or a skipped `include_role`: tasks whose action plugins declare they need no connection to the node
(`_requires_connection = False`), or includes, which only name the files to load. Forking the controller and
collecting the worker's result costs 10-20 ms a task on this machine, and a fresh `tfprov run node` has about 75 of
them on one node. This callback makes the linear strategy run those tasks in its own process: the same TaskExecutor,
on copies of the task and of its variables (a worker's fork is a copy too), whose result goes into the same queue a
worker's would. The strategy's handling of results, the callbacks and the
report see what they would have seen.

Every other task goes to a worker as before: anything that may reach a node, anything that would keep the controller
waiting (`until`, `timeout`, `async`, a loop's `pause`) and anything delegated. So does every task of another
strategy (`free`), and every task at all when this ansible-core lacks any of the internals used here (the callback
then changes nothing).
Third-party strategy plugins are deprecated in ansible-core 2.19, so this is a callback rather than a strategy.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: controller_tasks
type: aggregate
short_description: Run tasks that need no connection in the controller's process instead of a forked worker
description:
  - ansible-core forks a worker process for every task on every host. For tasks whose action needs no connection
    to the node (C(set_fact), C(assert), C(debug), C(fail), C(set_stats), C(group_by), C(add_host),
    C(include_vars), C(validate_argument_spec)) and for C(include_role)/C(include_tasks), this callback has the
    linear strategy run the task in its own process, with the same executor, and hand its result to the same queue.
  - Tasks that retry (C(until)), have a C(timeout), run C(async), pause between loop items or are delegated still
    run in a worker, as does every task under another strategy.
  - Where the ansible-core in use lacks an internal this relies on, nothing changes.
  - Enabled in the checkout's C(ansible.cfg) (C(callbacks_enabled)).
author:
  - tfprov maintainers
requirements:
  - enabled in C(callbacks_enabled)
"""

import traceback

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import action_loader
from ansible.utils.display import Display

display = Display()

try:  # ansible-core 2.19's internals; another layout leaves every task to the workers
    from ansible._internal import _task
    from ansible._internal._errors import _error_utils
    from ansible.executor.task_executor import TaskExecutor
    from ansible.executor.task_result import _RawTaskResult
    from ansible.plugins import loader as plugin_loader
    from ansible.plugins.strategy import StrategyBase
    from ansible.plugins.strategy.linear import StrategyModule as LinearStrategy
    INTERNALS = all(hasattr(*found) for found in (
        (_task, "TaskContext"), (_error_utils, "result_dict_from_exception"), (StrategyBase, "_queue_task"),
        (plugin_loader, "get_plugin_loader_namespace"), (C, "_ACTION_ALL_INCLUDE_ROLE_TASKS")))
except ImportError:
    INTERNALS = False


def runs_in_controller(task) -> bool:
    """Whether the task needs no worker: an include, or an action plugin that needs no connection, with nothing
    that would keep the controller waiting or run it for another host."""
    if task.until or task.timeout or task.async_val or task.delegate_to or getattr(task.loop_control, "pause", 0):
        return False
    if task.action in C._ACTION_ALL_INCLUDE_ROLE_TASKS:
        return True
    try:
        handler = action_loader.get(task.action, class_only=True, collection_list=task.collections)
    except Exception:  # noqa: BLE001 - not a plain action name (templated, or unknown): the worker finds out
        return False
    return handler is not None and getattr(handler, "_requires_connection", True) is False


def run_here(strategy, host, task, task_vars, play_context) -> None:
    """What WorkerProcess.run does for one task, in this process: the executor's result, or the error it raised,
    into the results queue, with the strategy's bookkeeping _queue_task does for a worker."""
    # Copies, as a worker's fork has: the executor templates the task's fields for its host in place, and adds loop
    # and search-path variables to the ones it is given (the strategy reads these again for group_by and add_host).
    own, variables = task.copy(exclude_tasks=True), dict(task_vars)
    strategy._queued_task_cache[(host.name, task._uuid)] = {
        "host": host, "task": task, "task_vars": task_vars, "play_context": play_context}
    strategy._tqm.send_callback("v2_runner_on_start", host, task)
    try:
        with _task.TaskContext(own):
            result = TaskExecutor(host, own, variables, play_context, strategy._loader,
                                  plugin_loader.get_plugin_loader_namespace(), strategy._final_q,
                                  strategy._variable_manager).run()
        fields = own.dump_attrs()
    except Exception as ex:  # noqa: BLE001 - a worker reports its executor's exception as the task's failure
        display.debug(traceback.format_exc())
        try:
            raise AnsibleError("The task failed in the controller's process.") from ex
        except AnsibleError as wrapped:
            result, fields = _error_utils.result_dict_from_exception(wrapped), {}
    strategy._final_q.send_task_result(_RawTaskResult(host=host, task=own, return_data=result, task_fields=fields))
    strategy._pending_results += 1


def install() -> bool:
    """Wrap the strategies' _queue_task once per process. Whether it is (now) wrapped."""
    if not INTERNALS:
        return False
    queue_task = StrategyBase._queue_task
    if getattr(queue_task, "tfprov_controller_tasks", False):
        return True

    def _queue_task(self, host, task, task_vars, play_context):
        if isinstance(self, LinearStrategy) and runs_in_controller(task):
            return run_here(self, host, task, task_vars, play_context)
        return queue_task(self, host, task, task_vars, play_context)

    _queue_task.tfprov_controller_tasks = True
    StrategyBase._queue_task = _queue_task
    return True


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "tfprov.gpu.controller_tasks"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        installed = install()
        display.vvv(f"controller_tasks: {'tasks that need no connection run here' if installed else 'not used'}")
