"""Render the mutator's briefing.md from data (no DB access here; the loop passes rows in).

Val figures appear only as aggregates (Δcomposite split into Δeval/Δcost/Δsteps): never which
val tasks moved. The test suite never appears.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

LAST_ATTEMPTS = 5   # the briefing's table of attempts: the last ones (the ledger holds every one)


@dataclass(frozen=True)
class BriefingInput:
    round: int
    sibling: int
    skill_name: str
    formula: str
    gate: str
    incumbent: dict            # eval, cost, steps, composite on val
    train_tasks: Sequence[dict]  # per train task: task_id, eval, cost, steps, composite, failing tests
    attempts: Sequence[dict]   # recent attempts: round, verdict, summary, delta, delta_eval/cost/steps
    objective: str = ""        # set for later siblings of a branching round
    # branching: this round's earlier implementations (sibling, summary, diff)
    siblings: Sequence[dict] = ()
    target_tasks: Sequence[str] = ()   # pareto: train tasks the parent loses
    meta_skill: str = ""               # cross-round lessons distilled from the whole attempt log
    # the critic's size caps and the room the parent leaves (critic.caps_text)
    caps: str = ""
    # how the parent's skill was used: train per file, val as aggregates only
    skill_use: Sequence[str] = ()
    set_members: Sequence[str] = ()    # a skill set's skills (./skill/skills/<name>/); () for one skill


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def render(data: BriefingInput) -> str:
    what = (f"ONE of the skills of the skill set `{data.skill_name}` in ./skill/skills/ "
            f"({', '.join(f'`{m}`' for m in data.set_members)}: installed together, every one is read by the "
            "agent; edit one skill per candidate, never add or remove one)" if data.set_members
            else f"the skill `{data.skill_name}` in ./skill/")
    lines = [f"# Briefing — round {data.round}, attempt {data.sibling + 1}", "",
             "## Objective",
             f"Make ONE change to {what} that raises its composite score "
             "on unseen tasks of the same kind. Return result.json with a one-line summary and your "
             "reasoning.", ""]
    if data.objective:
        lines += ["## This round's objective (set by the first attempt)",
                  data.objective, "Implement the SAME objective differently from the earlier attempts.", ""]
        for earlier in data.siblings:
            lines += [f"### Attempt {earlier['sibling'] + 1} implemented it as: {earlier['summary'] or '—'}",
                      "```diff", earlier.get("diff", "")[:2000].rstrip("\n"), "```", ""]
    if data.target_tasks:
        lines += ["## Tasks to target",
                  f"Your parent trails other candidates on these train tasks: "
                  f"{', '.join(f'`{t}`' for t in data.target_tasks)}. Aim this change at them.", ""]
    if data.meta_skill:
        lines += ["## Lessons so far (meta skill)", data.meta_skill.strip(), ""]
    if data.caps:
        lines += ["## Size caps (the critic rejects a candidate past them before it is evaluated)",
                  data.caps, ""]
    lines += ["## How candidates are scored", data.formula, "", "## Gate", data.gate, "",
              "## Your parent (validation aggregates; the incumbent unless a pool or front member was "
              "picked)",
              "| eval | cost USD/cell | steps/cell | composite |", "|---|---|---|---|",
              f"| {data.incumbent.get('eval', 0):.3f} | {data.incumbent.get('cost', 0):.5f} | "
              f"{data.incumbent.get('steps', 0):.2f} | {data.incumbent.get('composite', 0):.3f} |", ""]
    if data.train_tasks:
        lines += ["## Your parent on train tasks (worst composite first)",
                  "| task | eval | cost | steps | composite | skill use | failing tests |",
                  "|---|---|---|---|---|---|---|"]
        # failing tests stay the last column
        for task in sorted(data.train_tasks, key=lambda t: t["composite"]):
            lines.append(f"| {task['task_id']} | {task['eval']:.3f} | {task['cost']:.5f} | "
                         f"{task['steps']:.1f} | {task['composite']:.3f} | {task.get('skill_use') or '—'} | "
                         f"{', '.join(task.get('failing', [])) or '—'} |")
        lines.append("")
    if data.skill_use:
        lines += ["## How your parent's skill was used (from the build agents' own streams)",
                  *data.skill_use, ""]
    lines += ["## Last attempts (val: aggregates only; train: vs the attempt's parent)",
              "| round | verdict | val Δcomposite | Δeval | Δcost | Δsteps | train Δcomposite | summary |",
              "|---|---|---|---|---|---|---|---|"]
    for attempt in list(data.attempts)[-LAST_ATTEMPTS:]:
        deltas = " | ".join(_signed(attempt.get(key))
                            for key in ("delta", "delta_eval", "delta_cost", "delta_steps", "train_delta"))
        skills = f"(skill {attempt['skills']}) " if attempt.get("skills") else ""
        lines.append(f"| {attempt['round']} | {attempt['verdict']} | {deltas} | "
                     f"{skills}{attempt.get('summary') or '—'} |")
    if not data.attempts:
        lines.append("| — | — | — | — | — | — | — | no attempts yet |")
    lines += ["", "## Read-only material beside ./skill/",
              "- `evidence/current/`: every train rollout of your parent (trajectory, grader scores, output)",
              "- `evidence/attempts/round-K/`: train rollouts of earlier attempts that were evaluated on "
              "train",
              "- `history/ledger.md` and `history/round-K.diff`: every attempt of this run and its real diff "
              "— do not re-try a rejected change under another name",
              "- `tasks/`: the train task statements; `solve/`: graded demonstrations (when present)"]
    return "\n".join(lines) + "\n"
