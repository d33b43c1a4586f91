"""The guardian's own process (eval/guardian.py starts it as `python -I -S guardian_watch.py`, importing
nothing of ours): it reads "+<pgid> <start time>" and "-<pgid>" lines from its stdin, a pipe whose only writer
is the harness, and when that pipe ends (the harness exited or was killed, kill -9 included) it kills every
group still on its list, whole, and exits. A group whose leader's pid now names another process (its start
time differs) is not ours and is left alone, as eval/reaper.py does."""

import importlib.util
import os
import signal

# eval/cell_keeper.py (stdlib only), by path: a bare agent's keeper holds every process it started below it
_spec = importlib.util.spec_from_file_location("cell_keeper", os.path.join(os.path.dirname(__file__),
                                                                           "cell_keeper.py"))
keeper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(keeper)


def start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]   # field 22: start time in clock ticks since boot
    except (OSError, IndexError):
        return None


def main() -> None:
    # Ctrl-C is the harness's to handle; this waits for it to end
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    groups: dict[int, str] = {}
    pending = b""
    while chunk := os.read(0, 65536):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            op, _, rest = line.decode().partition(" ")
            if op.startswith("+") and op[1:].isdigit():
                groups[int(op[1:])] = rest
            elif op.startswith("-") and op[1:].isdigit():
                groups.pop(int(op[1:]), None)
    for pgid, started in groups.items():
        leader = start_time(pgid)
        if leader is not None and leader != started:
            continue                                # the pid was recycled: not ours
        if leader is not None:
            keeper.kill_tree(pgid)                  # what left the group, below a bare agent's keeper
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass


if __name__ == "__main__":
    main()
