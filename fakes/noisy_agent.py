"""Zero-spend build agent as noisy as a real one (`--fake-noise realistic`): fake_agent's turns, then a
pass/fail outcome per cell, so a dry run rehearses the gate, the screen, --plan and --aa on real-agent noise.

Per task a base success probability p ~ Beta(alpha, beta), drawn from the task's identity (its prompt and
input file: a build agent is not told its task id), so it is the same in every cell and run. The skill's
quality shifts the logit of p by `lift × gain`, gain = the share of the bare→expert gap the skill's rules
close on this input (1 for every useful rule, 0 for none, < 0 when they make the output worse than bare),
measured as the share of fields equal to the expert output (the rules fakes/csv_rules.py knows; never the
suite's answers). Each cell is then one Bernoulli trial seeded by SM_CELL_SEED: a pass writes the expert
output, a fail an empty one, and the suite's own grader scores it. alpha, beta and lift come on the command
line (mutator/cli/agents.py fits them from SkillsBench's results and puts them in the agent's id). A
separate script because fake_agent.py's bytes are its id: noise off, the demo's ids and verdicts stay.
A task with no CSV (a text answer) fails as a bare agent would: its answer is made without the skill.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import sys
from pathlib import Path

if not __package__:  # run as a script: make `fakes` importable without installing the project
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fakes import fake_agent as base  # noqa: E402
from fakes.csv_rules import CANONICAL_ORDER, apply_rules, load_rule_ops, read_csv, write_csv  # noqa: E402

EXPERT_OPS = [op for op in CANONICAL_ORDER if op != "titlecase"]   # what the demo's answer keys apply
P_FLOOR = 1e-6   # a drawn p of exactly 0 or 1 has no logit; the U-shaped prior puts many tasks near both


def task_p(identity: bytes, alpha: float, beta: float) -> float:
    """The task's base success probability, a Beta(alpha, beta) draw seeded by the task's identity only."""
    seed = int.from_bytes(hashlib.sha256(b"noisy-agent task\n" + identity).digest()[:8], "big")
    return min(max(random.Random(seed).betavariate(alpha, beta), P_FLOOR), 1 - P_FLOOR)


def shifted(p: float, lift: float, gain: float) -> float:
    """p with its logit moved by lift × gain."""
    z = math.log(p / (1 - p)) + lift * gain
    return 1 / (1 + math.exp(-z)) if z > -700 else 0.0


def passes(cell_seed: str, p: float) -> bool:
    """One Bernoulli(p) trial from the cell's seed (its own stream, apart from fake_agent's fumbles)."""
    digest = hashlib.sha256(f"noisy-agent cell\n{cell_seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big")).random() < p


def agreement(rows: list[list[str]], expert: list[list[str]]) -> float:
    """Share of the expert output's fields that `rows` holds at the same place."""
    total = sum(len(row) for row in expert)
    hits = sum(1 for r, row in enumerate(expert) for c, value in enumerate(row)
               if r < len(rows) and c < len(rows[r]) and rows[r][c] == value)
    return hits / total if total else 1.0


def gain(rows: list[list[str]], ops: list[str]) -> float:
    """The share of the bare→expert gap the skill's rules close on this input (≤ 1; < 0 when worse than
    bare; 0 when bare is already expert)."""
    expert = apply_rules(rows, EXPERT_OPS)
    bare = agreement(rows, expert)
    if bare >= 1:
        return 0.0
    return (agreement(apply_rules(rows, ops), expert) - bare) / (1 - bare)


def options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="noisy fake build agent")
    parser.add_argument("--alpha", type=float, required=True)
    parser.add_argument("--beta", type=float, required=True)
    parser.add_argument("--lift", type=float, required=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = options(sys.argv[1:] if argv is None else argv)
    prompt = base.read_prompt()
    base.read_prompt = lambda: prompt      # fake_agent reads it again; stdin is spent
    env_skill = os.environ.get("SM_SKILL_DIR")
    skill_dir = Path(env_skill) if env_skill and Path(env_skill).is_dir() else None
    source, target = base.csv_files(prompt)
    try:
        rows = read_csv(Path(source))
        data = Path(source).read_bytes()
    except (OSError, UnicodeDecodeError):
        rows, data = None, b""
    p = task_p(prompt.encode() + b"\0" + data, opts.alpha, opts.beta)
    if rows is not None:
        ops = load_rule_ops(skill_dir / "rules.json") if skill_dir else []
        p = shifted(p, opts.lift, gain(rows, ops))
    passed = passes(os.environ.get("SM_CELL_SEED") or "0", p)
    if rows is None and not passed:
        os.environ.pop("SM_SKILL_DIR", None)     # a text answer fails as a bare agent answers
    code = base.main()   # fake_agent's turns and stream: the cell's cost and steps as today
    if rows is not None and Path(target).is_file():   # fake_agent wrote an output: this trial decides it
        write_csv(Path(target), apply_rules(rows, EXPERT_OPS) if passed else [])
    return code


if __name__ == "__main__":
    sys.exit(main())
