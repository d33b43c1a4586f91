"""Mine transcripts into judge-graded suites <out>/<name>-train, -val and -test, with <out>/mining.json.

The pipeline, in order: requests since --since -> secret scan (drop, or redact with --redact) -> the skill
was used -> low-signal filter -> the frozen test's sessions held out (watch) -> dedup by normalised input
hash -> the optional judge pass -> the seeded split by session -> write. mining.json holds the counts and
the hashed session ids, never a raw id or a trace's text; the suites hold only the kept (clean) tasks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from eval.cost import Price
from eval.errors import SkillMutatorError
from eval.suite import name_problem
from mutator.after.importer import write_judge_suite
from mutator.mining import secrets
from mutator.mining.judging import judge_pass
from mutator.mining.split import split_sessions
from mutator.mining.tasks import MinedTask, low_signal, to_mined
from mutator.mining.traces import Exchange, SkillMarks, read_traces

SPLITS = ("train", "val", "test")
REASONS = ("secret", "skill-not-used", "too-short", "no-outcome", "tool-noise", "held-out", "duplicate",
           "judge")


class MiningError(SkillMutatorError, ValueError):
    """The traces cannot be mined as asked; the message names the folder or flag and the fix."""


@dataclass(frozen=True)
class MineOptions:
    traces: Path
    skill_dir: Path
    out: Path
    seed: int = 0
    since: float | None = None
    redact: bool = False
    judge: str | None = None          # judge backend for the judge pass (fake | anthropic); None = no pass
    judge_model: str = "claude-haiku-4-5"
    judge_price: Price | None = None  # config.json pricing of judge_model, to report the pass's cost
    judge_budget_usd: float | None = None   # --budget-usd: no judge call starts that would pass it
    # the data dir's folder the judge's meters wait in (judging.judge_meters)
    judge_meters: Path | None = None
    # the watch: replace train/val of an earlier mining, keep its test frozen
    rebuild: bool = False


@dataclass
class Collected:
    """The eligible tasks (before dedup and the judge) and what was read and dropped on the way."""
    skill: str
    read: dict[str, int]
    dropped: Counter = field(default_factory=Counter)
    secrets: Counter = field(default_factory=Counter)
    tasks: list[MinedTask] = field(default_factory=list)


def skill_name(skill_dir: Path) -> str:
    try:
        text = (skill_dir / "SKILL.md").read_text(encoding="utf-8")
    except OSError:
        raise MiningError(f"--skill-dir {skill_dir}: no SKILL.md there; point it at the skill the traces "
                          "used") from None
    found = re.search(r"^name:\s*(\S+)\s*$", text, re.M)
    return found.group(1) if found else skill_dir.name


def parse_since(text: str | None) -> float | None:
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise MiningError(f"--since {text!r}: expected a date or time like 2026-11-01 or "
                          "2026-11-01T12:00") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def clean(exchange: Exchange, redact: bool, found: Counter) -> Exchange | None:
    """The exchange without secrets: None when it holds one (dropped), or its texts redacted."""
    if not any(secrets.findings(t) for t in [*exchange.texts, exchange.correction, exchange.answer]):
        return exchange
    found["found"] += 1
    if not redact:
        found["dropped"] += 1
        return None
    found["redacted"] += 1
    return replace(exchange, prompt=secrets.redact(exchange.prompt), answer=secrets.redact(exchange.answer),
                   correction=secrets.redact(exchange.correction), texts=[])


def collect(opts: MineOptions) -> Collected:
    """Read and filter, up to (not including) dedup: what the watch counts as eligible."""
    if not opts.traces.exists():
        raise MiningError(f"{opts.traces}: no such folder or file; point it at ~/.claude/projects (or a "
                          f"project folder, or a trace .jsonl)")
    name = skill_name(opts.skill_dir)
    reading = read_traces(opts.traces, SkillMarks(name, opts.skill_dir))
    requests = [e for e in reading.exchanges if not e.is_followup]
    recent = [e for e in requests if opts.since is None or e.at >= opts.since]
    found = Collected(name, {"files": reading.files, "sessions": len(reading.sessions),
                             "requests": len(recent), "older_than_since": len(requests) - len(recent),
                             "unreadable_lines": reading.unreadable_lines})
    for exchange in recent:
        kept = clean(exchange, opts.redact, found.secrets)
        if kept is None:
            found.dropped["secret"] += 1
        elif not kept.skill_used:
            found.dropped["skill-not-used"] += 1
        elif why := low_signal(kept):
            found.dropped[why] += 1
        else:
            found.tasks.append(to_mined(kept))
    return found


def frozen_test(out: Path) -> dict | None:
    """The test split an earlier mining wrote into `out` (the watch keeps it), or None."""
    try:
        record = json.loads((out / "mining.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    test = (record.get("splits") or {}).get("test") or {}
    if test.get("tasks") and (out / f"{out.name}-test" / "tasks.jsonl").is_file():
        return {"sessions": set(test.get("sessions") or []), "inputs": set(record.get("test_inputs") or []),
                "task_ids": list(test.get("task_ids") or []), "record": test}
    return None


def check_out(opts: MineOptions) -> None:
    problem = name_problem(opts.out.name)
    if problem:
        raise MiningError(f"--out {opts.out}: the folder name {opts.out.name!r} names the suites and is "
                          f"invalid: {problem}")
    if opts.out.exists() and any(opts.out.iterdir()):
        if not (opts.rebuild and (opts.out / "mining.json").is_file()):
            raise MiningError(f"--out {opts.out}: already exists and is not empty; pick a new folder or "
                              "remove it")


def mine(opts: MineOptions) -> dict:
    """Mine, split and write; returns the mining record (also written to <out>/mining.json)."""
    check_out(opts)
    found = collect(opts)
    if not found.read["sessions"]:
        raise MiningError(f"--mine-traces {opts.traces}: no agent session found there ({found.read['files']} "
                          f"transcript file(s) read); point it at the folder holding the transcripts, e.g. "
                          f"~/.claude/projects or one project's folder in it")
    frozen = frozen_test(opts.out) if opts.rebuild else None
    tasks, seen = [], set(frozen["inputs"]) if frozen else set()
    for task in sorted(found.tasks, key=lambda t: (t.at, t.session, t.id)):
        if frozen and task.session in frozen["sessions"]:
            found.dropped["held-out"] += 1
        elif task.input_hash in seen:
            found.dropped["duplicate"] += 1
        else:
            seen.add(task.input_hash)
            tasks.append(task)
    judged = None
    if opts.judge:
        tasks, judged = judge_pass(tasks, backend=opts.judge, model=opts.judge_model, price=opts.judge_price,
                                   budget_usd=opts.judge_budget_usd, meters=opts.judge_meters)
        found.dropped["judge"] += len(judged.dropped)
    side = split_sessions([t.session for t in tasks], seed=opts.seed, with_test=frozen is None)
    by_split = {s: [t for t in tasks if side[t.session] == s] for s in SPLITS}
    write(opts, found.skill, by_split, keep_test=frozen is not None)
    splits = {s: {"tasks": len(by_split[s]), "sessions": sorted({t.session for t in by_split[s]}),
                  "task_ids": [t.id for t in by_split[s]]} for s in SPLITS}
    if frozen:
        splits["test"] = frozen["record"]
    record = {
        "skill": found.skill, "seed": opts.seed,
        "since": datetime.fromtimestamp(opts.since, UTC).isoformat() if opts.since is not None else None,
        "redact": opts.redact, "read": found.read, "kept": sum(len(v) for v in by_split.values()),
        "dropped": {r: found.dropped[r] for r in REASONS if found.dropped[r]},
        "secrets": {k: found.secrets[k] for k in ("found", "dropped", "redacted")},
        "judge": None if judged is None else {"backend": judged.backend, "model": judged.model,
                                              "calls": judged.calls, "dropped": len(judged.dropped),
                                              "cost_usd": judged.cost_usd,
                                              "unjudged_over_budget": len(judged.unjudged)},
        "splits": splits, "test_frozen": frozen is not None,
        "test_inputs": sorted(frozen["inputs"]) if frozen else sorted(t.input_hash for t in by_split["test"]),
        "newest_request": max((t.at for t in found.tasks), default=None),
    }
    (opts.out / "mining.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def write(opts: MineOptions, skill: str, by_split: dict[str, list[MinedTask]], *, keep_test: bool) -> None:
    """Each split's suite built beside its place and swapped in, so a reader never sees half a suite."""
    out = opts.out
    out.mkdir(parents=True, exist_ok=True)
    build = out / f".build-{os.getpid()}"
    shutil.rmtree(build, ignore_errors=True)
    sessions = len({t.session for v in by_split.values() for t in v})
    origin = (f"Mined from agent transcripts in which the skill `{skill}` was used ({sessions} sessions, "
              f"split by session with seed {opts.seed}; counts in ../mining.json).")
    try:
        for split in SPLITS:
            if split == "test" and keep_test:
                continue
            target = out / f"{out.name}-{split}"
            if not by_split[split]:
                shutil.rmtree(target, ignore_errors=True)
                continue
            fresh = build / target.name
            write_judge_suite(fresh, split, [(t.to_task(), []) for t in by_split[split]], origin)
            if target.exists():
                old = build / f"{target.name}.old"
                target.rename(old)
            fresh.rename(target)
    finally:
        shutil.rmtree(build, ignore_errors=True)


