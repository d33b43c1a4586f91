"""How the driver reaches Ray: a private instance bound to loopback only, or a cluster joined within a
deadline, and whether one cell's resources fit a node of it. Everything here runs
before the first cell is sent.

Ray's servers have no authentication, so a private instance must not listen on the machine's address: Ray
binds the node IP it is given, but rewrites 127.0.0.1 to the machine's address unless
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER is 0 (ray/_private/services.py get_node_ip_address; the knob is read when
ray is imported). Never imports mutator/.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from eval.executors import ExecutorError

LOOPBACK = "127.0.0.1"
LOCAL_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"   # Ray's own knob: "0" = a node never leaves loopback
HOST_PORT = re.compile(r"^(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])"
                       r":(?P<port>\d{1,5})$")
# cellResources key -> Ray's resource
OPTION_NAMES = {"num_cpus": "CPU", "num_gpus": "GPU", "memory": "memory"}


def address_problem(address: str) -> str | None:
    """Why `address` is not one --ray-address takes ('' / 'auto' / HOST:PORT), or None."""
    if address in ("", "auto"):
        return None
    found = HOST_PORT.match(address)
    if found is None:
        return f"{address!r} is not HOST:PORT"
    if not 1 <= int(found["port"]) <= 65535:
        return f"port {found['port']} is not in 1..65535"
    return None


def loopback_only() -> None:
    """Make the next private instance's node IP, and so every server it starts, 127.0.0.1."""
    os.environ[LOCAL_ONLY] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:          # ray was imported before the knob was set: tell the module itself
        constants.ENABLE_RAY_CLUSTER = False


def on_loopback(address: str) -> bool:
    """Whether a HOST:PORT names this machine's loopback (a cluster started with
    --node-ip-address 127.0.0.1)."""
    found = HOST_PORT.match(address)
    return found is not None and found["host"].strip("[]") in ("localhost", "::1") or (
        found is not None and found["host"].startswith("127."))


def reachable(address: str, timeout_s: float) -> None:
    """A HOST:PORT that refuses or does not answer is named now, not retried by Ray forever."""
    found = HOST_PORT.match(address)
    if found is None:
        # 'auto': Ray finds the cluster this machine belongs to, or says there is none
        return
    host = found["host"].strip("[]")
    try:
        socket.create_connection((host, int(found["port"])), timeout=timeout_s).close()
    except OSError as err:
        why = "no answer" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise ExecutorError(f"--ray-address {address}: cannot reach a Ray cluster there ({why} within "
                            f"{timeout_s:g} s, --ray-timeout-s); start its head (`ray start --head`), fix "
                            "the address, or leave --ray-address empty for a private instance") from None


async def answers(address: str, timeout_s: float) -> bool:
    """Whether something accepts a connection at HOST:PORT (a cluster's head, its GCS) within `timeout_s`."""
    host, _, port = address.rpartition(":")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)), timeout_s)
    except (OSError, TimeoutError, ValueError):
        return False
    writer.close()
    return True


def within(timeout_s: float, what: str, call: Callable[[], Any]) -> Any:
    """`call()` in a thread the main thread waits for at most `timeout_s` (Ctrl-C interrupts the wait): Ray's
    connect retries inside C++ and answers no signal, so the deadline belongs to the waiting side."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as err:   # noqa: BLE001 - handed to the waiting thread
            box["error"] = err
    worker = threading.Thread(target=run, name="ray-connect", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise ExecutorError(f"{what}: no answer within {timeout_s:g} s (--ray-timeout-s); check that the "
                            "cluster is up (`ray status` on its head) or raise --ray-timeout-s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def task_options(resources: Mapping[str, float]) -> dict[str, Any]:
    """cellResources as `.options()` takes them: CPUs, GPUs and memory by name,
    any other a custom resource."""
    named = {k: v for k, v in resources.items() if k in OPTION_NAMES}
    custom = {k: v for k, v in resources.items() if k not in OPTION_NAMES}
    return {**named, **({"resources": custom} if custom else {})}


def infeasible(resources: Mapping[str, float], nodes: list[dict]) -> str | None:
    """Why no alive node can ever run one cell (Ray would wait for it forever), or None."""
    wanted = {OPTION_NAMES.get(k, k): v for k, v in resources.items() if v > 0}
    alive = [node.get("Resources", {}) for node in nodes if node.get("Alive")]
    if any(all(have.get(name, 0) >= amount for name, amount in wanted.items()) for have in alive):
        return None
    hidden = ("memory", "object_store_memory")
    shown = [", ".join(f"{name} {amount:g}" for name, amount in sorted(have.items())
                       if not name.startswith("node:") and name not in hidden) or "nothing"
             for have in alive]
    return (f"cellResources {json.dumps(dict(resources))} fits no node of the Ray cluster, so a cell would "
            f"wait forever; its {len(alive)} node(s) have: {'; '.join(shown) or 'none alive'}. Ask for what "
            "one node has (config.json cellResources) "
            f"or start a worker that has it (`ray start --resources '{{...}}'`)")
