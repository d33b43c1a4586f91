"""The `script` runner: the suite's run-eval(.py) prints one JSON object of test name -> score.

It runs as a helper process (timeout, process-group kill, logs) from a private copy of the suite's folder,
made for this cell and removed after: a grader that writes (a log, a cache) never changes the suite the run
hashed, nor another cell's grading. It gets the cell's working dir and the task id, never the skill.

The copy's folders are its own; its files are hard links to a template, a pristine copy of the suite's folder
(every task's fixtures) kept per suite version beside the evaluations (`.grader-templates-*`), so a cell
allocates no inode per file (on a churned ext4 an inode costs up to ~0.8 ms of CPU). A template is lent to one
grader at a time (a process holds at most as many as it grades at once), its files' mtime pinned; when the
grader is gone, a linked file whose size, mode or mtime moved (the grader wrote into it through its link)
means the template is dropped, never lent again: no other grader saw the change, and its own grader saw what a
copy would have shown it. A file that cannot be linked (another filesystem), or that the template lacks, is
copied: a Ray worker's suite copy gains each task's inputs as its first cell arrives, maybe after a template
of it was made.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import math
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from eval.environment import allowed_env
from eval.graders.process import run_helper
from eval.jobs import CellJob
from eval.reaper import pid_alive
from eval.snapshot import copy_file


class ScriptRunner:
    async def grade(self, job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
        return await run_script_grader(job, work)


def parse_grades(stdout: str) -> dict[str, float]:
    """The grader's stdout must be one JSON object of test name -> score in [0, 1]."""
    text = stdout.strip()
    if not text:
        raise ValueError("grader printed nothing; it must print one JSON object of test name -> score")
    try:
        obj = json.loads(text.splitlines()[-1]) if not text.startswith("{") else json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"grader output is not JSON ({err.msg}): {text[:200]!r}") from None
    if isinstance(obj, dict) and isinstance(obj.get("tests"), dict):
        obj = obj["tests"]
    if not isinstance(obj, dict) or not obj:
        raise ValueError("grader output must be a non-empty JSON object of test name -> score")
    grades: dict[str, float] = {}
    for name, value in obj.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not 0 <= value <= 1:
            raise ValueError(f"grader test {name!r} scored {value!r}; scores must be numbers in [0, 1]")
        grades[str(name)] = float(value)
    return grades


@functools.lru_cache(maxsize=256)
def _listing(suite_dir: Path, content_hash: str, task_id: str | None) -> tuple[tuple[str, str, int], ...]:
    """What a grader's copy holds, walked once per suite version and task: (kind, relative path, mode or 0);
    with no task, every task's fixtures (a template's)."""
    found: list[tuple[str, str, int]] = []
    for folder, dirs, files in os.walk(suite_dir):
        here = Path(folder)
        # only this task's fixtures: one task's copy, not all
        dirs[:] = [d for d in dirs
                   if d != "__pycache__" and (here != suite_dir / "fixtures" or task_id in (None, d))]
        for name in dirs + [f for f in files if f != "__pycache__"]:
            path, rel = here / name, str((here / name).relative_to(suite_dir))
            if path.is_symlink():   # copied as the link, as copytree(symlinks=True) did
                found.append(("link", rel, 0))
            elif path.is_dir():
                found.append(("dir", rel, 0))
            else:
                found.append(("file", rel, stat.S_IMODE(path.stat().st_mode)))
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
    return tuple(sorted(found, key=lambda entry: entry[1]))   # a folder before what it holds


PINNED_NS = 946_684_800 * 10**9   # a template file's mtime (2000-01-01): any write through a link moves it


@dataclasses.dataclass(frozen=True)
class Template:
    """A pristine copy of a suite's folder, every task's fixtures included (`folder`); each file's (size,
    mode); the pool it goes back to (`key`)."""
    folder: Path
    files: dict[str, tuple[int, int]]
    key: tuple[str, str, str]

    def untouched(self, rels) -> bool:
        """Whether the files `rels` (the ones a grader had links to) are as the template made them."""
        for rel in rels:
            size, mode = self.files[rel]
            try:
                st = os.lstat(f"{self.folder}/{rel}")
            except OSError:
                return False
            if not stat.S_ISREG(st.st_mode) or (st.st_size, stat.S_IMODE(st.st_mode), st.st_mtime_ns) != \
                    (size, mode, PINNED_NS):
                return False
        return True


_free: dict[tuple, list[Template]] = {}   # (templates' root, suite path, content hash) -> templates not lent
_roots: list[Path] = []
_lock = threading.Lock()


def _templates_root(near: Path) -> Path:
    """This process's folder of templates beside the evaluations (on their filesystem, so links work)."""
    # a forked child makes its own: lending stays one grader at a time
    mine = f".grader-templates-{os.getpid()}-"
    with _lock:
        for root in _roots:
            if root.parent == near and root.name.startswith(mine):
                return root
        for left in near.glob(".grader-templates-*-*"):   # a killed harness's (its exit handler never ran)
            pid = left.name.split("-")[2]
            if not pid_alive(int(pid) if pid.isdigit() else None):
                shutil.rmtree(left, ignore_errors=True)
        root = Path(tempfile.mkdtemp(prefix=mine, dir=near))
        _roots.append(root)
        return root


