"""Start the ray executor's private instance (ray imported first, as a test process would have it), print the
listening TCP sockets of this process and every process under it as JSON lines, shut Ray down. Run by
tests/eval/executors/test_ray_link.py in a process of its own, so no other Ray connection is open."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import ray  # noqa: F401 - imported before the executor sets Ray's knob: the harder case

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from eval.executors.ray import RayExecutor  # noqa: E402


def listening() -> dict[str, tuple[str, int]]:
    """socket inode -> (address, port) of every listening TCP socket of the machine (/proc/net/tcp, tcp6)."""
    found = {}
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A":      # TCP_LISTEN
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))   # each 32-bit word in host order
            found[fields[9]] = (socket.inet_ntop(family, raw), int(port, 16))
    return found


def ray_processes(root: int, session: str) -> set[int]:
    """This process, every process under it, and any process naming the Ray session's folder (one that left the
    tree), with theirs."""
    children: dict[int, list[int]] = {}
    named = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if session in (entry / "cmdline").read_text(errors="replace"):
                    named.append(int(entry.name))
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry.name))
    seen, todo = set(), [root, *named]
    while todo:
        pid = todo.pop()
        seen.add(pid)
        todo += children.get(pid, [])
    return seen


def main() -> None:
    executor = RayExecutor(address="", concurrency=1)
    executor.connect()
    print(json.dumps({"describe": executor.describe()}), flush=True)
    sockets = listening()
    import ray as connected
    session = connected._private.worker._global_node.get_session_dir_path()
    for pid in sorted(ray_processes(os.getpid(), session)):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue   # a process that ended meanwhile
        for link in links:
            if link.startswith("socket:[") and link[8:-1] in sockets:
                address, port = sockets[link[8:-1]]
                print(json.dumps({"pid": pid, "process": comm, "address": address, "port": port}), flush=True)
    connected.shutdown()


if __name__ == "__main__":
    main()
