"""The local cloud: a Docker engine with host-only networking (engine), systemd node images built from Debian
(images), and node containers reached with `docker exec` or over SSH as a sudo user (nodes, ssh).

Nodes share the host's network, each with its own service ports, or sit on a private network of the cloud's own
(network, gateway: a bridge in a namespace of its own, an address per node, the same ports on every node), with
faults on demand (faults) and Debian VMs under QEMU as the other kind of node (vms).
"""
