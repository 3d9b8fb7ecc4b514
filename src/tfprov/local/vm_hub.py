"""The VMs' private segment: an Ethernet hub on a Unix socket, so the host's network is never touched.

Each VM's second NIC is QEMU's `-netdev stream` connected to this socket; QEMU frames every packet with its
length (4 bytes, big-endian). Every frame from one VM goes to all the others, as on a hub: with a handful of VMs
there is nothing to learn. A VM whose MAC is listed in the cut file (one per line) is cut off: its
frames are dropped both ways, as `tfprov local fault NODE cut` asks.

Run as `python -m tfprov.local.vm_hub SOCKET`; it stops when the socket file is removed or on SIGTERM.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

HEADER = 4


class Hub:
    def __init__(self, cut_file: Path) -> None:
        self.peers: dict[asyncio.StreamWriter, str] = {}
        self.cut_file = cut_file

    def cut(self) -> set[str]:
        try:
            return set(self.cut_file.read_text().split())
        except FileNotFoundError:
            return set()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.peers[writer] = ""
        try:
            while True:
                head = await reader.readexactly(HEADER)
                frame = await reader.readexactly(int.from_bytes(head, "big"))
                source = frame[6:12].hex(":")  # the sender's MAC: which VM this link is
                self.peers[writer] = source
                cut = self.cut()
                if source in cut:
                    continue
                for peer, mac in list(self.peers.items()):
                    if peer is not writer and mac not in cut:
                        peer.write(head + frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.peers.pop(writer, None)
            writer.close()


async def main(socket_path: str) -> None:
    path = Path(socket_path)
    path.unlink(missing_ok=True)
    hub = Hub(path.with_suffix(".cut"))
    server = await asyncio.start_unix_server(hub.serve, path=str(path))
    os.chmod(path, 0o600)
    async with server:
        while path.exists():  # `tfprov down` removes the cloud's directory: the hub goes with it
            await asyncio.sleep(1)
        # Python 3.12 and newer: closing the server waits for its connections, so the VMs' links are closed first.
        for writer in list(hub.peers):
            writer.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
