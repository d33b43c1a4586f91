"""Run one cell: stage a fresh dir, spawn the build agent through the launcher, then the grader.

The grader runs only after the agent's whole process group is gone, outside the agent's sandbox,
and never sees the skill: it gets the agent's working dir and the task id. Every failure (agent
error, watchdog timeout or cap, grader crash/hang/garbage, API outage, harness fault) becomes a recorded
status, never an exception.
"""

from __future__ import annotations

import errno
import json
import re
import shutil
import time
from dataclasses import replace
from pathlib import Path

from eval.agents.meter import agent_meter, judge_meter, read_meter
from eval.cost import Usage, charged, usd
from eval.environment import allowed_env
from eval.graders import get_runner
from eval.graders.judge_runner import grader_cost, grader_usage
from eval.jobs import CellJob, CellResult
from eval.process import AgentRun, run_agent_process
from eval.redact import redact, redact_cell
from eval.snapshot import copy_tree
from eval.stream_metrics import StreamMetrics, read_stream
from eval.trajectory import capture_and_prune


def stage(job: CellJob) -> Path:
    """A fresh cell dir: work/ holds the inputs and the skill copy; prompt and logs sit beside it."""
    if job.cell_root.exists():
        shutil.rmtree(job.cell_root)  # left by a crashed run: an unfinished cell starts over
    for meter in (agent_meter(job.cell_root), judge_meter(job.cell_root)):
        meter.unlink(missing_ok=True)  # an earlier try's meter was settled on its cell row before this one
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
    """The allow-listed environment (eval/environment.py): never the harness's keys; HOME is the cell."""
    env = allowed_env(home=job.cell_root, argv=job.agent_argv, extra={
        **job.env, "SM_PROMPT_FILE": str(job.cell_root / "prompt.md"),
        "SM_STREAM": str(job.cell_root / "stream.jsonl"), "SM_MODEL": job.contract.model,
        "SM_MAX_TURNS": str(job.contract.max_turns), "SM_CELL_SEED": str(job.spec.seed)})
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


# What an agent reports when the model API, not the skill, failed it: our backends' `error_api` result
# subtype, Claude Code's "API Error: 5xx/429" result text, the SDK's exception names in stderr.
API_ERROR_SUBTYPE = "error_api"
INFRA_TEXT = re.compile(
    r"API Error: (?:5\d\d|429)|overloaded_error|rate_limit_error|APIConnectionError|APITimeoutError|"
    r"InternalServerError|RateLimitError|OverloadedError|ServiceUnavailable|Connection error|"
    r"ECONNREFUSED|ECONNRESET|ETIMEDOUT|API error 5\d\d|API error 429")


def classify(agent: AgentRun, metrics: StreamMetrics) -> tuple[str, str]:
    """(status, error) of a finished agent process; ("", "") when the agent finished and is to be graded."""
    if metrics.invalid:
        return "agent_error", metrics.invalid
    failure = agent.failure(metrics.has_result)
    if agent.timed_out or agent.overflow:
        return ("timeout" if agent.timed_out else "agent_error"), failure
    if failure or metrics.is_error:
        said = metrics.error_text + ("\n" + agent.stderr_tail(2000) if failure else "")
        if metrics.subtype == API_ERROR_SUBTYPE or INFRA_TEXT.search(said):
            detail = (metrics.error_text or failure).strip().splitlines()[0][:300] if (metrics.error_text or failure) \
                else "model API error"
            return "infra_error", f"infrastructure (the model API, not the skill): {detail}"
    if failure:
        return "agent_error", failure
    return "", ""


async def run_cell(job: CellJob) -> CellResult:
    """Stage, run the agent, grade; a harness fault (disk, launcher, a bug) is an infra_error cell."""
    started = time.monotonic()
    try:
        return await _run_cell(job, started)
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise   # a full disk is the run's to stop (status stopped, the reason), not one cell's failure
        return _result(job, status="infra_error", tests={}, metrics=None, started=started,
                       error=redact(f"harness fault: {type(err).__name__}: {err}") or "harness fault")
    except Exception as err:
        return _result(job, status="infra_error", tests={}, metrics=None, started=started,
                       error=redact(f"harness fault: {type(err).__name__}: {err}") or "harness fault")


