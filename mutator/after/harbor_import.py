"""Import Harbor-format tasks (one task folder, or a dataset of them) as `runner: harbor` suites.

Each task becomes a task of <out>/<name>-train, -val or -test (a seeded shuffle, or a --split-file; a single
task goes to train alone): its prompt is instruction.md; its environment's files (all but the Dockerfile and
skills/) are its inputs; harbor/<id>/ keeps instruction.md, task.toml, environment/ and tests/ for the
verifier; the oracle (solution/) goes to oracle/<id>/, which no cell and no mutator view ever gets (a task
without one is marked `"oracle": false` in tasks.jsonl and has no oracle/<id>/). A task that cannot be
imported is left out with its reason (`strict` refuses the whole import instead). Writes only under `out`,
and nothing there when it fails; refuses to overwrite an import.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from eval.harbor import SKILLS_DIR, HarborError, HarborTask, read_task, scan_tasks
from eval.harbor_compose import env_lines
from eval.snapshot import copy_tree
from eval.suite import load_suite, name_problem
from mutator.after.importer import Imported, split_counts

SPLITS = ("train", "val", "test")
LEFT_OUT = "The task's bundled skills are left out of its image: the skill under test takes their place.\n"


def seeded_split(ids: list[str], seed: int) -> dict[str, list[str]]:
    order = list(ids)
    random.Random(f"import-harbor:{seed}").shuffle(order)
    counts, start, split = split_counts(len(order)), 0, {}
    for name in SPLITS:
        split[name] = sorted(order[start:start + counts[name]])
        start += counts[name]
    return split


def file_split(split_file: Path, ids: list[str]) -> dict[str, list[str]]:
    """A split file: {"train": [ids], "val": [ids], "test": [ids]} naming every task exactly once."""
    try:
        raw = json.loads(Path(split_file).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise HarborError(f"--split-file {split_file}: cannot be read as JSON ({err})") from None
    if not isinstance(raw,
                      dict) or set(raw) - set(SPLITS) or not all(isinstance(v, list) for v in raw.values()):
        raise HarborError(f"--split-file {split_file}: write "
                          f"{{\"train\": [ids], \"val\": [ids], \"test\": [ids]}}")
    named = [i for v in raw.values() for i in v]
    if sorted(named) != sorted(ids):
        missing, unknown = sorted(set(ids) - set(named)), sorted(set(named) - set(ids))
        raise HarborError(f"--split-file {split_file}: must name each task once; missing {missing}, unknown "
                          f"{unknown}, repeated {sorted({i for i in named if named.count(i) > 1})}")
    if not raw.get("train") or not raw.get("val"):
        raise HarborError(f"--split-file {split_file}: train and val each need at least one task")
    return {name: sorted(raw.get(name, [])) for name in SPLITS}


@dataclass
class HarborImport:
    """What one import made and what it says: the suites, the tasks left out (id -> reason), per-task notes,
    the tasks without an oracle and those whose verifier fetches tools without the network to do it."""
    suites: list[Imported]
    left_out: dict[str, str] = field(default_factory=dict)
    notes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    no_oracle: list[str] = field(default_factory=list)
    fetching: dict[str, str] = field(default_factory=dict)     # id -> why its verifier will lack the network


def task_line(task: HarborTask, environment_hash: str) -> dict:
    """The task as tasks.jsonl holds it; `environment` (the kept environment's content hash) keys the agent's
    work on the image; `"oracle": false` marks a task without solution/solve.sh."""
    note = (f"\n\n(Your working directory holds the task's {task.workdir}: its files are there, and your "
            f"outputs go there; the verifier sees it at {task.workdir}.)\n")
    line = {"id": task.id, "prompt": task.instruction.rstrip() + note,
            "inputs": [rel.as_posix() for rel in task.environment_files()],
            "environment": environment_hash, "workdir": task.workdir}
    if task.config.agent_timeout_sec:
        line["agent_timeout_sec"] = task.config.agent_timeout_sec
    if not task.has_oracle:
        line["oracle"] = False
    return line


def copy_task(task: HarborTask, suite: Path) -> str:
    """The task's files into the suite (see the module's docstring); returns the kept environment's hash."""
    keep = suite / "harbor" / task.id
    keep.mkdir(parents=True)
    for name in ("instruction.md", "task.toml"):
        shutil.copy2(task.path / name, keep / name)
    shutil.copytree(task.tests, keep / "tests")
    if task.environment.is_dir():
        shutil.copytree(task.environment, keep / "environment",
                        ignore=lambda folder,
                        names: {SKILLS_DIR} & set(names) if Path(folder) == task.environment else set())
        if (task.environment / SKILLS_DIR).is_dir():   # kept empty, so a Dockerfile's COPY of it still builds
            (keep / "environment" / SKILLS_DIR).mkdir()
            (keep / "environment" / SKILLS_DIR / "LEFT-OUT.md").write_text(LEFT_OUT, encoding="utf-8")
        dockerfile = keep / "environment" / "Dockerfile"
        if task.compose.env and dockerfile.is_file():   # compose's `main` environment, as the image's own
            with dockerfile.open("a", encoding="utf-8") as out:
                out.write("\n# from docker-compose.yaml's service main (the import)\n"
                          + env_lines(task.compose.env))
    fixtures = suite / "fixtures" / task.id
    fixtures.mkdir(parents=True)
    for rel in task.environment_files():
        (fixtures / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(task.environment / rel, fixtures / rel)
    if task.has_oracle:
        shutil.copytree(task.solution, suite / "oracle" / task.id)
    return read_task(keep).environment_hash()


def write_suite(path: Path, split: str, tasks: list[HarborTask], source: Path, how: str,
                network: bool = False) -> Imported:
    path.mkdir(parents=True)
    lines = [task_line(t, copy_task(t, path)) for t in tasks]
    (path / "tasks.jsonl").write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                                      encoding="utf-8")
    schemas = sorted({t.config.schema for t in tasks})
    bare = [t.id for t in tasks if not t.has_oracle]
    (path / "suite.md").write_text(
        f"---\nname: {path.name}\nsplit: {split}\nrunner: harbor\nharbor_schema: {', '.join(schemas)}\n"
        f"task_network: {'allowed' if network else 'none'}\n---\n\n"
        f"# {path.name}\n\nImported from the Harbor tasks at `{source}`, split {split} {how}. Each task's "
        "verifier (harbor/<id>/tests/test.sh) runs in the task's container; its reward is the score. The "
        "oracle (oracle/<id>/solve.sh) is for `--validate-suite` only."
        + (f" Without an oracle (no solution/solve.sh): {', '.join(bare)}." if bare else "") + "\n",
        encoding="utf-8")
    suite = load_suite(path)   # the suite must load like any hand-written one
    return Imported(split, path, tuple(t.id for t in suite.tasks))


