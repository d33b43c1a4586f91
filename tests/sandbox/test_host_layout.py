"""Without a container engine, `--sandbox bwrap` verifies a Harbor task in its declared layout on the host's own
system: the work dir at the task's WORKDIR, tests/ at /tests read-only, /logs/verifier writable."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from eval.cells import Contract
from eval.cost import Price
from eval.evaluate import EvalRequest, evaluate
from eval.graders import harbor_runner
from eval.jobs import CellSettings
from eval.suite import load_suite
from mutator.after.harbor_import import import_harbor
from sandbox import SandboxError
from sandbox.bwrap import BwrapLauncher
from sandbox.none import NoneLauncher
from tests.conftest import ROOT
from tests.sandbox.conftest import needs_bwrap

EXAMPLE = ROOT / "suites" / "harbor-example"
AGENT = """import json, os, pathlib
if os.environ.get("COUNT") == "yes":
    lines = pathlib.Path("visits.log").read_text().splitlines()
    pathlib.Path("count.txt").write_text(str(len(lines)))
with open(os.environ["SM_STREAM"], "a") as f:
    f.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                        "usage": {"input_tokens": 10, "output_tokens": 5}}) + "\\n")
"""


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(engine_id: str = "auto"):
        raise SandboxError("no container engine works here (test)")
    monkeypatch.setattr(harbor_runner, "engine_for", missing)


def cells(tmp_path: Path, launcher, env: dict) -> list:
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"train": ["count-lines"], "val": ["shout", "top-hosts"]}))
    import_harbor(EXAMPLE, tmp_path / "hx", split_file=split)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    return evaluate(EvalRequest(
        skill_dir=None, skill_name="s", suite=load_suite(tmp_path / "hx" / "hx-train"), key="k",
        price=Price(1, 5, 1.25, 0.1), cells_root=tmp_path / "cells", concurrency=1,
        contract=Contract(model="m", replicates=1, max_turns=5, agent="test", silence_ms=60_000, heartbeat_ms=60_000),
        settings=CellSettings(agent_argv=[sys.executable, str(agent)], launcher=launcher, grader_timeout_s=60,
                              prune=False, infra_retries=0, env=env)))


@needs_bwrap
@pytest.mark.parametrize(("count", "reward"), [("yes", 1.0), ("no", 0.0)])
def test_verifier_runs_in_the_tasks_layout_on_the_host(no_engine: None, tmp_path: Path, count: str,
                                                       reward: float) -> None:
    [cell] = cells(tmp_path, BwrapLauncher(), {"COUNT": count})
    assert (cell.status, cell.tests) == ("ok", {"reward": reward}), cell.error
    cell_dir = Path(cell.cell_dir)
    assert (cell_dir / "verifier" / "reward.txt").read_text().strip() == str(int(reward))
    assert "the task's image was not built" in (cell_dir / "verifier.log").read_text()


def test_no_engine_and_no_bwrap_says_what_to_do(no_engine: None, tmp_path: Path) -> None:
    [cell] = cells(tmp_path, NoneLauncher(), {"COUNT": "yes"})
    assert cell.status == "infra_error"
    assert "no container engine works here (test); without an engine, --sandbox bwrap runs the verifier" in cell.error
