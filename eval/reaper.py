"""Nothing outlives the harness: every agent process group is recorded while it runs, and a group left
behind by a harness that was killed (kill -9 leaves no chance to clean up) is reaped on the next start.

While the harness lives, its guardian (eval/guardian.py) kills every agent group at once when it dies; where
no guardian runs, the direct child gets a parent-death signal instead (its tool processes, in its group, then
wait for the next start). What a harness killed together with its guardian left running is killed by the next
start. A record is the group id plus the leader's start time, and the harness's pid and start time: a group is
reaped only when its harness is gone (another run on the same data dir keeps its agents), and a recycled pid
is never killed by mistake. An agent's container (a Harbor cell under --sandbox podman|docker) lives on in the
engine when the harness dies; it is recorded the same way, labelled with the data dir and its harness, and
removed on the next start once its harness is gone (only containers carrying this data dir's label: another
store's are never touched). A Ray worker's cell is recorded for the driver's harness (`scope`, carried in its
bundle; `adopted` on the worker): on the driver's own machine in the data dir's registry, as a local cell; on
another node in that node's own registry, owned by the worker process (Ray ends it with its driver), reaped
before the next cell there.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from eval.cell_keeper import kill_tree

PR_SET_PDEATHSIG = 1
CONTAINER = "container-"     # a record of an agent container: container-<name> holding the engine's argv
DATA_DIR_LABEL, HARNESS_LABEL = "sm.data-dir", "sm.harness"
# one machine, one boot: where a pid and its start time mean something
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_registry: Path | None = None
# the harness the records name (a Ray worker's: the driver); None: this one
_owner: tuple[int, str | None] | None = None


def use(directory: Path) -> None:
    """Record agent groups under `directory` (the data dir's pids/); unset, nothing is recorded."""
    global _registry
    _registry = directory     # created on the first record: a command that runs no agent writes nothing


def die_with_parent() -> None:
    """preexec_fn for an agent process: SIGKILL when the harness dies (Linux prctl; a no-op elsewhere)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


@functools.cache
def _setpriv() -> str | None:
    """util-linux's setpriv when it can set the parent-death signal (2.33+; on every Debian), else None."""
    path = shutil.which("setpriv")
    if path is None:
        return None
    try:
        usage = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "--pdeathsig" in usage else None


def dying_with_parent(argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> tuple[list[str], object]:
    """(argv, preexec_fn) for a process that gets SIGKILL when the harness dies. Through setpriv, which sets
    the signal and execs the program as the spawn would (the same PATH and cwd, the same argv[0]): the spawn
    stays a vfork. A preexec_fn forces a full fork of the harness, ~4 ms of CPU in the parent and as much in
    the child for a harness-sized process, per agent (bench/overhead.py); it is the fallback where setpriv is
    missing, and for a program not found (the spawn's own error then)."""
    setpriv = _setpriv()
    program = argv[0] if argv else ""
    if setpriv is None or not program:
        return list(argv), die_with_parent
    if os.sep in program:   # as the spawn resolves it: relative to the child's cwd
        found = str(cwd / program) if os.access(cwd / program, os.X_OK) else None
    else:
        found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        return list(argv), die_with_parent
    return [setpriv, "--pdeathsig", "KILL", "--", *argv], None


def pid_alive(pid: int | None) -> bool:
    """Whether a process with this pid exists (another user's counts)."""
    if not pid or pid < 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]   # field 22: start time in clock ticks since boot


def register(pid: int) -> str | None:
    """Record an agent group (its leader `pid`) while it runs; returns the leader's start time."""
    started = _start_time(pid)
    if _registry is not None and started is not None:
        try:
            _registry.mkdir(parents=True, exist_ok=True)
            harness, harness_started = _harness()
            (_registry / str(pid)).write_text(f"{started} {harness} {harness_started}")
        except OSError:
            pass
    return started


def unregister(pid: int) -> None:
    if _registry is not None:
        (_registry / str(pid)).unlink(missing_ok=True)


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the group, from /proc (stat fields 3 and 5: state and pgrp)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


def reap(directory: Path) -> list[int]:
    """Kill every recorded agent group whose harness is gone; returns the pids that were killed."""
    killed: list[int] = []
    if not directory.is_dir():
        return killed
    for record in directory.iterdir():
        if not record.name.isdigit():
            continue
        pgid = int(record.name)
        try:
            started, harness, harness_started = (record.read_text().split() + ["", "", ""])[:3]
        except OSError:
            continue
        if harness.isdigit() and _start_time(int(harness)) == harness_started:
            continue                         # its harness still runs: its agents are not orphans
        leader = _start_time(pgid)
        if leader is not None and leader != started:
            record.unlink(missing_ok=True)   # the pid was recycled: not ours
            continue
        members = _group_members(pgid)
        if members:
            # what left the group, below a bare agent's keeper
            killed.extend(pid for pid in kill_tree(pgid) if pid not in members)
            try:
                os.killpg(pgid, signal.SIGKILL)
                killed.extend(members)
            except (ProcessLookupError, PermissionError):
                pass
        record.unlink(missing_ok=True)
    return killed


def _harness() -> tuple[int, str | None]:
    return _owner or (os.getpid(), _start_time(os.getpid()))


def _boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def scope() -> dict | None:
    """Whose records a cell run elsewhere (a Ray worker) makes: this data dir's registry, this harness, this
    machine's boot; None when nothing is recorded."""
    if _registry is None:
        return None
    pid, started = _harness()
    return {"registry": str(_registry.resolve()), "harness": pid, "harness_started": started,
            "boot": _boot_id()}


@contextmanager
def adopted(driver: dict | None, local: Path) -> Iterator[None]:
    """On a Ray worker, for one cell: records and labels for the driver's harness. On the driver's machine
    (same boot, its data dir there) in its registry, naming the driver, so its next start removes what a dead
    driver left; on another node in `local`, that node's registry, naming this worker process, whose dead
    predecessors' agents and containers are reaped first."""
    global _registry, _owner
    saved = _registry, _owner
    here = (driver is not None and driver.get("boot") == _boot_id()
            and Path(driver["registry"]).parent.is_dir())
    if here:
        _registry, _owner = Path(driver["registry"]), (int(driver["harness"]), driver.get("harness_started"))
    else:
        reap(local)
        reap_containers(local)
        _registry, _owner = local, None
    try:
        yield
    finally:
        _registry, _owner = saved


def _alive(harness: object, started: object) -> bool:
    return isinstance(harness, int) and started is not None and _start_time(harness) == started


def labels() -> dict[str, str]:
    """An agent container's labels: the data dir whose harness runs it, and that
    harness (none when unrecorded)."""
    if _registry is None:
        return {}
    pid, started = _harness()
    return {DATA_DIR_LABEL: str(_registry.parent.resolve()), HARNESS_LABEL: f"{pid}-{started}"}


def register_container(name: str, engine: Sequence[str]) -> None:
    """Record an agent container before it starts (`engine`: the engine's argv, e.g. podman and its flags)."""
    if _registry is None:
        return
    pid, started = _harness()
    try:
        _registry.mkdir(parents=True, exist_ok=True)
        (_registry / f"{CONTAINER}{name}").write_text(json.dumps({"engine": list(engine), "harness": pid,
                                                                  "harness_started": started}))
    except OSError:
        pass


def unregister_container(name: str) -> None:
    if _registry is not None:
        (_registry / f"{CONTAINER}{name}").unlink(missing_ok=True)


def reap_containers(directory: Path) -> list[str]:
    """Remove every recorded agent container whose harness is gone and that carries this data dir's label;
    returns their names."""
    removed: list[str] = []
    if not directory.is_dir():
        return removed
    label = f"{DATA_DIR_LABEL}={directory.parent.resolve()}"
    for record in sorted(directory.glob(f"{CONTAINER}*")):
        try:
            data = json.loads(record.read_text())
            engine, name = [str(a) for a in data["engine"]], record.name[len(CONTAINER):]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _alive(data.get("harness"), data.get("harness_started")):
            continue                         # its harness still runs: its container is in use
        try:
            found = subprocess.run([*engine, "ps", "-aq", "--filter", f"name=^{name}$", "--filter",
                                    f"label={label}"],
                                   capture_output=True, text=True, timeout=120)
            ids = found.stdout.split() if found.returncode == 0 else []
            if ids:
                subprocess.run([*engine, "rm", "-f", *ids], capture_output=True, timeout=120)
                removed.append(name)
        except (OSError, subprocess.TimeoutExpired):
            # the engine is gone or stuck: the record waits for the next start
            continue
        record.unlink(missing_ok=True)
    return removed
