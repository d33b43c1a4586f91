"""The container engine (podman or docker): build a task's image once per environment content hash, and run
one command in a fresh container of it with only the given folders bound, no network unless asked, and the
task's cpus and memory.

A container gets only the environment variables named in `env` (never the harness's own: no API key enters),
and no device, socket or folder but its binds. Images are tagged `localhost/sm-env:<hash>`; a build that fails
raises `BuildError` with the log's tail, never a score. A short image name (`jasonish/suricata`, in a
Dockerfile's FROM or a task's docker_image) is qualified as `docker.io/...`, as docker reads it, unless podman
has unqualified-search registries configured (registries.conf), which then resolve it.

`Trial` is one container for a whole Harbor trial: it only waits, the agent and then the verifier are `exec`ed
into it, and what the cell keeps is copied out before it is removed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox import SandboxError

ENGINES = ("podman", "docker")
IMAGE_REPO = "localhost/sm-env"
LOG_TAIL = 3000
RLIMITS = re.compile(r"error setting rlimit|setrlimit `RLIMIT_")   # runc's and crun's words for the refusal
KEEPER = ["tail", "-f", "/dev/null"]          # a trial container's main process: it only waits
# FROM [--platform=...] image [AS stage]
FROM_LINE = re.compile(r"^(\s*FROM\s+(?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE | re.MULTILINE)
STAGE_NAME = re.compile(r"^\s*FROM\s+.*?\s+AS\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)
INSTALL_HINT = ("install podman (Debian/Ubuntu: `apt-get install podman runc`) or docker, or run Harbor "
                "suites with an engine on another machine")


BUILD_FAILED = "the task's image did not build or pull"   # the words a build failure's message starts with


class BuildError(SandboxError):
    """An environment's image could not be built; the message holds the build log's tail."""


@dataclass(frozen=True)
class Bind:
    host: Path
    container: str
    writable: bool = False


@dataclass(frozen=True)
class Limits:
    cpus: int = 1
    memory_mb: int = 2048
    timeout_s: float = 600.0
    network: bool = False


@dataclass(frozen=True)
class Finished:
    exit_code: int | None          # None: killed at the timeout
    output: str                    # stdout and stderr together, its tail

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None


def _tail(text: str) -> str:
    return text[-LOG_TAIL:]


def qualify(ref: str) -> str:
    """`jasonish/suricata` -> `docker.io/jasonish/suricata`, `ubuntu:24.04` ->
    `docker.io/library/ubuntu:24.04` (docker's reading of a short name); a name with a registry (a dot, a
    port or `localhost` before its first slash), a variable reference and `scratch` stay as they are."""
    if not ref or "$" in ref or ref == "scratch":
        return ref
    first, slash, _rest = ref.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return ref
    return f"docker.io/{ref}" if slash else f"docker.io/library/{ref}"


def qualified_dockerfile(text: str) -> str:
    """The Dockerfile with each FROM's short image name qualified (an earlier stage's name left alone)."""
    stages = {name.lower() for name in STAGE_NAME.findall(text)}
    def one(match: re.Match) -> str:
        ref = match.group(2)
        return match.group(0) if ref.lower() in stages else match.group(1) + qualify(ref) + match.group(3)
    return FROM_LINE.sub(one, text)


class ContainerEngine:
    """One engine program and the global flags this host needs (e.g. `--runtime
    runc` where crun cannot run)."""

    def __init__(self, program: str, global_args: Sequence[str] = (), *, search: Sequence[str] = ()) -> None:
        self.program = program
        self.global_args = tuple(global_args)
        self.search = tuple(search)      # podman's unqualified-search registries: when set, short names stay

    def image_name(self, ref: str) -> str:
        """How an image name is given to this engine (short names qualified unless podman searches)."""
        return ref if self.search else qualify(ref)

    @property
    def id(self) -> str:
        return self.program

    def argv(self, *args: str) -> list[str]:
        return [self.program, *self.global_args, *args]

    def _run(self, args: Sequence[str], timeout_s: float) -> Finished:
        try:
            done = subprocess.run(self.argv(*args), capture_output=True, text=True, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as err:
            out = (err.stdout or b"") + (err.stderr or b"")
            return Finished(None, _tail(out.decode("utf-8", "replace") if isinstance(out, bytes) else out))
        return Finished(done.returncode, _tail(done.stdout + done.stderr))

    def has_image(self, tag: str) -> bool:
        return self._run(["image", "inspect", "--format", "{{.Id}}", tag], 60).exit_code == 0

    def image_for(self, context: Path, content_hash: str, *, timeout_s: float = 600.0,
                  base_image: str | None = None) -> str:
        """The image of a build context, built once per content hash (a prebuilt
        `base_image` is used as is)."""
        if base_image and not (context / "Dockerfile").is_file():
            return self.pulled(base_image, timeout_s)
        tag = f"{IMAGE_REPO}:{content_hash}"
        if self.has_image(tag):
            return tag
        dockerfile = (context / "Dockerfile").read_text(encoding="utf-8", errors="replace")
        with tempfile.TemporaryDirectory(prefix="sm-build-") as tmp:
            # the context as it is; the Dockerfile beside it, its short names qualified
            build_file = Path(tmp) / "Dockerfile"
            build_file.write_text(dockerfile if self.search else qualified_dockerfile(dockerfile),
                                  encoding="utf-8")
            # a build may fetch packages (as Harbor's do): no agent, no secret and no cell is in it
            done = self._run(["build", "-q", "-t", tag, "-f", str(build_file), str(context)], timeout_s)
        if done.timed_out:
            raise BuildError(f"{BUILD_FAILED}: building {context} timed out after {timeout_s:g} s; log tail:"
                             f"\n{done.output}")
        if done.exit_code != 0:
            raise BuildError(f"{BUILD_FAILED}: building {context} failed (exit {done.exit_code}); log tail:"
                             f"\n{done.output}")
        return tag

    def pulled(self, ref: str, timeout_s: float = 600.0) -> str:
        """A prebuilt image (task.toml's docker_image), pulled when missing; BuildError with the log."""
        name = self.image_name(ref)
        if self.has_image(name):
            return name
        done = self._run(["pull", "-q", name], timeout_s)
        if done.exit_code != 0:
            why = "timed out" if done.timed_out else f"failed (exit {done.exit_code})"
            raise BuildError(f"{BUILD_FAILED}: pulling {name} {why}; log tail:\n{done.output}")
        return name

    def copy_out(self, image: str, folder: str, dest: Path) -> str:
        """Copy `folder`'s contents from the image into `dest` (a created, never started, container: no
        program of the image runs); "" or why it failed. A folder the image lacks copies nothing."""
        name = f"sm-{uuid.uuid4().hex[:12]}"
        # never started
        made = self._run(["create", "--name", name, "--network", "none", image, "true"], 120)
        if made.exit_code != 0:
            return f"creating a container of {image} failed: {made.output.strip()[-500:]}"
        try:
            done = self._run(["cp", f"{name}:{folder.rstrip('/')}/.", str(dest)], 600)
        finally:
            self._run(["rm", "-f", name], 60)
        if done.exit_code != 0 and "no such file" not in done.output.lower():
            return f"copying {folder} out of {image} failed: {done.output.strip()[-500:]}"
        return ""

    def run(self, image: str, command: Sequence[str], *, binds: Sequence[Bind], workdir: str, limits: Limits,
            env: Mapping[str, str] | None = None) -> Finished:
        """Run `command` in a fresh container removed afterwards; only `binds`
        and `env` come from the host."""
        name = f"sm-{uuid.uuid4().hex[:12]}"   # so a container outliving its timeout is removed by name
        args = ["run", "--rm", "--name", name, "--workdir", workdir, "--cpus", str(limits.cpus),
                "--memory", f"{limits.memory_mb}m"]
        if not limits.network:
            args += ["--network", "none"]
        for bind in binds:
            mode = "rw" if bind.writable else "ro"
            args += ["-v", f"{Path(bind.host).resolve()}:{bind.container}:{mode}"]
        for name, value in (env or {}).items():
            args += ["-e", f"{name}={value}"]
        done = self._run([*args, image, *command], limits.timeout_s)
        if done.timed_out:
            self._run(["rm", "-f", name], 60)
        elif RLIMITS.search(done.output):
            raise SandboxError(f"{self.program} cannot start containers here: the kernel refuses its default "
                               f"rlimits ({done.output.strip()[-200:]}); point CONTAINERS_CONF at a file "
                               "holding `[containers]` `default_ulimits = []`")
        return done

    def check(self) -> None:
        if shutil.which(self.program) is None:
            raise SandboxError(f"--sandbox {self.program}: `{self.program}` is not on PATH; {INSTALL_HINT}")
        done = self._run(["info", "--format", "json"], 60)
        if done.exit_code != 0:
            raise SandboxError(f"--sandbox {self.program}: `{self.program} info` failed: "
                               f"{done.output.strip()[-500:]}")


class Trial:
    """One container of a task's image for a whole trial, as Harbor runs one: its main process only waits;
    the agent (or the oracle) and then the verifier are `exec`ed into it, so what the first wrote anywhere in
    the container (not only in WORKDIR) is what the second sees. `close()` removes it (`kill`, then `rm -f`).
    Only the binds and the `exec`s' own environments come from the host."""

    def __init__(self, engine: ContainerEngine, image: str, *, workdir: str, limits: Limits,
                 binds: Sequence[Bind] = (), labels: Mapping[str, str] | None = None,
                 name: str | None = None) -> None:
        self.engine, self.image, self.workdir, self.limits = engine, image, workdir, limits
        self.binds, self.labels = tuple(binds), dict(labels or {})
        self.name = name or f"sm-trial-{uuid.uuid4().hex[:12]}"
        self.started = False

    def start_args(self, extra: Sequence[str] = ()) -> list[str]:
        """`run -d` of the waiting container: limits, network, labels, binds, then `extra` (more `-v`s)."""
        limits = self.limits
        args = ["run", "-d", "--name", self.name, "--workdir", self.workdir, "--cpus", str(limits.cpus),
                "--memory", f"{limits.memory_mb}m"]
        if not limits.network:
            args += ["--network", "none"]
        for key, value in self.labels.items():
            args += ["--label", f"{key}={value}"]
        for bind in self.binds:
            args += ["-v", f"{Path(bind.host).resolve()}:{bind.container}:{'rw' if bind.writable else 'ro'}"]
        return [*args, *extra, self.image, *KEEPER]

    def start(self, extra: Sequence[str] = ()) -> None:
        """Start the waiting container (raises SandboxError naming why it could not)."""
        done = self.engine._run(self.start_args(extra), 300)
        self.started = done.exit_code == 0
        if not self.started:
            self.engine._run(["rm", "-f", self.name], 60)
            if RLIMITS.search(done.output):
                raise SandboxError(f"{self.engine.program} cannot start containers here: the kernel "
                                   f"refuses its default rlimits ({done.output.strip()[-200:]}); point "
                                   "CONTAINERS_CONF at a file holding `[containers]` `default_ulimits = []`")
            raise SandboxError(f"starting a container of {self.image} failed: {done.output.strip()[-500:]}")

    def exec_args(self, command: Sequence[str], *, env: Mapping[str, str] | None = None,
                  env_file: Path | None = None, workdir: str | None = None, stdin: bool = False,
                  user: str | None = None) -> list[str]:
        args = ["exec", *(["-i"] if stdin else []), *(["--user", user] if user else []),
                "--workdir", workdir or self.workdir]
        if env_file is not None:
            args += ["--env-file", str(env_file)]
        for key, value in (env or {}).items():
            args += ["-e", f"{key}={value}"]
        return [*args, self.name, *command]

    def exec(self, command: Sequence[str], *, timeout_s: float, env: Mapping[str, str] | None = None,
             workdir: str | None = None, user: str | None = None) -> Finished:
        """`command` in the container as the image's user (`user`: e.g. "0" for the harness's own chores)."""
        return self.engine._run(self.exec_args(command, env=env, workdir=workdir, user=user), timeout_s)

    def put(self, source: Path, path: str) -> str:
        """`source`'s contents at `path` in the container (replacing what was there); "" or why it failed."""
        cleared = self.exec(["rm", "-rf", path], timeout_s=120, user="0")
        if cleared.exit_code != 0:
            return f"clearing {path} in the trial container failed: {cleared.output.strip()[-300:]}"
        done = self.engine._run(["cp", f"{Path(source).resolve()}/.", f"{self.name}:{path}"], 600)
        return "" if done.exit_code == 0 else (f"copying {source} to {path} failed: "
                                               f"{done.output.strip()[-300:]}")

    def take(self, path: str, dest: Path) -> str:
        """`path`'s contents copied out into `dest` (made); "" or why it failed (a missing path: none)."""
        Path(dest).mkdir(parents=True, exist_ok=True)
        done = self.engine._run(["cp", f"{self.name}:{path.rstrip('/')}/.", str(dest)], 600)
        if done.exit_code != 0 and "no such file" not in done.output.lower():
            return f"copying {path} out of the trial container failed: {done.output.strip()[-300:]}"
        return ""

    def close(self) -> None:
        """The container gone, whatever still runs in it (an agent's process left at a timeout)."""
        self.engine._run(["kill", self.name], 60)
        self.engine._run(["rm", "-f", self.name], 120)
        self.started = False

    def __enter__(self) -> Trial:
        self.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def podman_args(info: dict) -> list[str]:
    """The global flags podman needs on this host: crun refuses cgroup v1 ("hybrid mode"), runc does not."""
    host = info.get("host", {})
    if host.get("cgroupVersion") == "v1" and host.get("ociRuntime",
                                                      {}).get("name") == "crun" and shutil.which("runc"):
        return ["--runtime", "runc", "--cgroup-manager", "cgroupfs"]
    return []


def get_engine(engine_id: str = "auto") -> ContainerEngine:
    """A checked engine: `podman`, `docker`, or `auto` (podman, else docker)."""
    if engine_id == "auto":
        problems = []
        for program in ENGINES:
            try:
                return get_engine(program)
            except SandboxError as err:
                problems.append(str(err))
        raise SandboxError("no container engine works here: " + "; ".join(problems))
    if engine_id not in ENGINES:
        raise SandboxError(f"unknown container engine {engine_id!r}; choose one of: auto, "
                           f"{', '.join(ENGINES)}")
    engine = ContainerEngine(engine_id)
    engine.check()
    if engine_id == "podman":
        info = subprocess.run(engine.argv("info", "--format", "json"), capture_output=True, text=True,
                              timeout=60)
        found = json.loads(info.stdout or "{}")
        engine = ContainerEngine("podman", podman_args(found), search=podman_search(found))
    return engine


def podman_search(info: dict) -> list[str]:
    """podman's unqualified-search registries (registries.conf), which resolve short image names."""
    search = (info.get("registries") or {}).get("search") or []
    return [str(r) for r in search] if isinstance(search, list) else []
