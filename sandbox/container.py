"""The container engine (podman or docker): build a task's image once per environment content hash, and run
one command in a fresh container of it with only the given folders bound, no network unless asked, and the
task's cpus and memory.

A container gets only the environment variables named in `env` (never the harness's own: no API key enters),
and no device, socket or folder but its binds. Images are tagged `localhost/sm-env:<hash>`; a build that fails
raises `BuildError` with the log's tail, never a score.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox import SandboxError

ENGINES = ("podman", "docker")
IMAGE_REPO = "localhost/sm-env"
LOG_TAIL = 3000
RLIMITS = re.compile(r"error setting rlimit|setrlimit `RLIMIT_")   # runc's and crun's words for the refusal
INSTALL_HINT = ("install podman (Debian/Ubuntu: `apt-get install podman runc`) or docker, or run Harbor "
                "suites with an engine on another machine")


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


class ContainerEngine:
    """One engine program and the global flags this host needs (e.g. `--runtime
    runc` where crun cannot run)."""

    def __init__(self, program: str, global_args: Sequence[str] = ()) -> None:
        self.program = program
        self.global_args = tuple(global_args)

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
            return base_image
        tag = f"{IMAGE_REPO}:{content_hash}"
        if self.has_image(tag):
            return tag
        # a build may fetch packages (as Harbor's do): no agent, no secret and no cell is in it
        done = self._run(["build", "-q", "-t", tag, "-f", str(context / "Dockerfile"),
                          str(context)], timeout_s)
        if done.timed_out:
            raise BuildError(f"building {context} timed out after {timeout_s:g} s; log tail:\n{done.output}")
        if done.exit_code != 0:
            raise BuildError(f"building {context} failed (exit {done.exit_code}); log tail:\n{done.output}")
        return tag

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
        engine = ContainerEngine("podman", podman_args(json.loads(info.stdout or "{}")))
    return engine
