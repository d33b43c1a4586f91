"""The statements run.py's commands need from the store, behind functions (mutator/cli/ holds no SQL).

Today: the heartbeats a command beats while it holds a run lock (a health check, a fixed champion's test run).
"""

from __future__ import annotations

from pathlib import Path

from mutator.store.liveness import Heartbeat

CHECK_BEAT = "update health_checks set heartbeat_at = ? where skill_dir = ? and status = 'running'"
TEST_RUN_BEAT = "update test_runs set heartbeat_at = ? where run_id = ? and status = 'running'"


def check_heartbeat(db_path: Path, skill_dir: str) -> Heartbeat:
    """Beat the running health check of `skill_dir` (started now, stopped by the caller)."""
    return Heartbeat(db_path, CHECK_BEAT, [skill_dir])


def test_run_heartbeat(db_path: Path, run_id: str) -> Heartbeat:
    """Beat the running test runs of `run_id`'s champion (started now, stopped by the caller)."""
    return Heartbeat(db_path, TEST_RUN_BEAT, [run_id])