@atexit.register
def _drop_templates() -> None:
    for root in _roots:
        if root.name.startswith(f".grader-templates-{os.getpid()}-"):
            # never a parent's, from a forked child
            shutil.rmtree(root, ignore_errors=True)


def borrow(job: CellJob) -> Template | None:
    """A template of this suite version lent to this cell alone (made when none is free; so a process holds at
    most as many as it grades at once, whatever the tasks); None when none can be made (the copy is then made
    from the suite)."""
    near = job.cell_root.parent.parent
    try:
        root = _templates_root(near)
    except OSError:
        return None
    key = (str(root), str(job.suite.path), job.suite.content_hash)
    with _lock:
        if _free.get(key):
            return _free[key].pop()
    try:
        folder = Path(tempfile.mkdtemp(prefix="t-", dir=root)) / job.suite.path.name
        folder.mkdir()
        files = {}
        for kind, rel, mode in _listing(job.suite.path, job.suite.content_hash, None):
            target = f"{folder}/{rel}"
            if kind == "dir":
                os.mkdir(target)
            elif kind == "link":
                os.symlink(os.readlink(f"{job.suite.path}/{rel}"), target)
            else:
                copy_file(f"{job.suite.path}/{rel}", target, mode)
                os.utime(target, ns=(PINNED_NS, PINNED_NS))
                files[rel] = (os.lstat(target).st_size, mode)
        return Template(folder, files, key)
    except OSError:
        return None


def give_back(job: CellJob, template: Template | None) -> None:
    """After the cell's grader is gone: the template is free again, or dropped when the
    grader changed a file of it."""
    if template is None:
        return
    linked = [rel for kind, rel, _ in _listing(job.suite.path, job.suite.content_hash, job.task.id)
              if kind == "file" and rel in template.files]   # the copied ones are not the template's
    if template.untouched(linked):
        with _lock:
            _free.setdefault(template.key, []).append(template)
    else:
        shutil.rmtree(template.folder.parent, ignore_errors=True)


def private_suite(job: CellJob, template: Template | None = None) -> tuple[Path, list[str]]:
    """A copy of the suite folder beside the cell (its root, argv for its grader): the grader's own folder,
    its files hard links to `template`'s where one is lent, else copies."""
    root = Path(tempfile.mkdtemp(prefix="grader-suite-", dir=job.cell_root))
    copy = root / job.suite.path.name
    copy.mkdir()
    # strings: a cell copies a dozen files, pathlib costs more
    source, target = f"{job.suite.path}/", f"{copy}/"
    linked = f"{template.folder}/" if template is not None else None
    held = template.files if template is not None else {}   # made before this task's inputs came: copy them
    for kind, rel, mode in _listing(job.suite.path, job.suite.content_hash, job.task.id):
        if kind == "dir":
            os.mkdir(target + rel)
        elif kind == "link":
            os.symlink(os.readlink(source + rel), target + rel)
        elif linked is None or rel not in held or not _link(linked + rel, target + rel):
            copy_file(source + rel, target + rel, mode)
    grader = job.suite.grader
    if grader is not None and grader.is_relative_to(job.suite.path):
        grader = copy / grader.relative_to(job.suite.path)
    return root, dataclasses.replace(job.suite, path=copy, grader=grader).grader_argv()


def _link(src: str, dst: str) -> bool:
    try:
        os.link(src, dst)
        return True
    except OSError:   # another filesystem, or one without hard links
        return False


def grader_env(home: Path, suite_dir: Path, work: Path, task_id: str) -> dict[str, str]:
    """A grader's whole environment: the allow-list, and where its suite, cell and task are."""
    return allowed_env(home=home, extra={"SM_SUITE_DIR": str(suite_dir), "SM_CELL_DIR": str(work),
                                         "SM_TASK_ID": task_id})


async def run_script_grader(job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
    template = borrow(job)
    try:
        root, argv = private_suite(job, template)
    except BaseException:
        give_back(job, template)
        raise
    suite_dir = root / job.suite.path.name
    try:
        env = grader_env(job.cell_root, suite_dir, work, job.task.id)
        stdout, error = await run_helper([*argv, str(work), job.task.id], payload=b"",
                                         cwd=suite_dir, env=env, timeout_s=job.settings.grader_timeout_s,
                                         log_dir=job.cell_root, what="grader")
    finally:
        # run_helper has killed the grader's group: nothing writes through a link now
        give_back(job, template)
        shutil.rmtree(root, ignore_errors=True)
    if stdout is None:
        return None, error
    try:
        return parse_grades(stdout), ""
    except ValueError as err:
        err_text = (job.cell_root / "grade.stderr").read_text(encoding="utf-8").strip()
        return None, f"{err}{'; stderr: ' + err_text if err_text else ''}"
