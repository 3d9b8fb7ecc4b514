"""`tfprov up|down local|aws|gcp`, `tfprov local fault|bake`, `tfprov engine`, `tfprov images`: local clouds (container
nodes or VMs) and a cluster spec's cloud nodes brought up and down, faults on demand, the engine and the images."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .. import clouds
from ..errors import TfprovError
from ..local import cloud as local_cloud
from ..local import engine as local_engine
from ..local import faults as local_faults
from ..local import images as local_images
from ..local import nodes as local_nodes
from ..local import serving_image as local_serving_image
from ..local import vms as local_vms
from ..options import DEFAULT_INVENTORY
from ..project import project_root

SSH_INVENTORY = "inventories/local_ssh.docker_containers.yml"


def _cloud_args(args) -> bool:
    """True for aws / gcp; refuses options that belong to the other kind of target."""
    if args.target == "local":
        if args.spec:
            raise TfprovError("--spec is for tfprov up|down aws|gcp: the local cloud takes -n / --roles instead")
        return False
    if not args.spec:
        raise TfprovError(f"tfprov {args.command} {args.target} needs --spec FILE: a cluster spec (examples/cloud/)")
    given = [flag for flag in ("--roles", "--suite", "--image", "--name", "--network", "--subnet")
             if getattr(args, flag[2:], None)]
    if given:
        raise TfprovError(f"{given[0]} is for tfprov up local: for {args.target}, set it in the spec file")
    return True


def cmd_up(args, out: Console) -> int:
    if _cloud_args(args):
        return clouds.run("up", args.target, args.spec, out, max_hourly_cost=args.max_hourly_cost)
    if args.max_hourly_cost is not None:
        raise TfprovError("--max-hourly-cost is for tfprov up aws|gcp: local nodes cost nothing by the hour")
    roles = args.roles.split(",") if args.roles else None
    if args.kind == "vm":
        return _up_vms(args, roles, out)
    if local_vms.is_vm_cloud(args.name or local_cloud.default_name()):
        raise TfprovError(f"local cloud {args.name or local_cloud.default_name()} is a VM cloud: add --kind vm, or "
                          "give the container nodes another --name")
    nodes = local_nodes.up(args.nodes, args.suite, out, roles, args.image, args.name, args.network, args.subnet)
    cloud = nodes[0].cloud
    where = f"private network {cloud.subnet} in namespace {cloud.namespace}" if cloud.private else "host network"
    table = Table(title=f"local cloud {cloud.name}: {len(nodes)} node(s), {where}", title_justify="left")
    for column in ("node", "role", "suite", "address", "ssh", "tf port", "serving grpc", "serving rest"):
        table.add_column(column)
    for node in nodes:
        ports = node.ports
        table.add_row(node.name, node.role, node.suite, node.address, str(ports["ssh_port"]), str(ports["tf_port"]),
                      str(ports["serving_grpc_port"]), str(ports["serving_rest_port"]))
    out.print(table)
    out.print(f"image: {nodes[0].image_ref}", highlight=False)
    if cloud.name != local_cloud.default_name():
        out.print(f"the inventories below list this cloud with {local_cloud.NAME_ENV}={cloud.name}", highlight=False)
    out.print(f"inventory: {DEFAULT_INVENTORY} (docker exec, as root)", highlight=False)
    out.print(f"inventory: {SSH_INVENTORY} (SSH as {local_nodes.ssh.LOGIN_USER}, sudo)", highlight=False)
    return 0


def _up_vms(args, roles: list[str] | None, out: Console) -> int:
    given = [flag for flag in ("--suite", "--network", "--subnet") if getattr(args, flag[2:], None)]
    if given:
        raise TfprovError(f"{given[0]} is for container nodes: VMs boot Debian 12's cloud image on their own segment")
    base = local_vms.baked_path(args.image) if args.image else None
    cloud, vms = local_vms.up(args.nodes, roles, args.name, out, base)
    table = Table(title=f"local cloud {cloud.name}: {len(vms)} VM(s) under QEMU, segment {local_vms.SUBNET}.0/24",
                  title_justify="left")
    for column in ("node", "role", "address", "ssh (127.0.0.1)", "user"):
        table.add_column(column)
    for vm in vms:
        table.add_row(vm.name, vm.role, vm.address, str(vm.ssh_port), local_nodes.ssh.LOGIN_USER)
    out.print(table)
    out.print(f"inventory: {cloud.inventory.relative_to(project_root())} (SSH as {local_nodes.ssh.LOGIN_USER}, "
              "sudo; host keys from the consoles)", highlight=False)
    return 0


def cmd_down(args, out: Console) -> int:
    if _cloud_args(args):
        return clouds.run("down", args.target, args.spec, out)
    if args.kind == "vm" or local_vms.is_vm_cloud(args.name or local_cloud.default_name()):
        count = local_vms.down(args.name, out)
        out.print(f"local cloud {args.name or local_vms.DEFAULT_NAME}: {count} VM(s) removed", highlight=False)
        return 0
    count = local_nodes.down(out, args.name)
    out.print(f"local cloud {args.name or local_cloud.default_name()}: {count} node(s) removed", highlight=False)
    return 0


def cmd_local(args, out: Console) -> int:
    if args.local_command == "bake":
        local_vms.bake(args.name or local_vms.cloud_named_by(args.node) or local_vms.DEFAULT_NAME, args.node,
                       args.image, out)
        return 0
    if args.mbit < 0:
        raise TfprovError(f"--mbit {args.mbit:g}: give a rate in Mbit/s above 0, or 0 to remove the limit")
    local_faults.apply(args.name, args.node, args.action, out, delay_ms=args.ms, loss_percent=args.loss,
                       wait=not args.no_wait, rate_mbit=args.mbit)
    return 0


def cmd_engine(args, out: Console) -> int:
    local_engine.ensure_engine(out)
    out.print("Docker engine: running", highlight=False)
    return 0


def cmd_images(args, out: Console) -> int:
    local_engine.ensure_engine(out)
    for suite in args.suite or local_images.SUITES:
        local_images.build_image(suite, out, rebuild=args.rebuild)
    if args.serving:
        name, archive = local_serving_image.build_serving_image(None, out, rebuild=args.rebuild)
        out.print(f"serving image {name}: archive {archive}", highlight=False)
    return 0
