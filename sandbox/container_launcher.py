"""Agents inside a Harbor task's container: `--sandbox podman|docker` (and `auto`, when an engine works here).

`ContainerSandbox` is the run's launcher: every agent without a task image (the mutator, a suite of our own
format) runs on the host launcher (bwrap when it works, else none); a Harbor cell gets a `TaskContainer`, one
container of the task's image for its whole trial (sandbox/container.py::Trial), as Harbor runs one: started
waiting at the agent's first call, the agent `exec`ed into it, then the verifier
(eval/harbor_run.py::verify_in), then removed; empty folders it made in the work dir as mount points go with
it. In it: the cell dir at its own path (the contract's SM_* paths hold), the work dir also at the task's
WORKDIR, the genome read-only where the task's Dockerfile COPYs its skills, the agent's programs (the
harness's Python, a script's folder, the claude CLI) read-only at their own paths and started through the
host's dynamic loader with the host's libraries (so they need nothing of the image's libc), and the key
proxy's unix socket, relayed to the container's own 127.0.0.1 (sandbox/relay.py): the network is off unless
the task asks and the import allowed it. Only the named environment variables enter (the image's PATH stays),
and never a real key: a container gets the proxy's one-cell nonce.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from sandbox import Launcher, SandboxError, binds_folders, dies_with_parent
from sandbox.bwrap import _is_system
from sandbox.container import ContainerEngine, Limits, Trial, get_engine
from sandbox.resolve import Program, resolve_command

RUNTIME = "/opt/sm-runtime"          # the host's loader and libraries for the agent's own programs
RELAY = Path(__file__).resolve().parent / "relay.py"
LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(/\S+)|^\s*(/\S*ld-linux\S*)\s", re.MULTILINE)
# The image's own PATH finds the image's programs; the API is plain HTTP to the
# relay, so no host CA file is needed
NOT_PASSED = ("PATH", "SSL_CERT_FILE", "SSL_CERT_DIR")
# The engine client runs with the harness's own settings for it (storage, its conf,
# its socket), never the cell's.
ENGINE_ENV = ("PATH", "HOME", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
              "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "CONTAINERS_REGISTRIES_CONF", "CONTAINER_HOST",
              "CONTAINER_CONNECTION",
              "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY")
CREDENTIAL_NAMES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
NONCE_PREFIX = "sm-proxy-"           # eval/agents/key_proxy.py's one-cell nonces
PROBE_PORT = 47011                   # the relay's port in a probe's container (its own network namespace)


class ContainerSandbox:
    """The run's launcher under `--sandbox auto|podman|docker`; `engine()` is what Harbor cells run in."""

    def __init__(self, choice: str, host: Launcher | Callable[[], Launcher]) -> None:
        self.choice = choice
        self._engine: ContainerEngine | None = None
        self._missing = ""                      # why no engine works here (auto: asked once per process)
        if choice != "auto":
            self._engine = get_engine(choice)   # refused before any cell: SandboxError names what to install
        self.host: Launcher = host() if callable(host) else host

    @property
    def id(self) -> str:
        return self.host.id if self.choice == "auto" else self.choice

    def engine(self) -> ContainerEngine:
        """The engine a Harbor task's agent runs in (raises SandboxError when none works here)."""
        if self._engine is None and not self._missing:
            try:
                self._engine = get_engine("auto")
            except SandboxError as err:
                self._missing = str(err)
        if self._engine is None:
            raise SandboxError(self._missing)
        return self._engine

    @property
    def binds_folders(self) -> bool:
        return binds_folders(self.host)

    @property
    def dies_with_parent(self) -> bool:   # wrap is the host's (a Harbor task's container is TaskContainer's)
        return dies_with_parent(self.host)

    def wrap(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path], readable: Sequence[Path],
             network: bool, run: Sequence[str] | None = None, env: Mapping[str, str] | None = None,
             shown: Mapping[Path, Path] | None = None) -> list[str]:
        return self.host.wrap(argv, cwd=cwd, writable=writable, readable=readable, network=network, run=run,
                              env=env, **({"shown": shown} if shown else {}))

    def check(self) -> None:
        self.host.check()


