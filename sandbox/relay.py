"""Inside a task's container (no network): the model API's loopback address
relayed to the harness's key proxy.

Run by the harness's own Python, mounted read-only: `relay.py SOCKET PORT -- AGENT...` listens on the
container's own 127.0.0.1:PORT (the port the agent's ANTHROPIC_BASE_URL names), forwards each connection to
the key proxy's unix socket bound into the container, and execs the agent in its place. A forked child relays;
it dies with the container. Standard library only: it imports nothing of the harness.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2] != "--":
        sys.exit("usage: relay.py SOCKET PORT -- AGENT [ARGS...]")
    path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))   # bound before the agent starts: its first request finds it
    listener.listen(64)
    if os.fork() == 0:
        os.setsid()   # the agent's signals are its own; the relay ends with the container
        serve(listener, path)
        os._exit(0)
    listener.close()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
