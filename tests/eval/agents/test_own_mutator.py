"""Bring your own build agent AND mutator: `--agent-cmd A --mutator-cmd M` with no wrapper script.

M only edits skill/ and writes result.json (no stream at all); the loop still reaches the known optimum
of a small suite of its own. The solve phase stays off by default, since a command mutator cannot solve.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from mutator.store.db import connect_readonly
from tests.eval.agents.test_real_run import ROOT, clean_env, run_py

RULES = ("header", "upper", "footer")   # the skill that applies all three is the optimum (every test 1.0)

BUILD_AGENT = r'''import json, os, pathlib
skill = pathlib.Path(os.environ.get("SM_SKILL_DIR", "/nonexistent")) / "SKILL.md"
rules = [l[len("- rule: "):].strip() for l in skill.read_text().splitlines() if l.startswith("- rule: ")] \
    if skill.is_file() else []
text = pathlib.Path("in.txt").read_text().strip()
if "upper" in rules: text = text.upper()
if "header" in rules: text = "BEGIN\n" + text
if "footer" in rules: text = text + "\nEND"
pathlib.Path("out.txt").write_text(text + "\n")
with open(os.environ["SM_STREAM"], "a") as f:
    usage = {"input_tokens": 1000, "output_tokens": 50}
    f.write(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}],
                                                         "usage": usage}}) + "\n")
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                        "usage": usage, "total_cost_usd": 0.002}) + "\n")
'''

MUTATOR = r'''import json, pathlib
skill = pathlib.Path("skill/SKILL.md")
text = skill.read_text()
for rule in ("header", "upper", "footer"):
    if f"- rule: {rule}" not in text:
        skill.write_text(text.rstrip("\n") + f"\n- rule: {rule}\n")
        pathlib.Path("result.json").write_text(json.dumps(
            {"summary": f"Add the {rule} rule", "reasoning": "the worst tests miss it"}))
        break
else:
    pathlib.Path("result.json").write_text(json.dumps({"summary": "nothing left", "reasoning": "optimum"}))
'''

GRADER = r'''import json, pathlib, sys
out = (pathlib.Path(sys.argv[1]) / "out.txt")
text = out.read_text() if out.exists() else ""
lines = text.strip().splitlines() or [""]
word = pathlib.Path("fixtures", sys.argv[2], "in.txt").read_text().strip()
print(json.dumps({"header": float(lines[0] == "BEGIN"), "footer": float(lines[-1] == "END"),
                  "upper": float(word.upper() in lines and word.lower() not in text)}))
'''


def suite(root: Path, name: str, split: str, words: list[str]) -> Path:
    folder = root / name
    (folder / "fixtures").mkdir(parents=True)
    (folder / "suite.md").write_text(f"---\nname: {name}\nsplit: {split}\nrunner: script\n---\nShout suite.\n")
    tasks = []
    for n, word in enumerate(words):
        (folder / "fixtures" / f"w{n}").mkdir()
        (folder / "fixtures" / f"w{n}" / "in.txt").write_text(word + "\n")
        tasks.append(json.dumps({"id": f"w{n}", "prompt": "Shout in.txt into out.txt", "inputs": ["in.txt"],
                                 "required": ["out.txt"]}))
    (folder / "tasks.jsonl").write_text("\n".join(tasks) + "\n")
    (folder / "run-eval.py").write_text(GRADER)
    return folder


def own_setup(tmp_path: Path) -> dict[str, Path]:
    skill = tmp_path / "shout"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: shout\ndescription: Shout a word into out.txt.\n---\n"
                                    "# Shout\n\nRead in.txt and write out.txt. Rules:\n")
    (tmp_path / "agent.py").write_text(BUILD_AGENT)
    (tmp_path / "mutator.py").write_text(MUTATOR)
    return {"skill": skill, "agent": tmp_path / "agent.py", "mutator": tmp_path / "mutator.py",
            "train": suite(tmp_path / "suites", "shout-train", "train", ["apple", "pear", "plum"]),
            "val": suite(tmp_path / "suites", "shout-val", "val", ["fig", "kiwi", "lime"]),
            "test": suite(tmp_path / "suites", "shout-test", "test", ["date", "yuzu"])}


def test_own_agent_and_own_mutator_reach_the_optimum(tmp_path: Path) -> None:
    own = own_setup(tmp_path)
    data = tmp_path / "data"
    done = run_py("--real", "--agent-cmd", f"{sys.executable} {own['agent']}",
                  "--mutator-cmd", f"{sys.executable} {own['mutator']}", "--skill-dir", str(own["skill"]),
                  "--suite", str(own["train"]), "--val", str(own["val"]), "--holdout", str(own["test"]),
                  "--rounds", "4", "--replicates", "1", "--data-dir", str(data), env=clean_env())
    assert done.returncode == 0, done.stderr[-4000:]
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["status"] == "finished" and run["solve"] is None          # no solve phase for a command mutator
    assert run["agent"].startswith("command@")
    assert run["mutator_model"] is None        # your --mutator-cmd chooses its model: config's mutatorModel is not it
    assert run["skill_dir"] == str(own["skill"].resolve())
    attempts = [dict(r) for r in db.query("select * from attempts where round > 0 order by round")]
    assert [a["verdict"] for a in attempts] == ["KEEP", "KEEP", "KEEP", "CRITIC"]
    assert [a["summary"] for a in attempts[:3]] == [f"Add the {rule} rule" for rule in RULES]
    assert "identical to its parent" in attempts[3]["error"]
    champion = dict(next(iter(db.query("select eval from attempts where genome_hash = ? and eval is not null",
                                       [run["incumbent_hash"]]))))
    assert champion["eval"] == 1.0
    assert not list(db.query("select * from attempts where verdict = 'FAILED'"))
    # the agent's own total_cost_usd (0.002) is charged; the config.json price of its usage sits beside it
    cells = [dict(r) for r in db.query("select * from cells")]
    assert cells and {c["cost_usd"] for c in cells} == {0.002} and {c["reported_cost_usd"] for c in cells} == {0.002}
    priced = (1000 * 1 + 50 * 5) / 1e6   # claude-haiku-4-5: $1 / $5 per million input / output tokens
    assert {round(c["priced_cost_usd"], 12) for c in cells} == {priced}
    assert run["cost_usd"] == pytest.approx(0.002 * len(cells))
    assert "fakes" not in done.stdout and "your agent's own total_cost_usd" in done.stdout
    assert {a["mutator_input_tokens"] for a in attempts} == {0}   # no stream: nothing to count, nothing charged


def printed(stdout: str, prefix: str) -> list[str]:
    """The command a printed next step names, split as a shell would (a trailing `# comment` dropped)."""
    line = next(line for line in stdout.splitlines() if line.strip().startswith(prefix))
    return shlex.split(line.strip()[len(prefix):], comments=True)


def test_printed_next_steps_work_when_pasted(tmp_path: Path) -> None:
    """Suites given by path, a non-default --data-dir and a command agent: the printed `--test-run` line
    needs no --suite and no agent flags (the run remembers its holdout's path and its agents), and the
    printed reject line finds the proposal in the same store."""
    own = own_setup(tmp_path)
    data = tmp_path / "data"
    done = run_py("--real", "--agent-cmd", f"{sys.executable} {own['agent']}",
                  "--mutator-cmd", f"{sys.executable} {own['mutator']}", "--skill-dir", str(own["skill"]),
                  "--suite", str(own["train"]), "--val", str(own["val"]), "--holdout", str(own["test"]),
                  "--rounds", "1", "--replicates", "1", "--data-dir", str(data), env=clean_env())
    assert done.returncode == 0, done.stderr[-4000:]
    test_cmd = printed(done.stdout, "Test the champion:")
    assert test_cmd[1].endswith("run.py") and "--suite" not in test_cmd and "--agent-cmd" not in test_cmd
    tested = run_py(*test_cmd[2:], env=clean_env())
    assert tested.returncode == 0, tested.stderr[-4000:]
    assert "on shout-test:" in tested.stdout and "6 cells run" in tested.stdout   # seed, champion, no-skill control
    db = connect_readonly(data / "mutator.db")
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["holdout_path"] == str(own["test"].resolve()) and run["suite_path"] == str(own["train"].resolve())
    assert json.loads(run["agents"])["agent_cmd"] == f"{sys.executable} {own['agent']}"
    # the recorded name resolves to the recorded path, though it is in no config.json 'suites'
    again = run_py("--test-run", run["id"], "--suite", "shout-test", "--data-dir", str(data), env=clean_env())
    assert again.returncode == 0 and "(all cached)" in again.stdout, again.stderr[-2000:]
    # other agent flags than the run's are refused, saying which flags the run used
    other = run_py("--test-run", run["id"], "--real", "--agent-cmd", f"{sys.executable} {own['mutator']}",
                   "--data-dir", str(data), env=clean_env())
    assert other.returncode == 2 and "it ran with: --real --agent command --agent-cmd" in other.stderr
    reject_cmd = printed(done.stdout, "reject:")
    rejected = run_py(*reject_cmd[2:], env=clean_env())
    assert rejected.returncode == 0 and "rejected" in rejected.stdout, rejected.stderr


def test_config_mutator_cmd_runs_the_mutator_and_a_typed_backend_outranks_it(tmp_path: Path) -> None:
    own = own_setup(tmp_path)
    config = json.loads((ROOT / "config.json").read_text())
    config["mutatorCmd"] = f"{sys.executable} {own['mutator']}"
    config["suites"] = {}
    (tmp_path / "config.json").write_text(json.dumps(config))
    common = ("--config", str(tmp_path / "config.json"), "--real", "--agent-cmd", f"{sys.executable} {own['agent']}",
              "--skill-dir", str(own["skill"]), "--suite", str(own["train"]), "--val", str(own["val"]),
              "--rounds", "1", "--replicates", "1", "--data-dir", str(tmp_path / "data"))
    done = run_py(*common, env=clean_env())
    assert done.returncode == 0, done.stderr[-3000:]
    db = connect_readonly(tmp_path / "data" / "mutator.db")
    assert [r["summary"] for r in db.query("select summary from attempts where round = 1")] == ["Add the header rule"]
    refused = run_py(*common, "--mutator-agent", "anthropic", env=clean_env())
    assert refused.returncode == 2
    assert "the mutator (--mutator-agent anthropic): the anthropic backend needs an API key" in refused.stderr