@functools.lru_cache(maxsize=32)
def host_libraries(binary: str) -> tuple[str, tuple[str, ...]]:
    """The host's dynamic loader for `binary` and the folders of the libraries it loads (whole: a Python's
    extension modules load more of them, e.g. libssl, libgcc_s)."""
    done = subprocess.run(["ldd", binary], capture_output=True, text=True)
    loader, folders = "", []
    for _name, path, ld in LDD_LINE.findall(done.stdout if done.returncode == 0 else ""):
        if ld:
            loader = loader or str(Path(ld).resolve())
        else:
            folders.append(str(Path(path).resolve().parent))
    return loader, tuple(dict.fromkeys(folders))


def _elf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


class TaskContainer:
    """One cell's trial in a container of the task's image: started at the first `wrap` (with that call's
    mounts), each agent call `exec`ed into it, the verifier after them (`trial`); removed by `close()`."""

    def __init__(self, engine: ContainerEngine, image: str, *, workdir: str, work: Path, limits: Limits,
                 skills: Path | None = None, skill_targets: Sequence[str] = (),
                 labels: Mapping[str, str] | None = None) -> None:
        self.engine, self.image, self.workdir, self.work = engine, image, workdir, Path(work)
        self.labels = dict(labels or {})     # whose container it is (eval/reaper.py removes a dead harness's)
        self.limits, self.skills, self.skill_targets = limits, skills, tuple(skill_targets)
        self.name = f"sm-agent-{uuid.uuid4().hex[:12]}"
        # short: a unix socket path has 108 bytes
        self._socket_dir = Path(tempfile.mkdtemp(prefix="sm-api-"))
        self.api_socket = self._socket_dir / "api.sock"                # the key proxy listens here too
        self.trial = Trial(engine, image, workdir=workdir, limits=limits, labels=self.labels, name=self.name)
        self._mounts: list[str] = []          # the `-v`s the trial started with
        self._made: list[Path] = []           # mount points the trial made in the work dir (removed at close)

    @property
    def id(self) -> str:
        return self.engine.id

    def check(self) -> None:
        return None

    def close(self) -> None:
        """The container gone (whatever still runs in it), and the mount points it made in the work dir."""
        self.trial.close()
        shutil.rmtree(self._socket_dir, ignore_errors=True)
        for made in self._made:
            if made.is_dir() and not any(files for _root, _dirs, files in os.walk(made)):
                shutil.rmtree(made, ignore_errors=True)

    def _start(self, mounts: list[str]) -> None:
        """Start the trial with these `-v`s (the first call's); a later call may need no other."""
        if self.trial.started:
            missing = [spec for spec in mounts if spec not in self._mounts and spec != "-v"]
            if missing:
                raise SandboxError(f"the task's container was started for another program; it lacks "
                                   f"{', '.join(missing)} (one agent program per cell)")
            return
        self._made = self._mount_points([spec for spec in mounts if spec != "-v"])
        self.trial.start(mounts)
        self._mounts = list(mounts)

    def _mount_points(self, specs: list[str]) -> list[Path]:
        """The top missing folder, in the work dir, of each mount target under WORKDIR: the engine makes it
        there (the work dir is bound at WORKDIR) as an empty folder the cell must not keep."""
        made = []
        root = Path(self.workdir)
        for spec in specs:
            target = Path(spec.split(":")[1])
            if target == root or root not in target.parents:
                continue
            host = self.work
            for part in target.relative_to(root).parts:
                host = host / part
                if not host.exists():
                    made.append(host)
                    break
        return list(dict.fromkeys(made))

    def _program(self, program: Program, rest: Sequence[str], mounts: list[str]) -> list[str]:
        """argv for a program of the host: an ELF (or a #! script's ELF interpreter) started by the host's
        loader with the host's libraries, mounted under RUNTIME; anything else as it is."""
        chain = program.programs()
        binary, args = (chain[0], []) if len(chain) == 1 else (chain[1], [*program.interpreter_args,
                                                                          str(program.path)])
        if len(chain) > 2 or not _elf(binary.path):
            return [*program.exec_argv(), *rest]
        loader, folders = host_libraries(str(binary.path))
        if not loader:
            return [*program.exec_argv(), *rest]
        # named by the host path, so two programs' mounts (the agent's, the relay's Python) never clash
        at = {path: f"{RUNTIME}/{hashlib.sha256(path.encode()).hexdigest()[:12]}"
              for path in (loader, *folders)}
        for path, target in at.items():
            if f"{path}:{target}:ro" not in mounts:
                mounts += ["-v", f"{path}:{target}:ro"]
        search = ":".join(at[folder] for folder in folders)
        return [at[loader], "--library-path", search, str(binary.path), *args, *rest]

    def start_argv(self, argv: Sequence[str]) -> list[str]:
        """How this container starts a program of the host (preflight's probe asks an interpreter to do
        nothing the way the agent's own start reaches it: through the host's
        loader, whose mounts `wrap` adds)."""
        return self._program(resolve_command(tuple(argv), cwd=self.work).program, list(argv[1:]), [])

    @staticmethod
    def _same_path(writable: Sequence[Path], readable: Sequence[Path]) -> list[str]:
        """Host paths bound at their own paths (a system dir never: it is the image's own)."""
        args: list[str] = []
        seen: set[Path] = set()
        for path, mode in [*((p, "rw") for p in writable), *((p, "ro") for p in readable)]:
            path = Path(path).absolute()
            if path in seen or _is_system(path) or not path.exists():
                continue
            seen.add(path)
            args += ["-v", f"{path.resolve()}:{path}:{mode}"]
        return args

    def _task_binds(self) -> list[str]:
        """The work dir at the task's WORKDIR, the genome where the task expects its
        skills, the proxy's socket."""
        args = ["-v", f"{self.work.resolve()}:{self.workdir}:rw"]
        if self.skills is not None and self.skills.is_dir():
            for target in self.skill_targets:
                args += ["-v", f"{self.skills.resolve()}:{target}:ro"]
        return args + ["-v", f"{self._socket_dir}:{self._socket_dir}:rw"]

    def wrap(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path], readable: Sequence[Path],
             network: bool, run: Sequence[str] | None = None, env: Mapping[str, str] | None = None,
             shown: Mapping[Path, Path] | None = None) -> list[str]:
        if shown:
            raise ValueError("a task's container shows host folders at their own paths only")
        env = dict(env or {})
        for name in CREDENTIAL_NAMES:   # defence in depth: only the key proxy's nonce may enter a container
            if env.get(name) and not env[name].startswith(NONCE_PREFIX):
                raise SandboxError(f"{name} would enter the task's container; it gets only the key proxy's "
                                   "nonce (a metered call)")
        command = resolve_command(tuple(argv), cwd=Path(cwd))
        mounts: list[str] = []
        inner = self._program(command.program, list(argv[1:]), mounts)
        if run is not None:
            # preflight's probe (sandbox/probe.py) in the image's own shell, mounts as for argv
            inner = list(run)
        shown = [*readable, *command.mounts(tuple(Path(w).absolute() for w in writable))]
        base = urlsplit(env.get("ANTHROPIC_BASE_URL", ""))
        # the key proxy relayed inside the container; a probe goes through the relay too (the harness's Python
        # must start there), on a port of its own
        if (base.hostname == "127.0.0.1" and base.port) or run is not None:
            relay = resolve_command((sys.executable, str(RELAY)), cwd=Path(cwd))
            shown += relay.mounts()
            port = base.port if base.hostname == "127.0.0.1" and base.port else PROBE_PORT
            inner = self._program(relay.program, [str(RELAY), str(self.api_socket), str(port), "--", *inner],
                                  mounts)
        binds = [*self._same_path(writable, shown), *self._task_binds()]
        for tool in command.tools:
            # a tool in a system dir (the claude CLI's native binary): that file alone
            if _is_system(tool.path) and tool.path.resolve().is_file():
                binds += ["-v", f"{tool.path.resolve()}:{tool.path}:ro"]
        self._start([*binds, *mounts])
        args = self.trial.exec_args(inner, env_file=self._env_file(env), stdin=True,
                                    workdir=self.workdir if Path(cwd) == self.work else str(cwd))
        client = [f"{name}={os.environ[name]}" for name in ENGINE_ENV if name in os.environ]
        return ["env", "-i", *client, *self.engine.argv(*args)]

    def _env_file(self, env: Mapping[str, str]) -> Path:
        """The agent's environment for the container, in a file only the harness reads (never in an argv)."""
        lines = []
        for name, value in env.items():
            if name in NOT_PASSED:
                continue
            if "\n" in value:
                raise SandboxError(f"the environment variable {name} holds a newline; a container's env file "
                                   f"cannot carry it (drop it from --pass-env)")
            lines.append(f"{name}={value}\n")
        path = self._socket_dir / "agent.env"
        path.touch(mode=0o600)
        path.write_text("".join(lines), encoding="utf-8")
        return path