def left_out_table(left_out: dict[str, str]) -> str:
    """The tasks an import left out, one line each: id, then the reason."""
    width = max([len("task"), *map(len, left_out)])
    return "\n".join([f"{'task':{width}}  reason", *(f"{task_id:{width}}  {reason}"
                                                    for task_id, reason in sorted(left_out.items()))])


def fetch_warning(task: HarborTask, task_network: bool) -> str | None:
    """Why the task's verifier, fetching tools at test time, will lack the network (None: it will have it)."""
    tools = task.fetched_tools()
    if not tools or (task_network and task.config.allow_internet):
        return None
    why = ("its task.toml sets allow_internet = false" if task_network else
           "the suite is imported without --allow-task-network")
    return (f"tests/test.sh fetches tools at test time ({', '.join(tools)}) but {why}: its verifier has no "
            "network")


def split_of(ids: list[str], left_out: dict[str, str], source: Path, seed: int,
             split_file: Path | None) -> tuple[dict[str, list[str]], str]:
    if len(ids) == 1:
        if split_file:
            raise HarborError(f"--split-file {split_file}: one task ({ids[0]}) imports into train only; drop "
                              "--split-file")
        return {"train": ids}, "(one task: train only)"
    if not split_file:
        return seeded_split(ids, seed), f"by seed {seed}"
    split = file_split(split_file, sorted([*ids, *left_out]))   # may name the tasks left out: dropped here
    split = {name: [i for i in named if i not in left_out] for name, named in split.items()}
    if not split["train"] or not split["val"]:
        raise HarborError(f"--split-file {split_file}: with the tasks left out of {source} dropped, train "
                          "and val each need at least one task")
    return split, f"by {split_file}"


