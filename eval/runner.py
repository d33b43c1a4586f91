"""Run one cell: stage a fresh dir, run the build agent through the one agent
call (eval/agent_call.py), grade.

The grader runs only after the agent's whole process group is gone, outside the agent's sandbox,
and never sees the skill: it gets the agent's working dir and the task id. Every failure (agent
error, watchdog timeout or cap, grader crash/hang/garbage, API outage, harness fault) becomes a recorded
status, never an exception.
"""

from __future__ import annotations

import asyncio
import errno
import re
import shutil
import time
from dataclasses import replace
from pathlib import Path

from eval import reaper
from eval.agent_call import STREAM_NAME, AgentCall, AgentRun, Cost, call, read_call, stage_cell
from eval.agents.meter import agent_meter, judge_meter
from eval.cost import Usage
from eval.graders import get_runner
from eval.graders.judge_runner import grader_cost, grader_usage
from eval.jobs import CellJob, CellResult
from eval.kept import RESTORE, put_back, regradable, slim
from eval.redact import redact, redact_cell
from eval.skill_set import installed_at
from eval.skill_use import parse_skill_use
from eval.stream_metrics import StreamMetrics
from eval.trajectory import capture_and_prune, stream_events
from sandbox import Launcher


def call_of(job: CellJob, work: Path, launcher: Launcher | None = None) -> AgentCall:
    """The build agent's call for this cell (eval/agent_call.py): the cell dir is its home, work/ its cwd, and
    its model API traffic is metered beside the cell dir (eval/agents/meter.py::agent_meter). `launcher`: the
    cell's own (a Harbor task's container), else the evaluation's."""
    run = job.settings
    return AgentCall(
        argv=run.agent_argv, agent=job.contract.agent, model=job.contract.model,
        max_turns=job.contract.max_turns, price=job.price, prompt=job.task.prompt, cwd=work,
        home=job.cell_root, launcher=launcher or run.launcher,
        silence_ms=job.contract.silence_ms, heartbeat_ms=job.contract.heartbeat_ms,
        skill_dir=installed_at(work, job.skill_dir, job.skill_name) if job.skill_dir is not None else None,
        writable=(job.cell_root,), network=run.network, wall_ms=run.cell_timeout_ms,
        max_output_bytes=run.max_output_bytes, seed=job.spec.seed, env=run.env,
        meter=agent_meter(job.cell_root))


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
            said_first = metrics.error_text or failure
            detail = said_first.strip().splitlines()[0][:300] if said_first else "model API error"
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
    for meter in (agent_meter(job.cell_root), judge_meter(job.cell_root)):
        meter.unlink(missing_ok=True)  # an earlier try's meter was settled on its cell row before this one
    work = stage_cell(job.cell_root, fixtures=job.suite.fixture_dir(job.task.id), inputs=job.task.inputs,
                      skill_dir=job.skill_dir, skill_name=job.skill_name, others=job.settings.with_skills)
    container = None
    if job.suite.runner == "harbor":
        # the task's image: built, its WORKDIR staged; a broken one is no verdict
        from eval.graders.harbor_runner import prepare_cell
        problem, container = await prepare_cell(job, work)
        if problem:
            return infra_result(job, problem, started)
    tests: dict[str, float] = {}
    try:
        done = await call(call_of(job, work, container))
        (job.cell_root / RESTORE).unlink(missing_ok=True)   # the harness's own note, never one the agent left
        status, error = classify(done.run, done.metrics)
        if not status:
            shutil.rmtree(work / ".claude" / "skills", ignore_errors=True)  # the grader never sees the skill
            # a Harbor trial's verifier runs in the agent's own container (eval/graders/harbor_runner.py)
            grades, error = await (run_grader(job, work) if container is None or not container.trial.started
                                   else grade_in_trial(job, work, container))
            status = "ok" if grades is not None else "grader_error"
            tests = grades or {}
    finally:
        if container is not None:
            await asyncio.to_thread(container.close)   # what the cell keeps was copied out of it
            reaper.unregister_container(container.name)
    return _finish(job, status=status, tests=tests, metrics=done.metrics, cost=done.cost, started=started,
                   error=error)


async def grade_in_trial(job: CellJob, work: Path, container) -> tuple[dict[str, float] | None, str]:
    from eval.graders.harbor_runner import grade_in_trial as grade
    try:
        return await grade(job, work, container)
    except Exception as err:  # as run_grader: a grader-side bug is a recorded cell error
        return None, f"harbor grader failed: {type(err).__name__}: {err}"


