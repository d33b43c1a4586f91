"""--import-harbor: Harbor tasks become runner-harbor suites, split by seed or file, the oracle kept out of cells."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eval.harbor import HarborError
from eval.suite import load_suite
from mutator.after.harbor_import import import_harbor, seed_from
from tests.conftest import ROOT, run_cli

EXAMPLE = ROOT / "suites" / "harbor-example"
ALL_TRAIN = {"train": ["count-lines", "top-hosts"], "val": ["shout"]}


def test_import_writes_loadable_suites_with_the_oracle_apart(tmp_path: Path) -> None:
    split = tmp_path / "split.json"
    split.write_text(json.dumps(ALL_TRAIN))
    made = import_harbor(EXAMPLE, tmp_path / "out" / "hx", split_file=split).suites
    assert [(m.split, m.task_ids) for m in made] == [("train", ("count-lines", "top-hosts")), ("val", ("shout",))]
    suite = load_suite(tmp_path / "out" / "hx" / "hx-train")
    assert suite.runner == "harbor" and suite.option("harbor_schema") == "1.0"
    task = suite.tasks[0]
    assert task.inputs == ("visits.log",) and task.prompt.startswith("Count the lines of `/app/visits.log`")
    assert "working directory holds the task's /app" in task.prompt
    kept = sorted(p.relative_to(suite.path).as_posix() for p in suite.path.rglob("*") if p.is_file())
    assert "oracle/count-lines/solve.sh" in kept and "harbor/count-lines/tests/test.sh" in kept
    # the oracle is never among what a cell is given (fixtures) nor in the verifier's copy (harbor/)
    assert not [k for k in kept if "solve" in k and not k.startswith("oracle/")]
    # the bundled skills are left out (a placeholder keeps the Dockerfile's COPY building)
    val = tmp_path / "out" / "hx" / "hx-val"
    assert sorted(p.name for p in (val / "harbor" / "shout" / "environment" / "skills").iterdir()) == ["LEFT-OUT.md"]
    assert not list(val.rglob("SKILL.md"))


def test_seeded_split_is_stated_and_repeatable(tmp_path: Path) -> None:
    first = import_harbor(EXAMPLE, tmp_path / "a" / "hx", seed=3).suites
    again = import_harbor(EXAMPLE, tmp_path / "b" / "hx", seed=3).suites
    assert [(m.split, m.task_ids) for m in first] == [(m.split, m.task_ids) for m in again]
    assert sorted(i for m in first for i in m.task_ids) == ["count-lines", "shout", "top-hosts"]
    assert "split val by seed 3" in (tmp_path / "a" / "hx" / "hx-val" / "suite.md").read_text()


@pytest.mark.parametrize(("split", "message"), [
    ({"train": ["count-lines"], "val": ["shout"]}, "missing ['top-hosts']"),
    ({"train": ["count-lines", "top-hosts", "shout"], "val": []}, "train and val each need"),
    ({"train": ["count-lines"], "val": ["shout", "nope", "top-hosts"]}, "unknown ['nope']"),
])
def test_bad_split_file_is_refused(split: dict, message: str, tmp_path: Path) -> None:
    path = tmp_path / "split.json"
    path.write_text(json.dumps(split))
    with pytest.raises(HarborError, match=message.replace("[", r"\[").replace("]", r"\]")):
        import_harbor(EXAMPLE, tmp_path / "out" / "hx", split_file=path)
    assert not (tmp_path / "out").exists()


def test_cli_malformed_task_is_left_out_and_strict_refuses(tmp_path: Path) -> None:
    source = shutil.copytree(EXAMPLE, tmp_path / "tasks")
    (source / "top-hosts" / "tests" / "test.sh").unlink()
    strict = run_cli("--import-harbor", str(source), "--out", str(tmp_path / "out" / "hx"), "--strict", timeout=120)
    assert strict.returncode == 2
    assert "--strict: 1 of 3 task(s) cannot be imported, nothing written" in strict.stderr
    assert "top-hosts  tests/test.sh is missing" in strict.stderr
    assert not (tmp_path / "out").exists()
    done = run_cli("--import-harbor", str(source), "--out", str(tmp_path / "out" / "hx"), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Left out: 1 of 3 tasks" in done.stdout and "top-hosts  tests/test.sh is missing" in done.stdout
    assert sorted(p.name for p in (tmp_path / "out" / "hx").iterdir()) == ["hx-train", "hx-val"]


def test_seed_from_a_tasks_bundled_skill(tmp_path: Path) -> None:
    done = run_cli("--import-harbor", str(EXAMPLE), "--out", str(tmp_path / "hx"), "--seed-from", "shout", timeout=120)
    assert done.returncode == 0, done.stderr
    seed = tmp_path / "hx" / "seed" / "shouting"
    assert (seed / "SKILL.md").read_text() == (EXAMPLE / "shout/environment/skills/shouting/SKILL.md").read_text()
    assert f"--skill-dir {seed}" in done.stdout
    with pytest.raises(HarborError, match="holds no skill"):
        seed_from(EXAMPLE, "count-lines", tmp_path / "other")
    with pytest.raises(HarborError, match="bundles no skill 'nope'; it has shouting"):
        seed_from(EXAMPLE, "shout/nope", tmp_path / "other")


def test_task_network_only_when_the_task_asks_and_the_user_allowed(tmp_path: Path) -> None:
    from eval.harbor_run import suite_task, task_network
    allowed = import_harbor(EXAMPLE, tmp_path / "a" / "hx", seed=0, task_network=True).suites[0].path
    default = import_harbor(EXAMPLE, tmp_path / "b" / "hx", seed=0).suites[0].path
    for path, said in ((allowed, "allowed"), (default, "none")):
        suite = load_suite(path)
        assert suite.option("task_network") == said
        task = suite_task(path, suite.tasks[0].id)
        assert task.config.allow_internet is False          # the example tasks never ask
        assert task_network(dict(suite.meta), task) is False
        asking = type(task)(task.id, task.path, task.instruction,
                            type(task.config)(allow_internet=True), task.workdir)
        assert task_network(dict(suite.meta), asking) is (said == "allowed")
