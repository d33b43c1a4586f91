"""Triggering optimised by the loop, end to end with a scripted agent that loads the skill only when the prompt meets
its description (tests/mutator/scoring/trigger_agent.py) and a scripted mutator that rewrites the description: with
score.wTrigger > 0, a description that raises trigger recall on val is KEPT, one that adds false triggers is REJECTED,
and every figure re-derives from the store. And --with-skills: every cell holds every skill, the others read-only."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from mutator.after.trigger_import import GRADER
from mutator.round.summary import stored_cells
from mutator.scoring.gate import compare
from mutator.scoring.models import stored_normalisers
from mutator.scoring.score import Weights, per_task
from mutator.store.db import connect_readonly
from mutator.validity.report import compare_split
from tests.eval.agents.test_real_run import clean_env, run_py

AGENT = Path(__file__).with_name("trigger_agent.py")
SHOULD = ["clean the csv export of orders", "clean this csv export please", "the csv export needs a clean",
          "clean up my csv export"]
NEAR = ["write a short poem about spring", "a poem about spring rain", "spring poem for my mother",
        "read me a poem about spring"]

# round 1 widens the description to the csv requests (recall 0 -> 1); round 2 to poems too (false triggers 0 -> 1)
MUTATOR = r'''import json, os, pathlib
skill = pathlib.Path("skill/SKILL.md")
add = {"1": " Use it to clean any csv export.", "2": " Also write a poem about spring."}[os.environ["SM_ROUND"]]
lines = [l + add if l.startswith("description:") else l for l in skill.read_text().splitlines()]
skill.write_text("\n".join(lines) + "\n")
pathlib.Path("result.json").write_text(json.dumps({"summary": "description:" + add, "reasoning": "triggering"}))
'''


def suite(root: Path, name: str, split: str, should: list[str], near: list[str]) -> Path:
    folder = root / name
    (folder / "fixtures").mkdir(parents=True)
    (folder / "suite.md").write_text(f"---\nname: {name}\nsplit: {split}\nrunner: script\n---\nTrigger suite.\n")
    (folder / "run-eval.py").write_text(GRADER)
    tasks = [{"id": f"should-{i}", "prompt": q, "trigger": True} for i, q in enumerate(should)] + \
            [{"id": f"near-{i}", "prompt": q, "trigger": False} for i, q in enumerate(near)]
    (folder / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return folder


def skill_dir(root: Path, name: str, description: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nSteps.\n")
    return folder


@pytest.fixture(scope="module")
def trigger_run(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("trigger")
    (root / "mutator.py").write_text(MUTATOR)
    setup = {"skill": skill_dir(root, "tabular", "Tidy tabular data files."),
             "train": suite(root, "trig-train", "train", SHOULD[:1], NEAR[:1]),
             "val": suite(root, "trig-val", "val", SHOULD, NEAR), "data": root / "data",
             "mutator": f"{sys.executable} {root / 'mutator.py'}"}
    done = run_py("--real", "--agent-cmd", f"{sys.executable} {AGENT}", "--mutator-cmd", setup["mutator"], "--skill-dir", str(setup["skill"]),
                  "--suite", str(setup["train"]), "--val", str(setup["val"]), "--rounds", "2", "--replicates", "1",
                  "--data-dir", str(setup["data"]),
                  env=clean_env(SKILL_MUTATOR_W_TRIGGER="0.5", SKILL_MUTATOR_SCREEN_TASKS="0"))
    assert done.returncode == 0, done.stderr[-4000:]
    return setup


def test_a_description_raising_recall_is_kept_and_one_adding_false_triggers_rejected(trigger_run):
    db = connect_readonly(trigger_run["data"] / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["w_trigger"] == 0.5 and json.loads(run["config"])["w_trigger"] == 0.5
    attempts = [dict(r) for r in db.query("select * from attempts where round > 0 order by round")]
    assert [a["verdict"] for a in attempts] == ["KEEP", "REJECT"]
    figures = {}
    for label, evaluation_id in [("seed", db.execute("select val_evaluation_id from attempts where round = 0")
                                  .fetchone()[0]), *((a["round"], a["val_evaluation_id"]) for a in attempts)]:
        e = db["evaluations"].get(evaluation_id)
        figures[label] = (e["trigger_recall"], e["false_trigger_rate"], json.loads(e["no_trigger_tasks"]))
    near = [f"near-{i}" for i in range(4)]
    assert figures == {"seed": (0.0, 0.0, near), 1: (1.0, 0.0, near), 2: (1.0, 1.0, near)}
    # every gate figure re-derives from the stored cells, the run's weights and the seed's normalisers
    weights, norm = Weights.of_run(run), stored_normalisers(run, "val")
    seed_val = db.execute("select val_evaluation_id from attempts where round = 0").fetchone()[0]
    for attempt, incumbent in zip(attempts, (seed_val, attempts[0]["val_evaluation_id"]), strict=True):
        gate = json.loads(attempt["gate"])
        again = compare(per_task(stored_cells(db, attempt["val_evaluation_id"]), weights, norm),
                        per_task(stored_cells(db, incumbent), weights, norm), prior=[], min_improvement=0.0,
                        gate_z=0.0)
        assert again.deltas == pytest.approx(gate["deltas"]) and again.delta_trigger == pytest.approx(
            gate["delta_trigger"])
    gates = [json.loads(a["gate"]) for a in attempts]
    assert gates[0]["delta_trigger"] == pytest.approx(0.5 * 0.5)          # 4 of 8 tasks gain the whole term
    assert gates[1]["delta_trigger"] == pytest.approx(-0.5 * 0.5)         # 4 near-misses lose it
    assert gates[1]["delta_eval"] == pytest.approx(-0.5)                  # and score 0 instead of 1 (loaded)
    # the test report pairs the trigger term per task like the rest (here champion vs seed on val)
    split = compare_split(db, attempts[0]["val_evaluation_id"], seed_val, weights, norm)
    assert split["delta_trigger"]["mean"] == pytest.approx(0.25) and split["delta"]["mean"] == pytest.approx(
        gates[0]["delta"])
    db.close()


def cell_listings(data: Path) -> list[dict]:
    """What each cell's agent saw of .claude/skills (its one text event), from the kept stream of every cell."""
    db = connect_readonly(data / "mutator.db")
    dirs = [Path(r["cell_dir"]) for r in db.query("select cell_dir from cells")]
    db.close()
    seen = []
    for cell in dirs:
        for line in (cell / "stream.jsonl").read_text().splitlines():
            event = json.loads(line)
            for block in event.get("message", {}).get("content", []) if event["type"] == "assistant" else []:
                if block.get("type") == "text":
                    seen.append(json.loads(block["text"]))
    return seen


