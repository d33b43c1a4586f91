"""--import-harbor DIR on a whole dataset in SkillsBench's and Terminal-Bench's shapes: what reads imports, the
rest is a table; schema 0.0, single-service compose and oracle-less tasks import; refusals name the file."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

SINGLE_MAIN = """services:
  main:
    build:
      context: ${CONTEXT_DIR}
    image: ${MAIN_IMAGE_NAME}
    command: ["sh", "-c", "sleep infinity"]
    environment:
      - MODE=fast
      - OPENAI_API_KEY=${OPENAI_API_KEY}
    volumes:
      - ${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}
"""
TWO_SERVICES = """services:
  main:
    build: .
    depends_on: [db]
  db:
    image: postgres:16
"""


def harbor_task(root: Path, task_id: str, *, toml: str = 'version = "1.0"\n', oracle: bool = True,
                files: dict[str, str] | None = None, skills: tuple[str, ...] = (),
                test_sh: str = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
                dockerfile: str = "FROM localhost/sm-harbor-base\nWORKDIR /app\nCOPY skills /root/.claude/skills\n",
                ) -> Path:
    """One Harbor task folder as SkillsBench writes them."""
    task = root / task_id
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "instruction.md").write_text(f"Do {task_id}.\n")
    (task / "task.toml").write_text(toml)
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    (task / "tests" / "test.sh").write_text(test_sh)
    for rel, text in (files or {}).items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    for name in skills:
        skill = task / "environment" / "skills" / name
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Use {name} when asked to.\n---\n\n"
                                        f"# {name}\n\nDo it well.\n")
    if oracle:
        (task / "solution").mkdir()
        (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    return task


def dataset(root: Path) -> Path:
    tasks = root / "tasks"
    harbor_task(tasks, "plain-a")
    harbor_task(tasks, "plain-b", test_sh="#!/bin/bash\ncurl -LsSf https://astral.sh/uv/install.sh | sh\n"
                                          "uvx pytest /tests\n")
    harbor_task(tasks, "old-schema", toml='version = "0.0"\n[verifier]\ntimeout_sec = 90\n')
    harbor_task(tasks, "one-service", files={"environment/docker-compose.yaml": SINGLE_MAIN})
    harbor_task(tasks, "two-services", files={"environment/docker-compose.yaml": TWO_SERVICES})
    harbor_task(tasks, "compose-as-data", files={"environment/docker-compose.yaml": TWO_SERVICES},
                dockerfile="FROM localhost/sm-harbor-base\nWORKDIR /app\nCOPY docker-compose.yaml /app/\n")
    harbor_task(tasks, "no-oracle", oracle=False)
    return tasks


def test_a_dataset_imports_in_one_command_with_a_table_of_what_was_left_out(tmp_path: Path) -> None:
    tasks = dataset(tmp_path)
    out = tmp_path / "suites" / "sb"
    done = run_cli("--import-harbor", str(tasks), "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Left out: 1 of 7 tasks (--strict refuses the import instead):\ntask          reason\n" \
           "two-services  environment/docker-compose.yaml: declares the service(s) db beside main" in done.stdout
    assert "note: old-schema: task.toml version 0.0: read as 1.0" in done.stdout
    assert "note: one-service: environment/docker-compose.yaml: one service, main, run as the task's image " \
           "with MODE set" in done.stdout
    assert "not passed (host or Harbor variables, never given to a container): OPENAI_API_KEY" in done.stdout
    assert "note: compose-as-data: environment/docker-compose.yaml is data" in done.stdout
    assert "no oracle (no solution/solve.sh): no-oracle; marked \"oracle\": false" in done.stdout
    assert "warning: plain-b: tests/test.sh fetches tools at test time (curl, uvx) but the suite is imported " \
           "without --allow-task-network" in done.stderr
    assert "warning: plain-a" not in done.stderr
    lines = {json.loads(line)["id"]: json.loads(line) for suite in out.iterdir()
             for line in (suite / "tasks.jsonl").read_text().splitlines()}
    assert sorted(lines) == ["compose-as-data", "no-oracle", "old-schema", "one-service", "plain-a", "plain-b"]
    assert [i for i, line in lines.items() if line.get("oracle") is False] == ["no-oracle"]
    where = {i: suite for suite in out.iterdir() for i in lines if (suite / "harbor" / i).is_dir()}
    assert not (where["no-oracle"] / "oracle" / "no-oracle").exists()
    assert (where["plain-a"] / "oracle" / "plain-a" / "solve.sh").is_file()
    # the single service's literal environment is the image's own; the host's variables never enter
    dockerfile = (where["one-service"] / "harbor" / "one-service" / "environment" / "Dockerfile").read_text()
    assert 'ENV MODE="fast"\n' in dockerfile and "OPENAI" not in dockerfile
    assert "docker-compose.yaml" not in lines["one-service"]["inputs"]
    assert "docker-compose.yaml" in lines["compose-as-data"]["inputs"]      # data: a host agent gets it


def test_strict_refuses_the_dataset_and_writes_nothing(tmp_path: Path) -> None:
    tasks = dataset(tmp_path)
    out = tmp_path / "suites" / "sb"
    done = run_cli("--import-harbor", str(tasks), "--out", str(out), "--strict", timeout=120)
    assert done.returncode == 2
    assert "--strict: 1 of 7 task(s) cannot be imported, nothing written" in done.stderr
    assert "two-services  environment/docker-compose.yaml: declares the service(s) db" in done.stderr
    assert not out.exists()


def test_a_single_task_folder_imports_into_train_only(tmp_path: Path) -> None:
    task = harbor_task(tmp_path / "tasks", "alone")
    out = tmp_path / "suites" / "one"
    done = run_cli("--import-harbor", str(task), "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["one-train"]
    assert "One task: imported into train only" in done.stdout
    assert "split train (one task: train only)" in (out / "one-train" / "suite.md").read_text()


def test_a_symlink_out_of_the_task_is_refused_and_nothing_is_copied(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT\n")
    tasks = tmp_path / "tasks"
    harbor_task(tasks, "fine-a")
    harbor_task(tasks, "fine-b")
    leaky = harbor_task(tasks, "leaky")
    (leaky / "environment" / "data.txt").symlink_to(secret)
    alone = run_cli("--import-harbor", str(leaky), "--out", str(tmp_path / "s1" / "x"), timeout=120)
    assert alone.returncode == 2 and "Traceback" not in alone.stderr
    assert f"symlink(s) pointing outside the task: environment/data.txt -> {secret}" in alone.stderr
    assert not (tmp_path / "s1").exists()
    done = run_cli("--import-harbor", str(tasks), "--out", str(tmp_path / "s2" / "x"), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "leaky  symlink(s) pointing outside the task: environment/data.txt" in done.stdout
    assert not [p for p in (tmp_path / "s2").rglob("*") if p.is_file() and "TOP-SECRET" in p.read_text()]


def test_a_latin1_instruction_is_refused_naming_it(tmp_path: Path) -> None:
    task = harbor_task(tmp_path / "tasks", "umlaut")
    (task / "instruction.md").write_bytes("Zähle die Zeilen.\n".encode("latin-1"))
    done = run_cli("--import-harbor", str(task), "--out", str(tmp_path / "s" / "x"), timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{task}: instruction.md is not UTF-8 text (byte 0xe4 at offset 1); convert it" in done.stderr


def test_a_failed_seed_from_leaves_nothing_and_the_retry_works(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    harbor_task(tasks, "a", skills=("one",))
    harbor_task(tasks, "b")
    out = tmp_path / "suites" / "sb"
    failed = run_cli("--import-harbor", str(tasks), "--out", str(out), "--seed-from", "a/nope", timeout=120)
    assert failed.returncode == 2 and "bundles no skill 'nope'; it has one" in failed.stderr
    assert not out.exists()
    again = run_cli("--import-harbor", str(tasks), "--out", str(out), "--seed-from", "a", timeout=120)
    assert again.returncode == 0, again.stderr
    assert (out / "seed" / "one" / "SKILL.md").is_file()


def test_seed_from_a_task_bundling_two_skills_seeds_the_set(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    harbor_task(tasks, "pair", skills=("alpha", "beta"))
    harbor_task(tasks, "other")
    out = tmp_path / "suites" / "sb"
    done = run_cli("--import-harbor", str(tasks), "--out", str(out), "--seed-from", "pair", timeout=120)
    assert done.returncode == 0, done.stderr
    seed = out / "seed" / "pair"
    assert sorted(p.relative_to(seed).as_posix() for p in seed.rglob("*") if p.is_file()) == \
        ["skills/alpha/SKILL.md", "skills/beta/SKILL.md"]
    assert f"--skill-dir {seed}" in done.stdout
