"""Which boot this is (module_utils.node_boot, read by the modules node_boot and converge_record): recorded /proc
text, and the real /proc of this machine."""

from ansible_collections.tfprov.gpu.plugins.module_utils import node_boot

# Recorded on a Debian 12 VM (systemd) and in a container whose process 1 is a shell named with a space and a ")".
VM_STAT = "1 (systemd) S 0 1 1 0 -1 4194560 41570 3160911 146 1279 95 120 9079 3283 20 0 1 0 3 171458560 3291\n"
ODD_STAT = "1 (my init) x) S 0 1 1 0 -1 4194560 300 0 0 0 1 2 0 0 20 0 1 0 918273 4321 100\n"


def fake(stat, boot="6c1f0b7e-2d35-4f3c-9d1e-0a1b2c3d4e5f\n"):
    return lambda path: {node_boot.BOOT_ID: boot, node_boot.INIT_STAT: stat}[path]


def test_boot_id_joins_the_kernels_boot_id_and_init_start():
    assert node_boot.boot_id(fake(VM_STAT)) == "6c1f0b7e-2d35-4f3c-9d1e-0a1b2c3d4e5f:3"


def test_a_command_name_with_spaces_and_parentheses_does_not_shift_the_field():
    assert node_boot.init_start_ticks(ODD_STAT) == "918273"


def test_a_restarted_container_is_a_new_boot_on_the_same_kernel():
    assert node_boot.boot_id(fake(VM_STAT)) != node_boot.boot_id(fake(ODD_STAT))


def test_this_machine_answers_the_same_twice():
    assert node_boot.boot_id() == node_boot.boot_id()
