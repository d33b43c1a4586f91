"""The `judge` runner: a rubric-scoring model call per cell, cached by its exact input and costed.

It reads the task's required outputs from the cell's working dir and an outline of the agent's tool
calls from stream.jsonl (calls touching the skill's folder left out), never the skill itself. The reply
is cached under `<evals>/judge-cache/` (or $SM_JUDGE_CACHE) keyed by backend, model and prompt, so a
re-run or a resumed evaluation asks again for nothing: an unusable reply is cached too (its cell stays a
grader_error, re-graded for free), so a resume never re-pays a judge that failed. Fake in dry runs
(SM_JUDGE=fake|anthropic). A real judge's calls are metered beside the cell (eval/agents/meter.py); what
they cost, a failed call's included, is written to `judge.spend.json` whether or not the reply was usable.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from eval.agents.meter import judge_meter, read_meter
from eval.cost import Price, Usage, parse_pricing, price_for, usd
from eval.graders.judge import (
    STEP_CLIP,
    SYSTEM,
    Attempt,
    JudgeError,
    parse_reply,
    rubric_from_options,
    score,
    user_message,
)
from eval.graders.judge_backends import make_backend
from eval.stream_metrics import decode_line

if TYPE_CHECKING:
    from eval.jobs import CellJob

SKILL_MARK = ".claude/skills"
CONFIG = Path(__file__).resolve().parents[2] / "config.json"


def read_attempt(job: CellJob, work: Path) -> Attempt:
    outputs = []
    for rel in job.task.required:
        path = work / rel
        outputs.append((rel, path.read_text(encoding="utf-8",
                                            errors="replace") if path.is_file() else "(missing)"))
    if not job.task.required:   # no declared output (an imported eval): judge the files the agent created
        outputs = created_files(work, set(job.task.inputs))
    final, steps = "", []
    stream = job.cell_root / "stream.jsonl"
    lines = stream.read_text(encoding="utf-8", errors="replace").splitlines() if stream.is_file() else []
    for line in lines:
        try:
            event = decode_line(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "result":
            final = str(event.get("result") or final)
        content = (event.get("message") or {}).get("content") if event.get("type") == "assistant" else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                args = json.dumps(block.get("input"), ensure_ascii=False)
                if SKILL_MARK not in args:          # the judge must not see the skill, even by its path
                    steps.append(f"{block.get('name')} {args[:STEP_CLIP]}")
            elif block.get("type") == "text" and block.get("text", "").strip():
                final = block["text"]
    return Attempt(job.task.prompt, job.task.expectations, tuple(outputs), final, tuple(steps))


def created_files(work: Path, inputs: set[str], limit: int = 10) -> list[tuple[str, str]]:
    found = []
    for path in sorted(work.rglob("*")):
        rel = path.relative_to(work).as_posix()
        if path.is_file() and rel not in inputs and not rel.startswith(".claude/") and len(found) < limit:
            found.append((rel, path.read_text(encoding="utf-8", errors="replace")))
    return found


def judge_price(job: CellJob, model: str) -> Price:
    if model == job.contract.model:
        return job.price
    return price_for(parse_pricing(json.loads(CONFIG.read_text(encoding="utf-8")).get("pricing", {})), model)


class JudgeRunner:
    async def grade(self, job: CellJob, work: Path) -> tuple[dict[str, float] | None, str]:
        env = {**os.environ, **job.settings.env}
        fallback = "fake" if job.contract.agent.startswith("fake") else "anthropic"
        backend_name = env.get("SM_JUDGE") or fallback
        model = str(job.suite.option("judge_model") or env.get("SM_JUDGE_MODEL") or job.contract.model)
        try:
            rubric = rubric_from_options(dict(job.suite.meta))
            backend = make_backend(backend_name)
            price = judge_price(job, model)
        except (JudgeError, ValueError) as err:
            return None, f"judge: {err}"
        attempt = read_attempt(job, work)
        cache_dir = Path(env.get("SM_JUDGE_CACHE") or job.cell_root.parent.parent / "judge-cache")
        # a fresh-salt evaluation (a health check, a confirmation) asks the judge afresh: a re-check that read
        # cached judgements would measure nothing
        material = [backend.id, model, SYSTEM,
                    user_message(attempt)] + ([job.contract.salt] if job.contract.salt else [])
        key = hashlib.sha256(json.dumps(material).encode()).hexdigest()[:32]
        cached = cache_dir / f"{key}.json"
        hit = cached.is_file()
        if hit:
            record = json.loads(cached.read_text(encoding="utf-8"))
        else:
            meter = judge_meter(job.cell_root) if backend.id.startswith("anthropic") else None
            try:
                reply = await backend.call(model, attempt, meter=meter)
            except Exception as err:  # API errors outlasting the SDK's retries: a recorded grader error
                return None, f"judge call failed ({backend.id}, {model}): {type(err).__name__}: {err}"
            finally:
                if meter is not None:
                    settle_meter(job, model, price)
            usage = metered_usage(job) or reply.usage
            record = {"text": reply.text, "usage": usage.__dict__, "cost_usd": usd(price, usage),
                      "model": model, "backend": backend.id}
        if not hit:   # a garbled reply too: a resume or a re-grade never pays for the same answer again
            store(cached, record)
        try:
            verdict = parse_reply(record["text"])
        except JudgeError as err:
            return None, (f"{err} (the judge's reply is cached in {cached}; delete it to ask again)" if hit
                          else str(err))
        tests, detail = score(verdict, rubric, attempt.words())
        detail.update(model=model, backend=backend.id, cached=hit, cache_key=key, usage=record["usage"],
                      cost_usd=0.0 if hit else record["cost_usd"], call_cost_usd=record["cost_usd"])
        (job.cell_root / "grade.json").write_text(json.dumps({"tests": tests, "judge": detail}, indent=1,
                                                             ensure_ascii=False), encoding="utf-8")
        (job.cell_root / "judge.md").write_text(feedback_md(detail), encoding="utf-8")
        return tests, ""


def metered_usage(job: CellJob) -> Usage | None:
    served = read_meter(judge_meter(job.cell_root))
    return Usage(**served.total()) if served is not None else None


def settle_meter(job: CellJob, model: str, price: Price) -> None:
    """judge.spend.json: what this cell's judge calls were served so far, priced (each at its own model)."""
    served = read_meter(judge_meter(job.cell_root))
    if served is None:
        return
    cost = sum(usd(price if not name or name.startswith(model) else judge_price(job, name), Usage(**counts))
               for name, counts in served.by_model.items())
    (job.cell_root / "judge.spend.json").write_text(json.dumps(
        {"cost_usd": cost, "usage": served.total(), "responses": served.responses}), encoding="utf-8")


