#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gcp_instance_stop
short_description: Read a GCP instance's state and boot disk, and stop it
version_added: 1.0.0
description:
  - Reads the instance (its status and its boot disk's selfLink) and, with O(state=stopped), stops it through the
    Compute API's C(instances.stop), waiting for the operation.
  - The stock C(google.cloud.gcp_compute_instance) cannot do this alone, since given only a name, a zone and a
    status it also "updates" the labels and the machine type it was not told about.
  - Credentials come from the standard google.cloud options (C(auth_kind), C(GCP_SERVICE_ACCOUNT_FILE), ADC).
author:
  - tfprov maintainers
options:
  name:
    description: The instance's name.
    type: str
    required: true
  zone:
    description: Its zone.
    type: str
    required: true
  state:
    description: C(present) reads only; C(stopped) stops a running instance.
    type: str
    choices: [present, stopped]
    default: present
  wait_timeout:
    description: Seconds to wait for the stop operation.
    type: int
    default: 600
extends_documentation_fragment:
  - google.cloud.gcp
"""

EXAMPLES = r"""
- name: Stop the instance before imaging its boot disk
  tfprov.gpu.gcp_instance_stop:
    project: my-project
    zone: us-central1-a
    name: demo-chief-0
    auth_kind: application
    state: stopped
"""

RETURN = r"""
status: {description: The instance's status after the call (TERMINATED once stopped)., returned: always, type: str}
boot_disk: {description: The boot disk's selfLink., returned: always, type: str}
id: {description: The instance id., returned: always, type: str}
"""

import time

from ansible_collections.google.cloud.plugins.module_utils.gcp_utils import GcpModule, GcpSession

COMPUTE = "https://compute.googleapis.com/compute/v1"


def _json(module, response, what):
    if response.status_code == 404:
        module.fail_json(msg=f"{what}: not found (check the project, the zone and the name)")
    try:
        body = response.json()
    except ValueError:
        module.fail_json(msg=f"{what}: HTTP {response.status_code}, not JSON")
    if response.status_code >= 400 or "error" in body:
        message = (body.get("error") or {}).get("message", f"HTTP {response.status_code}")
        module.fail_json(msg=f"{what}: {message}")
    return body


def wait_operation(module, session, operation, deadline):
    while operation.get("status") != "DONE":
        if time.monotonic() > deadline:
            module.fail_json(msg=f"the stop operation did not finish in {module.params['wait_timeout']} s")
        time.sleep(2)
        operation = _json(module, session.get(operation["selfLink"]), "stop operation")
    if operation.get("error"):
        errors = operation["error"].get("errors") or [{}]
        module.fail_json(msg=f"stopping the instance failed: {errors[0].get('message', operation['error'])}")


def main():
    module = GcpModule(
        argument_spec=dict(name=dict(type="str", required=True), zone=dict(type="str", required=True),
                           state=dict(type="str", choices=["present", "stopped"], default="present"),
                           wait_timeout=dict(type="int", default=600)),
        supports_check_mode=True,
    )
    if not module.params["scopes"]:
        module.params["scopes"] = ["https://www.googleapis.com/auth/compute"]
    p = module.params
    link = f"{COMPUTE}/projects/{p['project']}/zones/{p['zone']}/instances/{p['name']}"
    session = GcpSession(module, "compute")
    instance = _json(module, session.get(link), f"instance {p['name']}")
    boot = next((disk.get("source", "") for disk in instance.get("disks") or [] if disk.get("boot")), "")
    changed = False
    if p["state"] == "stopped" and instance.get("status") not in ("TERMINATED", "STOPPED"):
        changed = True
        if not module.check_mode:
            operation = _json(module, session.post(f"{link}/stop"), f"stop {p['name']}")
            wait_operation(module, session, operation, time.monotonic() + p["wait_timeout"])
            instance = _json(module, session.get(link), f"instance {p['name']}")
    module.exit_json(changed=changed, status=instance.get("status", ""), boot_disk=boot, id=str(instance.get("id", "")))


if __name__ == "__main__":
    main()
