"""Which parts of a suite the agent sees and which only grade it: the agent hash, a manifest, what changed.

The agent's work is keyed on what the agent saw (`agent_hash`: task ids, prompts, `inputs` and their
fixture bytes, any other task field and suite.md field not known to grade); a grade on the whole suite
folder (`content_hash`: a script grader runs in a copy of it and may read any file). So a change to
`run-eval*`, `answers/`, or the grading fields of tasks.jsonl re-grades the agent's kept work, never re-runs
it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from pathlib import Path

from eval.snapshot import list_files

# task fields a grader reads and the agent never sees (the prompt is the agent's whole brief)
GRADING_FIELDS = ("expect", "schema", "expectations", "required")
# suite.md keys that only say how cells are graded or which role the suite plays (plus every judge_* key)
GRADING_KEYS = ("runner", "split")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _grading_key(key: str) -> bool:
    return key in GRADING_KEYS or key.startswith("judge_")


def raw_tasks(path: Path) -> list[dict]:
    """tasks.jsonl's objects as written (load_suite has validated them), in file order."""
    lines = (path / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def task_parts(path: Path, task: dict) -> tuple[dict, dict]:
    """(what the agent sees of a task, what only grades it): the agent's part holds its input files' bytes."""
    seen = {k: v for k, v in task.items() if k not in GRADING_FIELDS}
    fixtures = path / "fixtures" / str(task["id"])
    seen["input_bytes"] = {rel: _sha((fixtures / rel).read_bytes()) for rel in task.get("inputs", [])}
    return seen, {k: task[k] for k in GRADING_FIELDS if k in task}


def agent_hash(path: Path, name: str, meta: dict[str, str]) -> str:
    """The hash of everything an agent in a cell of this suite can see, and nothing it cannot."""
    material = {"name": name, "suite.md": {k: v for k, v in sorted(meta.items()) if not _grading_key(k)},
                "tasks": [task_parts(path, task)[0] for task in raw_tasks(path)]}
    return _sha(json.dumps(material, sort_keys=True).encode())


def manifest(path: Path, name: str, meta: dict[str, str]) -> dict:
    """What a run records of a suite, so a later run can name what changed: its two hashes, every file's hash,
    and each task's agent and grading parts."""
    tasks = {}
    for task in raw_tasks(path):
        seen, grading = task_parts(path, task)
        tasks[str(task["id"])] = [_sha(json.dumps(seen, sort_keys=True).encode()),
                                  _sha(json.dumps(grading, sort_keys=True).encode())]
    return {"name": name, "agent_hash": agent_hash(path, name, meta),
            "files": {rel.as_posix(): _sha((path / rel).read_bytes()) for rel in list_files(path)},
            "tasks": tasks}


def changes(before: dict, after: dict) -> list[str]:
    """The changed files of a suite between two manifests, tasks.jsonl said task by task, sorted."""
    old, new = before.get("files", {}), after.get("files", {})
    named = sorted(rel for rel in old.keys() | new.keys()
                   if old.get(rel) != new.get(rel) and rel != "tasks.jsonl")
    if old.get("tasks.jsonl") != new.get("tasks.jsonl"):
        was, now = before.get("tasks", {}), after.get("tasks", {})
        parts = []
        for task_id in sorted(was.keys() | now.keys()):
            if task_id not in was or task_id not in now:
                parts.append(f"task {task_id} {'added' if task_id in now else 'removed'}")
            elif was[task_id][0] != now[task_id][0]:
                parts.append(f"what the agent sees of task {task_id}")
            elif was[task_id][1] != now[task_id][1]:
                parts.append(f"the grading fields of task {task_id}")
        named.insert(0, "tasks.jsonl" + (f" ({'; '.join(parts)})" if parts else " (task order or layout)"))
    return named


# what `python -S` leaves out that a script could use: site's builtins, and importing a module by its name
SITE_BUILTINS = frozenset({"exit", "quit", "help", "copyright", "credits", "license"})
BY_NAME = frozenset({"importlib", "__import__", "runpy", "pkgutil", "exec", "eval", "compile", "site",
                     # distutils: setuptools' .pth replaces it
                     "sitecustomize", "usercustomize", "distutils"})


def needs_site(source: str) -> bool:
    """Whether a Python script may use what `site` adds (the installed packages, exit()): True unless every
    module it imports is the standard library's, it imports none by name and it names none of site's builtins.
    A script for which this is False runs the same under `python -S`, which skips
    importing every installed .pth."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # a relative import: a package's own module
            names = [node.module or ""] if not node.level else [""]
        elif isinstance(node, ast.Name) and node.id in SITE_BUILTINS | BY_NAME or \
                isinstance(node, ast.Attribute) and node.attr in ("import_module", "__import__"):
            return True
        else:
            continue
        if any(name.split(".")[0] not in sys.stdlib_module_names or name.split(".")[0] in BY_NAME
               for name in names):
            return True
    return False
