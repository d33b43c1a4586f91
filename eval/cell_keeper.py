"""Nothing an unsandboxed agent starts outlives its cell: under `--sandbox none` each agent runs under a
keeper (sandbox/none.py puts `python -I -S cell_keeper.py -- ARGV` in front), a child subreaper
(prctl PR_SET_CHILD_SUBREAPER): every process the agent starts stays in the keeper's tree, however it detaches
(setsid, double forks), because an orphan is re-parented to the keeper instead of to init. When the agent
exits, the keeper kills everything left in its tree, reaps it, and exits with the agent's status; when the
harness kills the cell (a watchdog, the run's end, the guardian after a harness's death) it kills the keeper's
tree the same way (`kill_tree`) before the keeper's group.

Imports only the standard library: it runs as `python -I -S`, and eval/guardian_watch.py loads it by path.
bwrap needs none of this: its pid namespace ends with the agent.
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
PASSES = 50            # a tree that forks faster than it is killed is killed again, this many times at most


def _parents() -> dict[int, list[int]]:
    """Live (not zombie) processes by parent, from /proc (stat fields 3 and 4: state and ppid)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    return children


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (not `pid` itself), parents first."""
    children = _parents()
    found: list[int] = []
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, ()))
    return found


def kill_tree(pid: int) -> list[int]:
    """SIGKILL every live process below `pid`, again until none is left (a fork racing the kill lands under
    the subreaper and is found by the next pass); returns the pids killed. `pid` itself is left alive."""
    killed: list[int] = []
    for _ in range(PASSES):
        below = descendants(pid)
        if not below:
            break
        for child in below:
            try:
                os.kill(child, signal.SIGKILL)
                killed.append(child)
            except OSError:
                pass
    return list(dict.fromkeys(killed))   # one not yet dead at the next pass is killed twice


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass   # not Linux: the keeper still kills what it can see


def _exit_like(status: int) -> None:
    """Leave as the agent did: its exit code, or the signal that killed it."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 128 + os.WTERMSIG(status))


def main(argv: list[str]) -> None:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("cell_keeper: no command given", file=sys.stderr)
        os._exit(2)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    agent = os.fork()
    if agent == 0:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)     # the agent goes when its keeper is killed
        try:
            os.execvp(argv[0], argv)
        except OSError as err:
            print(f"{argv[0]}: {err.strerror}", file=sys.stderr)
            os._exit(127)
    # passed on to the agent, never the keeper's to die of
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: os.kill(agent, number))
    status = None
    while status is None:
        try:
            pid, raw = os.waitpid(-1, 0)     # the agent, or an orphan it left that the keeper adopted
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == agent:
            status = raw
    kill_tree(os.getpid())
    while True:                               # reap what was killed (and what it had started)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    _exit_like(status if status is not None else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
