"""Reading Harbor task folders: what task.toml says is kept, and every malformed task is refused naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eval.harbor import HarborError, find_tasks, read_task
from eval.harbor_run import read_reward
from tests.conftest import ROOT

EXAMPLE = ROOT / "suites" / "harbor-example"


def test_example_tasks_read_with_their_config() -> None:
    tasks = {t.id: t for t in find_tasks(EXAMPLE)}
    assert sorted(tasks) == ["count-lines", "shout", "top-hosts"]
    count = tasks["count-lines"]
    assert (count.config.schema, count.config.agent_timeout_sec, count.config.verifier_timeout_sec) == ("1.0", 120.0, 60.0)
    assert (count.config.cpus, count.config.memory_mb, count.config.allow_internet) == (1, 256, False)
    assert count.workdir == "/app" and count.instruction.startswith("Count the lines")
    # what an agent on the host is given: the environment's files, never the Dockerfile or the bundled skills
    assert [p.as_posix() for p in count.environment_files()] == ["visits.log"]
    assert tasks["shout"].environment_files() == []   # its greeting is made by a RUN step


def test_bundled_skills_are_not_in_the_environment_hash(tmp_path: Path) -> None:
    task = shutil.copytree(EXAMPLE / "shout", tmp_path / "shout")
    before = read_task(task).environment_hash()
    (task / "environment" / "skills" / "shouting" / "SKILL.md").write_text("changed")
    assert read_task(task).environment_hash() == before
    (task / "environment" / "Dockerfile").write_text("FROM scratch\n")
    assert read_task(task).environment_hash() != before


def test_memory_in_harbors_old_spelling(tmp_path: Path) -> None:
    task = shutil.copytree(EXAMPLE / "count-lines", tmp_path / "t")
    (task / "task.toml").write_text('version = "1.1"\n[environment]\nmemory = "2G"\ncpus = 2\n')
    config = read_task(task).config
    assert (config.memory_mb, config.cpus, config.schema, config.verifier_timeout_sec) == (2048, 2, "1.1", 600.0)


BROKEN = {
    "no instruction": (lambda t: (t / "instruction.md").unlink(), "instruction.md is missing"),
    "bad toml": (lambda t: (t / "task.toml").write_text("version = \n"), "task.toml: not valid TOML"),
    "schema": (lambda t: (t / "task.toml").write_text('version = "2.0"\n'), "schema '2.0' is not one"),
    "compose yaml": (lambda t: (t / "environment" / "docker-compose.yaml").write_text("services: [\n"),
                     "environment/docker-compose.yaml: not valid YAML"),
    "steps": (lambda t: (t / "task.toml").write_text('version = "1.0"\n[[steps]]\nname = "a"\n'), "multi-step"),
    "compose": (lambda t: (t / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build: .\n  db:\n    image: postgres\n"),
                "environment/docker-compose.yaml: declares the service(s) db beside main"),
    "latin-1": (lambda t: (t / "instruction.md").write_bytes("Zähle die Zeilen\n".encode("latin-1")),
                "instruction.md is not UTF-8 text (byte 0xe4 at offset 1)"),
    "symlink out": (lambda t: (t / "tests" / "data.txt").symlink_to(t.parent / "secret.txt"),
                    "symlink(s) pointing outside the task: tests/data.txt ->"),
    "symlinked folder out": (lambda t: (t / "environment" / "more").symlink_to(t.parent),
                             "environment/more ->"),
    "no dockerfile": (lambda t: (t / "environment" / "Dockerfile").unlink(), "environment/Dockerfile is missing"),
    "no verifier": (lambda t: (t / "tests" / "test.sh").unlink(), "tests/test.sh is missing"),
    "negative timeout": (lambda t: (t / "task.toml").write_text('[verifier]\ntimeout_sec = -1\n'),
                         "[verifier] timeout_sec = -1 must be a positive number"),
    "gpus": (lambda t: (t / "task.toml").write_text('[environment]\ngpus = 1\n'), "GPUs are not supported"),
    "memory": (lambda t: (t / "task.toml").write_text('[environment]\nmemory = "lots"\n'), "memory_mb = 2048"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_malformed_task_names_folder_and_file(case: str, tmp_path: Path) -> None:
    task = shutil.copytree(EXAMPLE / "count-lines", tmp_path / "count-lines")
    breaks, message = BROKEN[case]
    breaks(task)
    with pytest.raises(HarborError) as err:
        read_task(task)
    assert message in str(err.value) and str(task) in str(err.value)
    assert err.value.exit_code == 2


def test_schema_0_0_reads_with_a_note_and_a_link_inside_the_task_is_fine(tmp_path: Path) -> None:
    task = shutil.copytree(EXAMPLE / "count-lines", tmp_path / "count-lines")
    (task / "task.toml").write_text('version = "0.0"\n[verifier]\ntimeout_sec = 120\n')
    (task / "tests" / "again.sh").symlink_to(task / "tests" / "test.sh")
    read = read_task(task)
    assert (read.config.schema, read.config.verifier_timeout_sec) == ("0.0", 120.0)
    assert read.notes == ("task.toml version 0.0: read as 1.0 (the fields this harness reads are the same)",)


def test_a_folder_without_tasks_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HarborError, match="holds no Harbor task"):
        find_tasks(tmp_path)


@pytest.mark.parametrize(("files", "expected"), [
    ({"reward.txt": "1\n"}, {"reward": 1.0}),
    ({"reward.txt": "0.25"}, {"reward": 0.25}),
    ({"reward.json": json.dumps({"hosts": 1, "count": 0, "note": "x"})}, {"hosts": 1.0, "count": 0.0}),
    ({"reward.json": "{}"}, "no numeric field"),
    ({"reward.txt": "1.5"}, "outside [0, 1]"),
    ({"reward.txt": "pass"}, "not a number"),
    ({}, "wrote neither"),
])
def test_rewards_become_tests(files: dict, expected, tmp_path: Path) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    if isinstance(expected, dict):
        assert read_reward(tmp_path) == expected
    else:
        with pytest.raises(ValueError, match=expected.replace("[", r"\[").replace("]", r"\]")):
            read_reward(tmp_path)