def import_harbor(source: Path, out: Path, *, seed: int = 0, split_file: Path | None = None,
                  task_network: bool = False, strict: bool = False) -> HarborImport:
    """Import every task of `source` that reads (see the module's docstring); `strict`: any task left out
    refuses the import (HarborError holding the table), as does a source where no task reads."""
    source, out = Path(source), Path(out)
    if problem := name_problem(out.name):
        raise HarborError(f"--out {out}: the folder name {out.name!r} names the suites and is invalid: "
                          f"{problem}")
    if out.exists() and any(out.iterdir()):
        raise HarborError(f"--out {out}: already exists and is not empty; pick a new folder or remove it")
    found, left_out = scan_tasks(source)
    tasks = {}
    for task in found:
        if problem := name_problem(task.id):
            left_out[task.id] = f"the folder name is the task id and is invalid: {problem}; rename it"
        else:
            tasks[task.id] = task
    if (source / "task.toml").is_file() and left_out:   # one task folder: its own error, as it is
        raise HarborError(f"{source}: {next(iter(left_out.values()))}")
    if not tasks or (strict and left_out):
        raise HarborError(f"{source}: {'--strict: ' if tasks else ''}{len(left_out)} of "
                          f"{len(left_out) + len(tasks)} task(s) cannot be imported, nothing written:\n"
                          + left_out_table(left_out))
    ids = sorted(tasks)
    split, how = split_of(ids, left_out, source, seed, split_file)
    made = out.exists()
    try:
        suites = [write_suite(out / f"{out.name}-{name}", name, [tasks[i] for i in split[name]],
                              source.resolve(), how, task_network)
                  for name in SPLITS if split.get(name)]
    except BaseException:
        remove_import(out, made)
        raise
    fetching = {i: why for i in ids if (why := fetch_warning(tasks[i], task_network))}
    return HarborImport(suites, left_out, {i: tasks[i].notes for i in ids if tasks[i].notes},
                        [i for i in ids if not tasks[i].has_oracle], fetching)


def remove_import(out: Path, existed: bool) -> None:
    """Undo an import: everything it wrote under `out` (an empty `out` that existed before stays)."""
    if existed:
        for child in Path(out).iterdir():
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    else:
        shutil.rmtree(out, ignore_errors=True)


def bundled_skills(source: Path, spec: str) -> tuple[str, Path, list[str]]:
    """The task `spec` names (TASK or TASK/SKILL), its skills folder and its skills' names, checked: no
    file is written."""
    task_id, _, skill = spec.partition("/")
    source = Path(source)
    tasks, left_out = scan_tasks(source)
    folders = {t.id: t.path for t in tasks} | {i: source / i for i in left_out}
    if (source / "task.toml").is_file():
        folders = {source.name: source}
    if task_id not in folders:
        raise HarborError(f"--seed-from {spec}: no task {task_id!r} in {source}; choose one of "
                          f"{', '.join(sorted(folders))}")
    bundled = folders[task_id] / "environment" / SKILLS_DIR
    names = sorted(p.name for p in bundled.iterdir()
                   if (p / "SKILL.md").is_file()) if bundled.is_dir() else []
    if not names:
        raise HarborError(f"--seed-from {spec}: {bundled} holds no skill (a folder with SKILL.md)")
    if skill and skill not in names:
        raise HarborError(f"--seed-from {spec}: task {task_id} bundles no skill {skill!r}; it has "
                          f"{', '.join(names)}")
    return task_id, bundled, [skill] if skill else names


def seed_from(source: Path, spec: str, out: Path) -> Path:
    """Copy a task's bundled skills to the seed of a run on the imported suites: `TASK/SKILL`, or a task
    bundling one skill, gives <out>/seed/<skill>/ (a one-skill genome); a task bundling several gives the
    skill set <out>/seed/<task>/skills/<skill>/... (every one of them, evolved together). The task's own
    copies stay out of its image either way."""
    task_id, bundled, names = bundled_skills(source, spec)
    if len(names) == 1:
        seed = Path(out) / "seed" / names[0]
        copy_tree(bundled / names[0], seed)
        return seed
    seed = Path(out) / "seed" / task_id
    for name in names:
        copy_tree(bundled / name, seed / SKILLS_DIR / name)
    return seed
