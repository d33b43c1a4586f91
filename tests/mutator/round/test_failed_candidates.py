"""An unhealthy candidate evaluation gets no gate decision: the attempt is FAILED with its failure counts,
the incumbent stays, and the run goes on (the real loop, the fake mutator, a build agent that breaks on
one rule)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from eval.suite import load_suite
from mutator.config import load_settings
from mutator.round.loop import Loop
from mutator.round.progress import Progress
from mutator.round.session import Agents, Suites
from mutator.store.db import connect_readonly, loads
from sandbox.none import NoneLauncher
from strategies import make_strategy
from tests.conftest import ROOT

# The fake build agent, except that a skill with the `amounts` rule makes it crash on the tasks whose prompt hashes odd
# (4 of clean-val's 8). The hash is of the prompt text, never of its path: paths differ per machine and per run.
BREAKS_ON_AMOUNTS = f"""import os, pathlib, runpy, sys, zlib
skill = os.environ.get("SM_SKILL_DIR")
if skill and '"amounts"' in (pathlib.Path(skill) / "rules.json").read_text() and \\
        zlib.crc32(pathlib.Path(os.environ["SM_PROMPT_FILE"]).read_bytes()) % 2:
    print("crash: amounts rule", file=sys.stderr)
    sys.exit(1)
sys.argv = [{str(ROOT / "fakes" / "fake_agent.py")!r}]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

# The fake mutator, then a key of the shape the harness's redactor knows pasted into SKILL.md.
PASTES_A_KEY = f"""import pathlib, runpy, sys
sys.argv = [{str(ROOT / "fakes" / "fake_mutator.py")!r}]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
with open(pathlib.Path("skill") / "SKILL.md", "a", encoding="utf-8") as out:
    out.write("\\nAPI key for the export step: sk-ant-api03-FAKEFAKEFAKE0000\\n")
"""


def test_an_unhealthy_candidate_is_failed_and_the_run_goes_on(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(BREAKS_ON_AMOUNTS)
    settings = load_settings({"data_dir": tmp_path / "data", "rounds": 3, "replicates": 2, "solve": "off"}, environ={})
    suites = Suites(train=load_suite(ROOT / "suites" / "clean-train"), val=load_suite(ROOT / "suites" / "clean-val"))
    agents = Agents(build_argv=(sys.executable, str(agent)), build_id="breaks-on-amounts@1",
                    mutator_argv=(sys.executable, str(ROOT / "fakes" / "fake_mutator.py")), mutator_id="fake-mutator@1")
    loop = Loop(settings, suites, agents, NoneLauncher(), make_strategy("greedy", {}), progress=Progress())
    run_id = loop.execute()
    db = connect_readonly(settings.db_path)
    attempts = {a["round"]: dict(a) for a in db.query("select * from attempts where run_id = ?", [run_id])}
    # round 3's change loses decisively on the screen's 6 train cells (screen.tasks 6): no val cell is spent on it
    assert [attempts[r]["verdict"] for r in (1, 2, 3)] == ["KEEP", "FAILED", "SCREENED"]
    failed = attempts[2]
    failures = loads(failed["failures"])
    # val runs in waves: the first wave (8 tasks x replicate 1) is already past maxFailedShare, so no more is spent
    assert set(failures) == {"agent_error"} and failures["agent_error"] / 8 > settings.max_failed_share
    assert failed["error"].startswith("unhealthy evaluation, no gate decision: this candidate on val (clean-val): ")
    assert "crash: amounts rule" in failed["error"]
    assert failed["delta"] is None and failed["gate"] is None and failed["val_evaluation_id"] is not None
    run = dict(next(iter(db.query("select * from runs where id = ?", [run_id]))))
    assert run["status"] == "finished" and run["incumbent_hash"] == attempts[1]["genome_hash"]
    evaluation = dict(next(iter(db.query("select * from evaluations where id = ?", [failed["val_evaluation_id"]]))))
    assert evaluation["status"] == "partial" and evaluation["n_done"] == 8
    assert evaluation["n_failed"] == failures["agent_error"]
    from mutator.round.summary import summary
    text = summary(db, run_id)
    assert f"failed cells, round 2 on clean-val: {failures['agent_error']} of 8 run ({failures['agent_error']} agent_error)" \
        in text and "FAILED 1" in text


def test_a_candidate_whose_skill_holds_a_secret_is_failed_not_evaluated(tmp_path: Path) -> None:
    """The mutator pastes a key into SKILL.md: the redactor replaces it, and the candidate is FAILED with the file
    named (on the attempt, in the round's line and in the summary), never evaluated, kept or proposed (issue 29 item 7)."""
    mutator = tmp_path / "mutator.py"
    mutator.write_text(PASTES_A_KEY)
    settings = load_settings({"data_dir": tmp_path / "data", "rounds": 1, "replicates": 1, "solve": "off"}, environ={})
    suites = Suites(train=load_suite(ROOT / "suites" / "clean-train"), val=load_suite(ROOT / "suites" / "clean-val"))
    agents = Agents(build_argv=(sys.executable, str(ROOT / "fakes" / "fake_agent.py")), build_id="fake-agent@1",
                    mutator_argv=(sys.executable, str(mutator)), mutator_id="pastes-a-key@1")
    said = io.StringIO()
    run_id = Loop(settings, suites, agents, NoneLauncher(), make_strategy("greedy", {}),
                  progress=Progress(said)).execute()
    db = connect_readonly(settings.db_path)
    [attempt] = [dict(a) for a in db.query("select * from attempts where run_id = ? and round = 1", [run_id])]
    reason = ("the mutator wrote a secret into skill/SKILL.md (redacted there): a skill must never carry a key; the "
              "candidate is FAILED, not evaluated")
    assert (attempt["status"], attempt["verdict"], attempt["error"]) == ("failed", "FAILED", reason)
    assert attempt["genome_hash"] is None and attempt["val_evaluation_id"] is None
    assert f"  → FAILED: {reason}\n" in said.getvalue()
    from mutator.round.summary import summary
    assert "[the mutator wrote a secret into skill/SKILL.md (redacted there)" in summary(db, run_id)
    run = dict(next(iter(db.query("select * from runs where id = ?", [run_id]))))
    assert run["status"] == "finished" and run["incumbent_hash"] == run["seed_hash"]
    assert db.execute("select count(*) from evaluations").fetchone()[0] == 2     # the seed's val and train only
    assert db.execute("select count(*) from proposals").fetchone()[0] == 0
    skill_md = (settings.data_dir / "workspaces" / run_id / "round-1-0" / "skill" / "SKILL.md").read_text()
    assert "[REDACTED]" in skill_md and "sk-ant-" not in skill_md
