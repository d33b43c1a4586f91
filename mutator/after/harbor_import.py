"""Import Harbor-format tasks (one task folder, or a dataset of them) as `runner: harbor` suites.

Each task becomes a task of <out>/<name>-train, -val or -test (a seeded shuffle, or a --split-file): its
prompt is instruction.md; its environment's files (all but the Dockerfile and skills/) are its inputs;
harbor/<id>/ keeps instruction.md, task.toml, environment/ and tests/ for the verifier; the oracle (solution/)
goes to oracle/<id>/, which no cell and no mutator view ever gets. Writes only under `out`; refuses to
overwrite an import.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from eval.harbor import SKILLS_DIR, HarborError, HarborTask, find_tasks
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


def task_line(task: HarborTask) -> dict:
    """The task as tasks.jsonl holds it; `environment` (its content hash) keys the agent's work on the
    image."""
    note = (f"\n\n(Your working directory holds the task's {task.workdir}: its files are there, and your "
            f"outputs go there; the verifier sees it at {task.workdir}.)\n")
    line = {"id": task.id, "prompt": task.instruction.rstrip() + note,
            "inputs": [rel.as_posix() for rel in task.environment_files()],
            "environment": task.environment_hash(), "workdir": task.workdir}
    if task.config.agent_timeout_sec:
        line["agent_timeout_sec"] = task.config.agent_timeout_sec
    return line


def copy_task(task: HarborTask, suite: Path) -> None:
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
    fixtures = suite / "fixtures" / task.id
    fixtures.mkdir(parents=True)
    for rel in task.environment_files():
        (fixtures / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(task.environment / rel, fixtures / rel)
    if task.solution.is_dir():
        shutil.copytree(task.solution, suite / "oracle" / task.id)


def write_suite(path: Path, split: str, tasks: list[HarborTask], source: Path, how: str,
                network: bool = False) -> Imported:
    path.mkdir(parents=True)
    for task in tasks:
        copy_task(task, path)
    (path / "tasks.jsonl").write_text("".join(json.dumps(task_line(t),
                                                         ensure_ascii=False) + "\n" for t in tasks),
                                      encoding="utf-8")
    schemas = sorted({t.config.schema for t in tasks})
    (path / "suite.md").write_text(
        f"---\nname: {path.name}\nsplit: {split}\nrunner: harbor\nharbor_schema: {', '.join(schemas)}\n"
        f"task_network: {'allowed' if network else 'none'}\n---\n\n"
        f"# {path.name}\n\nImported from the Harbor tasks at `{source}`, split {split} {how}. Each task's "
        "verifier (harbor/<id>/tests/test.sh) runs in the task's container; its reward is the score. The "
        f"oracle (oracle/<id>/solve.sh) is for `--validate-suite` only.\n", encoding="utf-8")
    suite = load_suite(path)   # the suite must load like any hand-written one
    return Imported(split, path, tuple(t.id for t in suite.tasks))


def import_harbor(source: Path, out: Path, *, seed: int = 0, split_file: Path | None = None,
                  task_network: bool = False) -> list[Imported]:
    source, out = Path(source), Path(out)
    if problem := name_problem(out.name):
        raise HarborError(f"--out {out}: the folder name {out.name!r} names the suites and is invalid: "
                          f"{problem}")
    if out.exists() and any(out.iterdir()):
        raise HarborError(f"--out {out}: already exists and is not empty; pick a new folder or remove it")
    tasks = {task.id: task for task in find_tasks(source)}
    for task in tasks.values():
        if problem := name_problem(task.id):
            raise HarborError(f"{task.path}: the folder name is the task id and is invalid: {problem}; "
                              "rename it")
    if len(tasks) < 2:
        raise HarborError(f"{source}: {len(tasks)} task(s); a train and a val suite need at least 2 tasks")
    ids = sorted(tasks)
    split = file_split(split_file, ids) if split_file else seeded_split(ids, seed)
    how = f"by {split_file}" if split_file else f"by seed {seed}"
    return [write_suite(out / f"{out.name}-{name}", name, [tasks[i] for i in split[name]], source.resolve(),
                        how, task_network)
            for name in SPLITS if split[name]]


def seed_from(source: Path, spec: str, out: Path) -> Path:
    """Copy a task's bundled skill (`TASK`, or `TASK/SKILL` when it bundles several) to <out>/seed/<skill>/:
    the seed of a run on the imported suites. The task's own copy stays out of its image either way."""
    task_id, _, skill = spec.partition("/")
    tasks = {task.id: task for task in find_tasks(source)}
    if task_id not in tasks:
        raise HarborError(f"--seed-from {spec}: no task {task_id!r} in {source}; choose one of "
                          f"{', '.join(sorted(tasks))}")
    bundled = tasks[task_id].environment / SKILLS_DIR
    names = sorted(p.name for p in bundled.iterdir()
                   if (p / "SKILL.md").is_file()) if bundled.is_dir() else []
    if not names:
        raise HarborError(f"--seed-from {spec}: {bundled} holds no skill (a folder with SKILL.md)")
    if not skill and len(names) > 1:
        raise HarborError(f"--seed-from {spec}: task {task_id} bundles {len(names)} skills "
                          f"({', '.join(names)}); name one as --seed-from {task_id}/SKILL")
    skill = skill or names[0]
    if skill not in names:
        raise HarborError(f"--seed-from {spec}: task {task_id} bundles no skill {skill!r}; it has "
                          f"{', '.join(names)}")
    seed = Path(out) / "seed" / skill
    copy_tree(bundled / skill, seed)
    return seed
