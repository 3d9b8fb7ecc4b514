"""The local cloud: a Docker engine with host-only networking (engine), systemd node images built from Debian
(images), and node containers reached through the Docker API or over SSH as a sudo user (nodes, ssh).

Nodes share the host's network (no bridge may be created here), so each gets its own service ports.
"""
