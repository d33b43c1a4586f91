"""Read a Harbor-format task folder (Terminal-Bench 2, SkillsBench): instruction.md, task.toml, environment/,
tests/test.sh, solution/solve.sh; and the `harbor/<id>/` copy an imported suite keeps of each task.

Only single-container, single-step tasks of task.toml schema 0.0/1.0/1.1 are read (0.0, SkillsBench's oldest,
has the fields we read, and says so in a note); a compose file declaring another service than `main`, a
multi-step task, a symlink out of the task or a file that is not UTF-8 text is refused by name
(eval/harbor_compose.py says when a compose file counts). Every problem raises `HarborError` naming the task
folder and the file; `scan_tasks` gathers them per task so a dataset imports what it can. Never runs
anything; the oracle (solution/) is located here but copied by nobody but the importer.
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from eval.errors import SkillMutatorError
from eval.harbor_compose import COMPOSE_FILE, Compose, ComposeError, read_compose
from eval.snapshot import list_files

SCHEMA_VERSIONS = ("0.0", "1.0", "1.1")   # task.toml `version` / `schema_version` values this reader knows
OLD_SCHEMA_NOTE = "task.toml version 0.0: read as 1.0 (the fields this harness reads are the same)"
# a verifier that fetches its tools at test time (needs the network in the verifier's container)
FETCHES = re.compile(r"(?:^|[\s;|&(`])(curl|wget|pip3?|uvx?|apt-get|apt|apk|npm|npx|conda)(?=\s)")
DEFAULT_WORKDIR = "/app"             # Terminal-Bench's and SkillsBench's WORKDIR when a Dockerfile names none
SKILLS_DIR = "skills"                # SkillsBench: environment/skills/ holds the task's bundled skills
MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([GMK])\s*$", re.IGNORECASE)
WORKDIR_LINE = re.compile(r"^\s*WORKDIR\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)
# `COPY skills /root/.claude/skills` (flags such as --chown allowed): where the task expects its skills
SKILLS_COPY = re.compile(r"^\s*(?:COPY|ADD)\s+(?:--\S+\s+)*\.?/?skills/?\s+(\S+)\s*$",
                         re.IGNORECASE | re.MULTILINE)


class HarborError(SkillMutatorError, ValueError):
    """A Harbor task folder is malformed or uses what we do not run; the message names the folder, the file
    and the fix."""


@dataclass(frozen=True)
class HarborConfig:
    """What task.toml says that the harness acts on (Harbor's field names; seconds and MB as Harbor's)."""
    schema: str = "1.0"
    agent_timeout_sec: float | None = None
    verifier_timeout_sec: float = 600.0
    verifier_env: dict[str, str] = field(default_factory=dict)
    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    cpus: int = 1
    memory_mb: int = 2048
    allow_internet: bool = True


@dataclass(frozen=True)
class HarborTask:
    id: str
    path: Path
    instruction: str
    config: HarborConfig
    workdir: str                   # where the task's files live in its container (the Dockerfile's WORKDIR)
    compose: Compose = field(default_factory=Compose)
    notes: tuple[str, ...] = ()    # what the import says about the task (an old schema, its compose file)

    @property
    def environment(self) -> Path:
        return self.path / "environment"

    @property
    def tests(self) -> Path:
        return self.path / "tests"

    @property
    def solution(self) -> Path:
        return self.path / "solution"

    @property
    def has_oracle(self) -> bool:
        return (self.solution / "solve.sh").is_file()

    def fetched_tools(self) -> list[str]:
        """The fetching programs tests/test.sh names (curl, pip, uv, apt...): it needs the network."""
        text = (self.tests / "test.sh").read_text(encoding="utf-8", errors="replace")
        lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
        return sorted({m.group(1) for line in lines for m in FETCHES.finditer(line)})

    def environment_hash(self) -> str:
        """The build context's content hash (bundled skills/ left out: the genome takes their place)."""
        files = [rel for rel in list_files(self.environment) if rel.parts[0] != SKILLS_DIR]
        digest = hashlib.sha256()
        for rel in files:
            content = hashlib.sha256((self.environment / rel).read_bytes()).digest()
            digest.update(rel.as_posix().encode() + b"\0" + content)
        if self.config.docker_image:
            digest.update(b"image\0" + self.config.docker_image.encode())
        return digest.hexdigest()[:16]

    def skill_targets(self) -> list[str]:
        """Where the task's Dockerfile puts its bundled skills (absolute; a relative one is under WORKDIR)."""
        dockerfile = self.environment / "Dockerfile"
        text = dockerfile.read_text(encoding="utf-8", errors="replace") if dockerfile.is_file() else ""
        targets = [t.strip("'\"").rstrip("/") for t in SKILLS_COPY.findall(text)]
        return list(dict.fromkeys(t if t.startswith("/") else f"{self.workdir.rstrip('/')}/{t}"
                                  for t in targets if t))

    def environment_files(self) -> list[Path]:
        """The environment's files an agent on the host is given (relative): all but
        the Dockerfile, skills/ and a compose file in use."""
        skip = {"Dockerfile"} | ({COMPOSE_FILE} if self.compose.used else set())
        return [rel for rel in list_files(self.environment)
                if rel.parts[0] != SKILLS_DIR and rel.as_posix() not in skip]


