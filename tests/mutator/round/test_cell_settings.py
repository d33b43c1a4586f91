"""One record carries a cell's run settings whole: built once from a command's settings (cell_settings), the
same CellSettings reaches every CellJob of the loop's, a health check's and the solve phase's evaluations."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest

from eval.executors.local import LocalExecutor
from eval.jobs import CellJob, CellResult, CellSettings
from eval.suite import load_suite
from mutator.after.health import HealthCheck
from mutator.config import load_settings
from mutator.round import evaluations
from mutator.round.progress import Progress
from sandbox import get_launcher
from tests.conftest import ROOT

FAKE = (sys.executable, str(ROOT / "fakes" / "fake_agent.py"))
CHOSEN = {"cell_timeout_ms": 654_321, "max_output_mb": 3, "infra_retries": 4, "grader_timeout_ms": 45_000}


class Recording(LocalExecutor):
    """The local executor, keeping every job it was handed."""

    def __init__(self) -> None:
        self.jobs: list[CellJob] = []

    async def run_cell(self, job: CellJob) -> CellResult:
        self.jobs.append(job)
        return await super().run_cell(job)


@pytest.fixture
def recording(monkeypatch) -> Recording:
    executor = Recording()
    monkeypatch.setattr(evaluations, "executor_for", lambda *args, **kwargs: executor)
    return executor


def test_cell_settings_reads_each_per_cell_setting_once(tmp_path: Path) -> None:
    settings = load_settings({"data_dir": tmp_path, **CHOSEN}, environ={})
    launcher = get_launcher("none")
    assert evaluations.cell_settings(settings, agent_argv=FAKE, launcher=launcher, network=True) == CellSettings(
        agent_argv=FAKE, launcher=launcher, grader_timeout_s=45.0, network=True, cell_timeout_ms=654_321,
        max_output_bytes=3 * 2**20, infra_retries=4)


def test_a_health_check_runs_its_cells_with_the_commands_settings(tmp_path: Path, recording: Recording) -> None:
    """A health check built its Evaluator by hand and ran every cell at the defaults (30-minute cap, 20 MB output,
    1 retry) whatever the user set; now it is built like every other command's, from the one record."""
    settings = load_settings({"data_dir": tmp_path / "data", "replicates": 1, **CHOSEN}, environ={})
    skill = tmp_path / "skills" / "csv-clean"
    shutil.copytree(ROOT / "suites" / "csv-clean", skill)
    val = load_suite(ROOT / "suites" / "clean-val")
    check = HealthCheck(settings, FAKE, "fake@1", get_launcher("none"), parallel=2, progress=Progress(io.StringIO()))
    check.run(skill, [val])
    assert len(recording.jobs) == len(val.tasks)
    [carried] = {id(job.settings) for job in recording.jobs}    # one record, carried whole to every cell
    job = recording.jobs[0]
    assert (job.settings.cell_timeout_ms, job.settings.max_output_bytes, job.settings.infra_retries,
            job.settings.grader_timeout_s) == (654_321, 3 * 2**20, 4, 45.0)