def render(record: dict, out: Path) -> str:
    read, dropped = record["read"], record["dropped"]
    lines = [f"Mined traces for skill {record['skill']}: {read['files']} file(s), {read['sessions']} "
             f"session(s), {read['requests']} request(s) read" + (f" ({read['older_than_since']} older than "
                                                                  "--since left out)"
                                                      if read["older_than_since"] else "")
             + (f"; {read['unreadable_lines']} unreadable line(s) skipped"
                if read["unreadable_lines"] else ""),
             f"  kept {record['kept']}",
             "  dropped: " + (", ".join(f"{reason} {n}" for reason, n in dropped.items()) or "none"),
             f"  secrets: {record['secrets']['found']} request(s) held one: {record['secrets']['dropped']} "
             f"dropped, {record['secrets']['redacted']} redacted"]
    if record["judge"]:
        j = record["judge"]
        fake = " (a fake judge: nothing real spent)" if j["backend"] == "fake" else ""
        lines.append(f"  judge pass ({j['backend']}, {j['model']}): {j['calls']} call(s) priced "
                     f"${j['cost_usd']:.4f}{fake}, {j['dropped']} dropped")
    for split in SPLITS:
        part = record["splits"][split]
        where = out / f"{out.name}-{split}"
        lines.append(f"  {split:5} {part['tasks']:3} task(s) from {len(part['sessions'])} session(s)"
                     + (f"  {where}" if part["tasks"] else "") + ("  (frozen)" if split == "test" and
                                                                 record["test_frozen"] else ""))
    return "\n".join(lines)