def store(cached: Path, record: dict) -> None:
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_name(f"{cached.stem}.{os.getpid()}.{id(record)}.tmp")
    tmp.write_text(json.dumps(record), encoding="utf-8")
    tmp.replace(cached)   # atomic: concurrent cells with the same key both write the same reply


def feedback_md(detail: dict) -> str:
    lines = [f"# Judge ({detail['model']}): rubric {detail['weighted']:.3f} x length "
             f"{detail['length_factor']:.2f}",
             "", " · ".join(f"{k} {v:g}/10" for k, v in detail["dimensions"].items()), "", "## Expectations"]
    lines += [f"- [{'x' if e.get('passed') else ' '}] {e.get('text', '')} — {e.get('evidence', '')}"
              for e in detail["expectations"]] or ["- (none)"]
    return "\n".join(lines + ["", "## Feedback", detail["feedback"] or "(none)", ""])


def grader_cost(cell_root: Path) -> float:
    """USD a grader spent on this cell (0 for a cached judge reply or a script grader): a real judge's
    metered calls, failed ones included, else the fake judge's priced figure."""
    try:
        return float(json.loads((cell_root / "judge.spend.json").read_text(encoding="utf-8"))["cost_usd"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        return float(json.loads((cell_root / "grade.json").read_text(encoding="utf-8"))["judge"]["cost_usd"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0




def grader_usage(cell_root: Path) -> dict[str, int]:
    """Tokens a grader's own model calls used on this cell (none for a cached judge reply or a script)."""
    try:
        usage = json.loads((cell_root / "judge.spend.json").read_text(encoding="utf-8"))["usage"]
        return {"grader_input_tokens": int(usage.get("input_tokens") or 0),
                "grader_output_tokens": int(usage.get("output_tokens") or 0)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    try:
        judge = json.loads((cell_root / "grade.json").read_text(encoding="utf-8"))["judge"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if judge.get("cached"):
        return {}
    usage = judge.get("usage") or {}
    return {"grader_input_tokens": int(usage.get("input_tokens") or 0),
            "grader_output_tokens": int(usage.get("output_tokens") or 0)}
