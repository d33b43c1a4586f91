"""Import an Anthropic skill-creator eval set (SKILL_DIR/evals/evals.json) as judge-graded suites.

Each eval {id, prompt, expected_output, files, expectations} becomes a task; its files (relative to the
skill root) become the task's fixtures; its expectation sentences are what the judge checks. The evals
are split into <out>/<name>-train, -val and -test by a seeded shuffle, so the same seed gives the same
split. It writes only under `out` and refuses to overwrite an existing import.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from eval.errors import SkillMutatorError
from eval.suite import load_suite, name_problem
from mutator.after.trigger_import import GRADER, is_trigger_set, split_by_class, trigger_tasks

FRACTIONS = {"val": 0.2, "test": 0.2}


class EvalsImportError(SkillMutatorError, ValueError):
    """The eval set cannot be imported; the message names the file, the eval and the fix."""


@dataclass(frozen=True)
class Imported:
    split: str
    path: Path
    task_ids: tuple[str, ...]


def split_counts(n: int) -> dict[str, int]:
    """train/val/test sizes: val at least 1, train at least 1, test whatever is left of its share."""
    if n < 2:
        raise EvalsImportError(f"an eval set needs at least 2 evals to split into train and val, got {n}")
    val = max(1, round(n * FRACTIONS["val"]))
    test = min(round(n * FRACTIONS["test"]), n - val - 1)
    return {"train": n - val - test, "val": val, "test": test}


FEW_TASKS = 5   # below this a val verdict or a test report rests on a handful of tasks


def few_task_warnings(made: list[Imported], evals_json: Path) -> list[str]:
    """A warning for each val or test suite too small to say much (the import still succeeds)."""
    total = sum(len(s.task_ids) for s in made)
    return [f"warning: {s.split} suite {s.path.name} has {len(s.task_ids)} task(s): a "
            f"{'gate verdict' if s.split == 'val' else 'test report'} on fewer than {FEW_TASKS} tasks is "
            f"mostly noise. Add evals to {evals_json} ({total} now; about {FEW_TASKS * 5} give val and test "
            f"{FEW_TASKS} each), or write a bigger {s.split} suite by hand"
            for s in made if s.split in ("val", "test") and len(s.task_ids) < FEW_TASKS]


def task_id(raw_id: object, index: int) -> str:
    text = re.sub(r"[^A-Za-z0-9._-]+", "-",
                  str(raw_id if raw_id is not None else index)).strip("-.") or str(index)
    return f"eval-{text}"


def read_json(evals_json: Path) -> object:
    try:
        return json.loads(evals_json.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise EvalsImportError(f"{evals_json}: cannot read it as JSON: {err}") from None


def read_evals(evals_json: Path, data: object) -> tuple[str, list[dict]]:
    evals = data.get("evals") if isinstance(data, dict) else data
    if not isinstance(evals, list) or not evals:
        raise EvalsImportError(f"{evals_json}: expected {{\"skill_name\": ..., \"evals\": [...]}} with at "
                               "least one eval (skill-creator's evals.json), or a list of {\"query\": ..., "
                               "\"should_trigger\": true|false} (its trigger eval set)")
    skill_name = str(data.get("skill_name", "")) if isinstance(data, dict) else ""
    return skill_name, evals


def to_task(entry: object, index: int, skill_root: Path,
            evals_json: Path) -> tuple[dict, list[tuple[Path, str]]]:
    where = f"{evals_json}: evals[{index}]"
    if not isinstance(entry, dict):
        raise EvalsImportError(f"{where}: must be an object with prompt and expectations")
    prompt = entry.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise EvalsImportError(f"{where}: needs a non-empty 'prompt'")
    sentences = [s.strip() for s in entry.get("expectations") or [] if isinstance(s, str) and s.strip()]
    expected = entry.get("expected_output")
    if isinstance(expected, str) and expected.strip():
        sentences.insert(0, f"Expected result: {expected.strip()}")
    if not sentences:
        raise EvalsImportError(f"{where}: needs 'expectations' (or 'expected_output') for the judge to check")
    files: list[tuple[Path, str]] = []
    for rel in entry.get("files") or []:
        source = (skill_root / str(rel)).resolve()
        if not source.is_relative_to(skill_root.resolve()) or not source.is_file():
            raise EvalsImportError(f"{where}: file {rel!r} is not a file inside the skill folder "
                                   f"{skill_root}")
        files.append((source, source.name))
    names = [name for _, name in files]
    if len(set(names)) != len(names):
        raise EvalsImportError(f"{where}: two files share the name {names}; inputs are staged by file name")
    full_prompt = prompt.strip()
    if names:
        full_prompt += "\n\nInput files in your working directory: " + ", ".join(names) + "."
    task = {"id": task_id(entry.get("id"), index), "prompt": full_prompt, "inputs": names, "required": [],
            "expectations": sentences}
    return task, files


def evals_skill(evals_json: Path) -> Path:
    """The skill an evals.json belongs to: SKILL/evals/evals.json, or the folder holding it."""
    evals_json = Path(evals_json)
    return evals_json.parent.parent if evals_json.parent.name == "evals" else evals_json.parent


def import_evals(evals_json: Path, out: Path, *, seed: int = 0) -> list[Imported]:
    evals_json, out = Path(evals_json), Path(out)
    problem = name_problem(out.name)
    if problem:
        raise EvalsImportError(f"--out {out}: the folder name {out.name!r} names the suites and is invalid: "
                               f"{problem}")
    if out.exists() and any(out.iterdir()):
        raise EvalsImportError(f"--out {out}: already exists and is not empty; pick a new folder or remove "
                               "it")
    data = read_json(evals_json)
    if is_trigger_set(data):
        return import_trigger_set(data, evals_json, out, seed)
    skill_root = evals_skill(evals_json)
    skill_name, evals = read_evals(evals_json, data)
    tasks = [to_task(entry, i, skill_root, evals_json) for i, entry in enumerate(evals)]
    ids = [t["id"].lower() for t, _ in tasks]
    if len(set(ids)) != len(ids):
        raise EvalsImportError(f"{evals_json}: eval ids repeat ({', '.join(ids)}); give every eval a "
                               "distinct id")
    return [write_suite(out / f"{out.name}-{split}", split, chosen, evals_json, skill_name, seed)
            for split, chosen in seeded_splits(tasks, seed).items() if chosen]


def seeded_splits(tasks: list, seed: int) -> dict[str, list]:
    """train/val/test of `tasks` (split_counts' sizes) by a seeded shuffle, each kept in the set's order."""
    order = list(range(len(tasks)))
    random.Random(f"import-evals:{seed}").shuffle(order)
    counts, start, splits = split_counts(len(tasks)), 0, {}
    for split in ("train", "val", "test"):
        splits[split] = [tasks[i] for i in sorted(order[start:start + counts[split]])]
        start += counts[split]
    return splits


def write_suite(path: Path, split: str, tasks: list[tuple[dict, list[tuple[Path, str]]]], evals_json: Path,
                skill_name: str, seed: int) -> Imported:
    return write_judge_suite(path, split, tasks, f"Imported from `{evals_json}` (skill-creator eval set"
                             f"{' for ' + skill_name if skill_name else ''}), split {split} by seed {seed}.")


def import_trigger_set(data: list, evals_json: Path, out: Path, seed: int) -> list[Imported]:
    """skill-creator's trigger eval set as trigger suites (mutator/after/trigger_import.py)."""
    splits = split_by_class(trigger_tasks(data, evals_json, EvalsImportError), seed, split_counts)
    if not splits["val"]:
        raise EvalsImportError(f"{evals_json}: {len(data)} queries leave the val split empty; give at least "
                               "2 queries of one kind (should_trigger true or false)")
    origin = f"Imported from `{evals_json}` (skill-creator trigger eval set), split {{split}} by seed {seed}."
    return [write_judge_suite(out / f"{out.name}-{split}", split, [(t, []) for t in tasks],
                              origin.format(split=split), grader=GRADER)
            for split, tasks in splits.items() if tasks]


def write_judge_suite(path: Path, split: str, tasks: list[tuple[dict, list[tuple[Path, str]]]],
                      origin: str, grader: str = "") -> Imported:
    """Write one judge-graded suite folder (suite.md, tasks.jsonl, fixtures/<id>/) and load it back; with a
    `grader` (a run-eval.py's text) a script-graded one instead.

    `origin` is the body's first sentence (where the tasks came from); shared by the evals.json import, the
    trigger eval set import and trace mining (mutator/mining/)."""
    (path / "fixtures").mkdir(parents=True)
    for task, files in tasks:
        fixture = path / "fixtures" / task["id"]
        fixture.mkdir()
        for source, name in files:
            shutil.copyfile(source, fixture / name)
    (path / "tasks.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t, _ in tasks),
                                      encoding="utf-8")
    if grader:
        (path / "run-eval.py").write_text(grader, encoding="utf-8")
    runner, how = ("script", "run-eval.py gives every finished cell 1: only triggering (score.wTrigger) "
                             "counts.") \
        if grader else ("judge", "Each task is graded by the judge against its expectation sentences.")
    (path / "suite.md").write_text(
        f"---\nname: {path.name}\nsplit: {split}\nrunner: {runner}\n---\n\n# {path.name}\n\n{origin} {how}\n",
        encoding="utf-8")
    suite = load_suite(path)   # the suite must load like any hand-written suite
    return Imported(split, path, tuple(t.id for t in suite.tasks))