async def _run_cell(job: CellJob, started: float) -> CellResult:
    work = stage(job)
    stream = job.cell_root / "stream.jsonl"
    agent = await run_agent_process(
        job.agent_argv, cwd=work, env=agent_env(job, work), prompt=job.task.prompt, stream=stream,
        log_dir=job.cell_root, launcher=job.launcher, writable=[job.cell_root],
        silence_ms=job.contract.silence_ms, heartbeat_ms=job.contract.heartbeat_ms, network=job.network,
        wall_ms=job.cell_timeout_ms, max_output_bytes=job.max_output_bytes, meter=agent_meter(job.cell_root))
    metrics = read_stream(stream)
    status, error = classify(agent, metrics)
    tests: dict[str, float] = {}
    if not status:
        shutil.rmtree(work / ".claude" / "skills", ignore_errors=True)  # the grader never sees the skill
        grades, error = await run_grader(job, work)
        status = "ok" if grades is not None else "grader_error"
        tests = grades or {}
    return _finish(job, status=status, tests=tests, metrics=metrics, started=started, error=error)


async def regrade_cell(job: CellJob) -> CellResult | None:
    """Grade again a grader_error cell whose agent finished (its working dir is kept for this); None when
    there is nothing to grade. Grading spends nothing on the agent: its stream is read as it was."""
    work = job.cell_root / "work"
    if not work.is_dir() or not (job.cell_root / "stream.jsonl").is_file():
        return None
    started = time.monotonic()
    for spent in (judge_meter(job.cell_root), job.cell_root / "judge.spend.json"):
        spent.unlink(missing_ok=True)  # the last grading's calls are on the cell row already
    metrics = read_stream(job.cell_root / "stream.jsonl")
    grades, error = await run_grader(job, work)
    status = "ok" if grades is not None else "grader_error"
    result = _finish(job, status=status, tests=grades or {}, metrics=metrics, started=started, error=error)
    return replace(result, extra={**result.extra, "regraded": True})


def infra_result(job: CellJob, error: str, started: float) -> CellResult:
    """A cell the infrastructure failed (a harness fault, a lost worker): nobody's verdict on the skill."""
    return _result(job, status="infra_error", tests={}, metrics=None, started=started, error=redact(error) or error)


def _result(job: CellJob, *, status: str, tests: dict[str, float], metrics: StreamMetrics | None,
            started: float, error: str) -> CellResult:
    usage = metrics.usage if metrics else Usage()
    served = read_meter(agent_meter(job.cell_root))
    if served is not None:   # the API's traffic passed the metering proxy: what was served, cut streams included
        usage = Usage(**served.total())
    score = sum(tests.values()) / len(tests) if status == "ok" and tests else 0.0
    priced = usd(job.price, usage)
    # an agent's own reported cost counts only from a stream that keeps the contract (never a negative cost)
    reported = metrics.reported_cost_usd if metrics and not metrics.invalid else 0.0
    cost = priced if served is not None else charged(priced, reported, agent=job.contract.agent)
    return CellResult(
        task_id=job.spec.task_id, replicate=job.spec.replicate, status=status, score=score, tests=tests,
        cost_usd=cost, steps=metrics.steps if metrics else 0,
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
        cache_write_tokens=usage.cache_creation_input_tokens, cache_read_tokens=usage.cache_read_input_tokens,
        duration_ms=int((time.monotonic() - started) * 1000), agent_subtype=metrics.subtype if metrics else "",
        error=error, cell_dir=str(job.cell_root),
        extra={**grader_extra(job.cell_root), "priced_cost_usd": priced, "reported_cost_usd": reported,
               "api_retries": metrics.retries if metrics else 0})


def _finish(job: CellJob, *, status: str, tests: dict[str, float], metrics: StreamMetrics, started: float,
            error: str) -> CellResult:
    error = redact_cell(job.cell_root, error)  # secrets never stored: stream, stderr, outputs, judge notes, error
    result = _result(job, status=status, tests=tests, metrics=metrics, started=started, error=error)
    (job.cell_root / "cell.json").write_text(json.dumps({**result.__dict__}, indent=1), encoding="utf-8")
    # a grader_error cell keeps its working dir: it is re-graded on resume, with no agent re-run
    capture_and_prune(job.cell_root, prune=job.prune and status != "grader_error", task_id=job.task.id,
                      replicate=job.spec.replicate, prompt=job.task.prompt, status=status, score=result.score,
                      tests=tests, error=error, required=list(job.task.required))
    return result
