"""Run one cell: stage a fresh dir, spawn the build agent through the launcher, then the grader.

The grader runs only after the agent's whole process group is gone, outside the agent's sandbox,
and never sees the skill: it gets the agent's working dir and the task id. Every failure (agent
error, watchdog timeout, grader crash/hang/garbage) becomes a recorded status, never an exception.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from eval.cost import charged, usd
from eval.graders import get_runner
from eval.graders.judge_runner import grader_cost, grader_usage
from eval.jobs import CellJob, CellResult
from eval.process import run_agent_process
from eval.snapshot import copy_tree
from eval.stream_metrics import read_stream
from eval.trajectory import capture_and_prune


def stage(job: CellJob) -> Path:
    """A fresh cell dir: work/ holds the inputs and the skill copy; prompt and logs sit beside it."""
    if job.cell_root.exists():
        shutil.rmtree(job.cell_root)  # left by a crashed run: an unfinished cell starts over
    work = job.cell_root / "work"
    work.mkdir(parents=True)
    fixtures = job.suite.fixture_dir(job.task.id)
    for rel in job.task.inputs:
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fixtures / rel, target)
    if job.skill_dir is not None:
        copy_tree(job.skill_dir, work / ".claude" / "skills" / job.skill_name)
    (job.cell_root / "prompt.md").write_text(job.task.prompt, encoding="utf-8")
    return work


def agent_env(job: CellJob, work: Path) -> dict[str, str]:
    env = {**os.environ, **job.env,
           "SM_PROMPT_FILE": str(job.cell_root / "prompt.md"),
           "SM_STREAM": str(job.cell_root / "stream.jsonl"),
           "SM_MODEL": job.contract.model,
           "SM_MAX_TURNS": str(job.contract.max_turns),
           "SM_CELL_SEED": str(job.spec.seed)}
    env.pop("SM_SKILL_DIR", None)
    if job.skill_dir is not None:
        env["SM_SKILL_DIR"] = str(work / ".claude" / "skills" / job.skill_name)
    return env


async def run_grader(job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
    """Score the cell with its suite's grader runner (eval/graders: script, expectations, judge)."""
    try:
        return await get_runner(job.suite.runner).grade(job, work)
    except Exception as err:  # a grader-side bug is a recorded cell error, never a crashed evaluation
        return None, f"{job.suite.runner} grader failed: {type(err).__name__}: {err}"


def grader_extra(cell_root: Path) -> dict:
    """What the grader itself spent on this cell (a judge's model call; 0 when cached or scripted)."""
    cost = grader_cost(cell_root)
    return {**({"grader_cost_usd": cost} if cost else {}), **grader_usage(cell_root)}


async def run_cell(job: CellJob) -> CellResult:
    started = time.monotonic()
    work = stage(job)
    stream = job.cell_root / "stream.jsonl"
    agent = await run_agent_process(
        job.agent_argv, cwd=work, env=agent_env(job, work), prompt=job.task.prompt, stream=stream,
        log_dir=job.cell_root, launcher=job.launcher, writable=[job.cell_root],
        silence_ms=job.contract.silence_ms, heartbeat_ms=job.contract.heartbeat_ms, network=job.network)
    metrics = read_stream(stream)
    tests: dict[str, float] = {}
    failure = agent.failure(metrics.has_result)
    if failure:
        status, error = ("timeout" if agent.timed_out else "agent_error"), failure
    else:
        grades, error = await run_grader(job, work)
        status = "ok" if grades is not None else "grader_error"
        tests = grades or {}
    score = sum(tests.values()) / len(tests) if status == "ok" else 0.0
    priced = usd(job.price, metrics.usage)
    result = CellResult(
        task_id=job.spec.task_id, replicate=job.spec.replicate, status=status, score=score, tests=tests,
        cost_usd=charged(priced, metrics.reported_cost_usd, agent=job.contract.agent), steps=metrics.steps,
        input_tokens=metrics.usage.input_tokens, output_tokens=metrics.usage.output_tokens,
        cache_write_tokens=metrics.usage.cache_creation_input_tokens,
        cache_read_tokens=metrics.usage.cache_read_input_tokens,
        duration_ms=int((time.monotonic() - started) * 1000), agent_subtype=metrics.subtype,
        error=error, cell_dir=str(job.cell_root), extra={**grader_extra(job.cell_root), "priced_cost_usd": priced,
                                                          "reported_cost_usd": metrics.reported_cost_usd,
                                                          "retries": metrics.retries})
    (job.cell_root / "cell.json").write_text(json.dumps({**result.__dict__}, indent=1), encoding="utf-8")
    capture_and_prune(job.cell_root, prune=job.prune, task_id=job.task.id, replicate=job.spec.replicate, prompt=job.task.prompt,
                      status=status, score=score, tests=tests, error=error, required=list(job.task.required))
    return result
