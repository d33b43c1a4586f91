"""Proof: nothing handed to the mutator carries a val task's details or anything of the test suite.

A wrapper mutator captures every byte it is given — the staged workspace, the prompt on stdin and its
environment — then runs the fake mutator. The captures are searched for val/test ids, prompts and
fixture lines that do not also occur in train.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from eval.suite import load_suite
from mutator.config import load_settings
from mutator.round.loop import Loop
from mutator.round.progress import Progress
from mutator.round.session import Agents, Suites
from mutator.store.evidence import untouched
from sandbox.none import NoneLauncher
from strategies import make_strategy
from tests.conftest import ROOT

WRAPPER = """import json, os, pathlib, shutil, subprocess, sys
capture = pathlib.Path(os.environ["LEAK_CAPTURE"]) / f"{os.environ['SM_ROUND']}-{os.environ['SM_SIBLING']}"
capture.mkdir(parents=True)
(capture / "stdin.txt").write_text(sys.stdin.read())
(capture / "env.json").write_text(json.dumps(dict(os.environ)))
shutil.copytree(os.getcwd(), capture / "workspace")
sys.exit(subprocess.call([sys.executable, sys.argv[1]]))
"""


def forbidden_strings() -> set[str]:
    train = load_suite(ROOT / "suites" / "clean-train")
    train_text = {t.prompt for t in train.tasks}
    train_lines = set()
    for task in train.tasks:
        for rel in task.inputs:
            train_lines |= set((train.fixture_dir(task.id) / rel).read_text().splitlines())
    found = {"clean-val", "clean-test", str(ROOT / "suites" / "clean-val"), str(ROOT / "suites" / "clean-test")}
    for name in ("clean-val", "clean-test"):
        suite = load_suite(ROOT / "suites" / name)
        for task in suite.tasks:
            found.add(task.id)
            if task.prompt not in train_text:
                found.add(task.prompt)
            for rel in task.inputs:
                found |= {line for line in (suite.fixture_dir(task.id) / rel).read_text().splitlines()
                          if len(line) > 12 and line not in train_lines}
    return found


@pytest.mark.parametrize("strategy, opts", [("greedy", {}), ("branching", {"width": 2}),
                                            ("population", {"pool": 3, "children": 2})])
def test_mutator_sees_no_val_details_and_nothing_of_test(tmp_path: Path, monkeypatch, strategy, opts) -> None:
    capture = tmp_path / "capture"
    monkeypatch.setenv("LEAK_CAPTURE", str(capture))
    monkeypatch.setenv("SM_PASS_ENV", "LEAK_CAPTURE")  # agents get an allow-listed environment (--pass-env)
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(WRAPPER)
    settings = load_settings({"data_dir": tmp_path / "data", "rounds": 2, "replicates": 1, "strategy": strategy,
                              "strategy_opts": opts})
    suites = Suites(train=load_suite(ROOT / "suites" / "clean-train"), val=load_suite(ROOT / "suites" / "clean-val"),
                    holdout=load_suite(ROOT / "suites" / "clean-test"))
    build = (sys.executable, str(ROOT / "fakes" / "fake_agent.py"))
    agents = Agents(build_argv=build, build_id="fake", mutator_id="wrapped",
                    mutator_argv=(sys.executable, str(wrapper), str(ROOT / "fakes" / "fake_mutator.py")))
    loop = Loop(settings, suites, agents, NoneLauncher(), make_strategy(strategy, opts),
                progress=Progress(open("/dev/null", "w")))
    diffs: list[tuple[str, str]] = []
    real_diff = loop.session.genomes.diff
    monkeypatch.setattr(loop.session.genomes, "diff", lambda parent, genome: diffs.append((parent, genome)) or
                        real_diff(parent, genome))
    loop.execute()
    # each attempt's diff is made once (a git process), however many workspaces and briefings show it ...
    assert diffs and len(diffs) == len(set(diffs))
    # ... and shown by linking the one stored copy, which the search below covers too
    shared = [p for p in (tmp_path / "data" / "workspaces").rglob("*") if p.is_file() and untouched(p)]
    assert {p.parts[-2] for p in shared} >= {"history"} and all(p.stat().st_nlink > 1 for p in shared)
    stored = {p: p.read_text(errors="replace") for p in (tmp_path / "data" / "evidence").rglob("*") if p.is_file()}
    assert len(stored) >= len(set(diffs))
    captures = sorted(capture.iterdir())
    assert len(captures) >= 2
    staged = {p.relative_to(captures[-1] / "workspace").parts[0] for p in (captures[-1] / "workspace").rglob("*")}
    assert {"skill", "briefing.md", "evidence", "history", "tasks"} <= staged
    needles = forbidden_strings()
    for one in captures:
        env = json.loads((one / "env.json").read_text())
        texts = {"stdin": (one / "stdin.txt").read_text(),
                 "env": "\n".join(f"{k}={v}" for k, v in env.items())}
        for path in (one / "workspace").rglob("*"):
            if path.is_file():
                texts[str(path.relative_to(one))] = path.read_text(errors="replace")
        texts.update({str(path): text for path, text in stored.items()})
        for where, text in texts.items():
            leaked = sorted(n for n in needles if n in text)
            assert not leaked, f"{where} leaks {leaked[:3]}"
    # the train side really is there: a positive control for the search above
    briefing = (captures[-1] / "workspace" / "briefing.md").read_text()
    assert any(t.id in briefing for t in load_suite(ROOT / "suites" / "clean-train").tasks)
    # ... with its skill telemetry: per train task, and on val only as aggregates (no val task id: searched above)
    assert "| skill use | failing tests |" in briefing and "loaded 1/1; read SKILL.md 1, rules.json 1" in briefing
    assert "- train: skill loaded in " in briefing and "- val (aggregates only): skill loaded in " in briefing
    rollouts = list((captures[-1] / "workspace" / "evidence" / "current").glob("*.md"))
    assert rollouts and all("## Skill use\n- loaded: yes, turn 1" in p.read_text() for p in rollouts)
    # ... and the critic's caps with the parent's room under them, before the mutator call is paid
    assert "## Size caps (the critic rejects a candidate past them before it is evaluated)" in briefing
    assert "lines of the 500-line cap (critic.maxSkillLines): " in briefing and " bytes in all;" in briefing