def _section(data: dict, name: str, where: Path) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise HarborError(f"{where}: [{name}] must be a table")
    return value


def _number(section: dict, key: str, default, where: Path, name: str, kind=float):
    value = section.get(key, default)
    if value is None and default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise HarborError(f"{where}: [{name}] {key} = {value!r} must be a positive number")
    return kind(value)


def _memory_mb(env: dict, where: Path) -> int:
    if "memory" in env and "memory_mb" not in env:   # Harbor's deprecated spelling: "2G", "512M"
        match = MEMORY.match(str(env["memory"]))
        if not match:
            raise HarborError(f"{where}: [environment] memory = {env['memory']!r}: write memory_mb = 2048 "
                              f"(or memory = '2G' / '512M')")
        scale = {"G": 1024, "M": 1, "K": 1 / 1024}[match.group(2).upper()]
        return max(1, int(float(match.group(1)) * scale))
    return _number(env, "memory_mb", 2048, where, "environment", int)


def parse_config(text: str, where: Path) -> HarborConfig:
    """task.toml's fields the harness uses, validated; unknown keys are ignored, as Harbor ignores them."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise HarborError(f"{where}: not valid TOML ({err})") from None
    schema = str(data.get("schema_version", data.get("version", "1.0")))
    if schema not in SCHEMA_VERSIONS:
        raise HarborError(f"{where}: task.toml schema {schema!r} is not one this harness reads "
                          f"({', '.join(SCHEMA_VERSIONS)}); convert the task or set version = \"1.0\"")
    if "steps" in data:
        raise HarborError(f"{where}: multi-step tasks ([[steps]]) "
                          "are not supported; import single-step tasks only")
    verifier, agent = _section(data, "verifier", where), _section(data, "agent", where)
    env = _section(data, "environment", where)
    venv = verifier.get("env", {})
    if not isinstance(venv, dict) or not all(isinstance(v, str) for v in venv.values()):
        raise HarborError(f"{where}: [verifier] env must be a table of NAME = \"value\" strings")
    if env.get("gpus", 0):
        raise HarborError(f"{where}: [environment] gpus = {env['gpus']!r}: "
                          "tasks needing GPUs are not supported")
    image = env.get("docker_image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        raise HarborError(f"{where}: [environment] docker_image must be an image name string")
    internet = env.get("allow_internet", True)
    if not isinstance(internet, bool):
        raise HarborError(f"{where}: [environment] allow_internet must be true or false")
    return HarborConfig(
        schema=schema, agent_timeout_sec=_number(agent, "timeout_sec", None, where, "agent"),
        verifier_timeout_sec=_number(verifier, "timeout_sec", 600.0, where, "verifier"),
        verifier_env=dict(venv),
        build_timeout_sec=_number(env, "build_timeout_sec", 600.0, where, "environment"),
        docker_image=image, cpus=_number(env, "cpus", 1, where, "environment", int),
        memory_mb=_memory_mb(env, where), allow_internet=internet)


def dockerfile_workdir(dockerfile: Path) -> str:
    """The last WORKDIR of a Dockerfile (where the task's files and the agent's work live), else /app."""
    text = dockerfile.read_text(encoding="utf-8", errors="replace") if dockerfile.is_file() else ""
    found = WORKDIR_LINE.findall(text) if text else []
    workdir = found[-1].strip("'\"") if found else DEFAULT_WORKDIR
    return workdir if workdir.startswith("/") else DEFAULT_WORKDIR


def read_text(path: Path, task: Path) -> str:
    """A task's text file; one that is not UTF-8 is refused naming it (Harbor reads them as UTF-8)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise HarborError(f"{task}: {path.relative_to(task).as_posix()} is not UTF-8 text (byte "
                          f"{err.object[err.start]:#04x} at offset {err.start}); convert it, e.g. "
                          f"iconv -f latin1 -t utf-8") from None