async def regrade_cell(job: CellJob) -> CellResult | None:
    """Grade again an agent's finished run: a grader_error cell in place, or (`job.reuse`) the kept run of
    another evaluation with the same agent key, copied into this cell's dir. None when there is nothing to
    grade. Grading spends nothing on the agent: its stream is read as it was."""
    source = job.reuse or job.cell_root
    if not regradable(source):
        return None
    work = put_back(source, job.cell_root, job.suite.fixture_dir(job.task.id), job.task.inputs)
    started = time.monotonic()
    for spent in (judge_meter(job.cell_root), job.cell_root / "judge.spend.json"):
        spent.unlink(missing_ok=True)  # the last grading's calls are on the cell row already
    # a cell re-graded in place keeps its agent's metered figures; one taken over from another cell has no
    # meter here and keeps its kept stream's (either way the agent is never charged again:
    # mutator/store/cache.py)
    metrics, cost = read_call(job.cell_root / "stream.jsonl", job.price, agent=job.contract.agent,
                              meter=agent_meter(job.cell_root))
    grades, error = await run_grader(job, work)
    status = "ok" if grades is not None else "grader_error"
    result = _finish(job, status=status, tests=grades or {}, metrics=metrics, cost=cost, started=started,
                     error=error)
    return replace(result, extra={**result.extra, "regraded": True})


def infra_result(job: CellJob, error: str, started: float) -> CellResult:
    """A cell the infrastructure failed (a harness fault, a lost worker): nobody's verdict on the skill."""
    return _result(job, status="infra_error", tests={}, metrics=None, started=started,
                   error=redact(error) or error)


NOTHING = Cost()   # a cell the harness failed before its agent's stream: no call to charge


def _result(job: CellJob, *, status: str, tests: dict[str, float], metrics: StreamMetrics | None,
            started: float, error: str, cost: Cost = NOTHING, events: list[dict] | None = None) -> CellResult:
    """The cell's record; `cost` is its agent call's (eval/agent_call.py::read_call), nothing before a stream;
    `events`: the stream's, when the caller has read them already."""
    usage = metrics.usage if metrics else Usage()   # a metered call's: what was served (read_call)
    stream = job.cell_root / STREAM_NAME
    skill_use = parse_skill_use(stream, job.skill_name, events=events).to_json() \
        if metrics is not None and job.skill_dir is not None else None
    score = sum(tests.values()) / len(tests) if status == "ok" and tests else 0.0
    return CellResult(
        task_id=job.spec.task_id, replicate=job.spec.replicate, status=status, score=score, tests=tests,
        cost_usd=cost.usd, steps=metrics.steps if metrics else 0,
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
        cache_write_tokens=usage.cache_creation_input_tokens, cache_read_tokens=usage.cache_read_input_tokens,
        duration_ms=int((time.monotonic() - started) * 1000),
        agent_subtype=metrics.subtype if metrics else "", error=error, cell_dir=str(job.cell_root),
        extra={**grader_extra(job.cell_root), "priced_cost_usd": cost.priced_usd,
               "reported_cost_usd": cost.reported_usd,
               "api_retries": metrics.retries if metrics else 0}, skill_use=skill_use)


def _finish(job: CellJob, *, status: str, tests: dict[str, float], metrics: StreamMetrics, cost: Cost,
            started: float, error: str) -> CellResult:
    # secrets never stored: stream, stderr, outputs, judge notes, error
    error = redact_cell(job.cell_root, error)
    # read once, redacted, for the skill use and the trajectory
    events = stream_events(job.cell_root / STREAM_NAME)
    result = _result(job, status=status, tests=tests, metrics=metrics, cost=cost, started=started,
                     error=error, events=events)
    result.write_record(job.cell_root)
    # a grader_error cell keeps its working dir: it is re-graded on resume, with no agent re-run; a graded
    # one keeps its agent's outputs (eval/kept.py), so a changed grader re-grades it
    capture_and_prune(job.cell_root, prune=job.settings.prune and status not in ("grader_error", "ok"),
                      task_id=job.task.id,
                      replicate=job.spec.replicate, prompt=job.task.prompt, status=status, score=result.score,
                      tests=tests, error=error, required=list(job.task.required), skill_use=result.skill_use,
                      events=events)
    if job.settings.prune and status == "ok":
        slim(job.cell_root, job.suite.fixture_dir(job.task.id), job.task.inputs)
    return result