def test_with_skills_installs_every_skill_read_only_and_keys_a_new_run(trigger_run, tmp_path):
    others = tmp_path / "others"
    skill_dir(others, "poems", "Write a poem about spring.")
    skill_dir(others, "invoices", "Read invoices.")
    (others / "notes").mkdir()                     # a folder without SKILL.md is not a skill
    args = ("--real", "--agent-cmd", f"{sys.executable} {AGENT}", "--mutator-cmd", trigger_run["mutator"],
            "--skill-dir", str(trigger_run["skill"]),
            "--suite", str(trigger_run["train"]), "--val", str(trigger_run["val"]), "--rounds", "0",
            "--replicates", "1", "--data-dir", str(tmp_path / "data"))
    env = clean_env(SKILL_MUTATOR_W_TRIGGER="0.5", SKILL_MUTATOR_SCREEN_TASKS="0")
    alone = run_py(*args, env=env)
    among = run_py(*args, "--with-skills", str(others), env=env)
    assert alone.returncode == 0 and among.returncode == 0, among.stderr[-3000:]
    db = connect_readonly(tmp_path / "data" / "mutator.db")
    contracts = sorted((json.loads(r["contract"]).get("with_skills", "") for r in db.query(
        "select distinct contract from evaluations")), key=len)
    assert db.execute("select count(*) from runs").fetchone()[0] == 2
    assert contracts[0] == "" and len(contracts[1]) == 16
    db.close()
    listings = cell_listings(tmp_path / "data")
    assert Counter(tuple(x["skills"]) for x in listings) == {("tabular",): 10, ("invoices", "poems", "tabular"): 10}
    # the evolved skill is the cell's own copy (writable); the others' files carry no write bit
    assert all(all(path.startswith(".claude/skills/tabular/") for path in x["writable"]) for x in listings)
    again = run_py(*args, "--with-skills", str(others), env=env)
    assert again.returncode == 0 and "0 cells run by this command" in again.stdout


def test_a_bad_with_skills_dir_exits_2_naming_it_before_the_store_opens(trigger_run, tmp_path):
    """(The other refusals, a missing DIR and one with no skill, are tests/eval/test_other_skills.py's.)"""
    others = tmp_path / "others"
    skill_dir(others, "tabular", "Another tabular skill.")
    says = "has the evolved skill's name 'tabular'"
    done = run_py("--real", "--agent-cmd", f"{sys.executable} {AGENT}", "--mutator-cmd", trigger_run["mutator"],
                  "--skill-dir", str(trigger_run["skill"]), "--suite", str(trigger_run["train"]), "--val", str(trigger_run["val"]), "--rounds", "0",
                  "--with-skills", str(others), "--data-dir", str(tmp_path / "data"), env=clean_env())
    assert done.returncode == 2 and f"--with-skills {others}" in done.stderr and says in done.stderr, done.stderr
    assert not (tmp_path / "data" / "mutator.db").exists()      # refused before the store is opened