def check_links(path: Path) -> None:
    """Refuse symlinks under the task that point outside it (their content would be copied in)."""
    root = path.resolve()
    escaping = []
    for top in ("instruction.md", "task.toml", "environment", "tests", "solution"):
        start = path / top
        walk = [(str(path), [], [top])] if not start.is_dir() or start.is_symlink() else os.walk(start)
        for folder, dirs, files in walk:
            for name in [*dirs, *files]:
                link = Path(folder) / name
                if link.is_symlink() and not link.resolve().is_relative_to(root):
                    escaping.append(f"{link.relative_to(path).as_posix()} -> {os.readlink(link)}")
    if escaping:
        raise HarborError(f"{path}: symlink(s) pointing outside the task: {'; '.join(sorted(escaping))}; "
                          "nothing is copied from outside a task: replace them with the files")


def read_task(path: Path, *, oracle: bool = False) -> HarborTask:
    """One Harbor task folder, checked. `oracle=True` also requires solution/solve.sh."""
    path = Path(path)
    if not path.is_dir():
        raise HarborError(f"{path}: not a Harbor task folder (a folder "
                          "with instruction.md, task.toml, tests/)")
    check_links(path)
    instruction = path / "instruction.md"
    text = read_text(instruction, path) if instruction.is_file() else ""
    if not text.strip():
        raise HarborError(f"{path}: instruction.md is missing or empty; it is the task's prompt")
    toml = path / "task.toml"
    if not toml.is_file():
        raise HarborError(f"{path}: task.toml is missing; write at least version = \"1.0\"")
    config = parse_config(read_text(toml, path), toml)
    env = path / "environment"
    compose_file = env / COMPOSE_FILE
    try:
        compose = read_compose(env, read_text(compose_file, path) if compose_file.is_file() else None)
    except ComposeError as err:
        raise HarborError(f"{path}: {err}") from None
    if not (env / "Dockerfile").is_file() and not config.docker_image:
        raise HarborError(f"{path}: environment/Dockerfile is missing and task.toml names no [environment] "
                          f"docker_image; add one of them")
    if not (path / "tests" / "test.sh").is_file():
        raise HarborError(f"{path}: tests/test.sh is missing; it is the verifier (it writes "
                          "/logs/verifier/reward.txt)")
    if oracle and not (path / "solution" / "solve.sh").is_file():
        raise HarborError(f"{path}: solution/solve.sh is missing; the oracle check needs the task's "
                          "reference solution")
    notes = ((OLD_SCHEMA_NOTE,) if config.schema == "0.0" else ()) + compose.notes
    return HarborTask(path.name, path.resolve(), text, config, dockerfile_workdir(env / "Dockerfile"),
                      compose, notes)


def scan_tasks(root: Path) -> tuple[list[HarborTask], dict[str, str]]:
    """`root` is one task folder or a dataset of them (its sub-folders holding task.toml): the tasks that
    read cleanly, sorted by id, and those that do not, id -> the reason (the HarborError's words)."""
    root = Path(root)
    if (root / "task.toml").is_file():
        folders = [root]
    elif root.is_dir():
        folders = [sub for sub in sorted(root.iterdir()) if sub.is_dir() and (sub / "task.toml").is_file()]
    else:
        raise HarborError(f"{root}: not found; pass a Harbor task folder or a folder of them (e.g. "
                          "skillsbench/tasks)")
    if not folders:
        raise HarborError(f"{root}: holds no Harbor task (no sub-folder with a task.toml)")
    tasks, left_out = [], {}
    for folder in folders:
        try:
            tasks.append(read_task(folder))
        except HarborError as err:
            left_out[folder.name] = str(err).removeprefix(f"{folder}: ")
    return tasks, left_out


def find_tasks(root: Path) -> list[HarborTask]:
    """`root`'s tasks (see scan_tasks); the first that does not read raises its HarborError."""
    tasks, left_out = scan_tasks(root)
    if left_out:
        task_id, reason = next(iter(left_out.items()))
        folder = Path(root) if (Path(root) / "task.toml").is_file() else Path(root) / task_id
        raise HarborError(f"{folder}: {reason}")
    return tasks


def check_suite_tasks(suite_path: Path, task_ids: list[str]) -> None:
    """An imported suite's `harbor/<id>/` folders: each task of tasks.jsonl has one, and it reads cleanly."""
    for task_id in task_ids:
        folder = Path(suite_path) / "harbor" / task_id
        if not folder.is_dir():
            raise HarborError(f"{suite_path}: runner 'harbor' needs harbor/{task_id}/ (the Harbor task "
                              "folder without its solution); re-import the suite with --import-harbor")
        read_task(folder)
