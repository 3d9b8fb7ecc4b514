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
  - Credentials from GCP_SERVICE_ACCOUNT_FILE or Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS),
    through tfprov's one GCP client (module_utils/gcp_api.py).
author:
  - tfprov maintainers (@tfprov)
options:
  project:
    description: GCP project id.
    type: str
    required: true
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
"""

EXAMPLES = r"""
- name: Stop the instance before imaging its boot disk
  tfprov.gpu.gcp_instance_stop:
    project: my-project
    zone: us-central1-a
    name: demo-chief-0
    state: stopped
"""

RETURN = r"""
status: {description: The instance's status after the call (TERMINATED once stopped)., returned: always, type: str}
boot_disk: {description: The boot disk's selfLink., returned: always, type: str}
id: {description: The instance id., returned: always, type: str}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.gcp_api import COMPUTE, GcpApi, GcpApiError


def run(api, params, check_mode):
    """(changed, instance) once the instance is read and, for state=stopped, stopped."""
    link = "%s/projects/%s/zones/%s/instances/%s" % (COMPUTE, params["project"], params["zone"], params["name"])
    instance = api.get(link, allow_404=True)
    if instance is None:
        raise GcpApiError("instance %s: not found (check the project, the zone and the name)" % params["name"])
    if params["state"] != "stopped" or instance.get("status") in ("TERMINATED", "STOPPED"):
        return False, instance
    if not check_mode:
        api.wait_compute_operation(api.post("%s/stop" % link, {}), params["wait_timeout"])
        instance = api.get(link)
    return True, instance


def main():
    module = AnsibleModule(
        argument_spec=dict(project=dict(type="str", required=True), zone=dict(type="str", required=True),
                           name=dict(type="str", required=True),
                           state=dict(type="str", choices=["present", "stopped"], default="present"),
                           wait_timeout=dict(type="int", default=600)),
        supports_check_mode=True,
    )
    try:
        changed, instance = run(GcpApi(), module.params, module.check_mode)
    except GcpApiError as exc:
        module.fail_json(msg=str(exc))
    boot = next((disk.get("source", "") for disk in instance.get("disks") or [] if disk.get("boot")), "")
    module.exit_json(changed=changed, status=instance.get("status", ""), boot_disk=boot, id=str(instance.get("id", "")))


if __name__ == "__main__":
    main()
