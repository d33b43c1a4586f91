"""Briefing and ledger rendering are pure functions of the rows they are given."""

from __future__ import annotations

from mutator.briefing.evidence import LedgerRow, render_ledger
from mutator.briefing.render import BriefingInput, render


def attempt(round_no: int, verdict: str = "KEEP", delta: float | None = 0.01, train: float | None = None) -> dict:
    return {"round": round_no, "verdict": verdict, "summary": f"change {round_no}", "delta": delta,
            "delta_eval": delta, "delta_cost": 0.0 if delta is not None else None, "delta_steps": None,
            "train_delta": train}


def briefing(**changes) -> str:
    data = dict(round=7, sibling=0, skill_name="csv-clean", formula="F", gate="G",
                incumbent={"eval": 0.5, "cost": 0.001, "steps": 4, "composite": 0.4}, train_tasks=[], attempts=[])
    data.update(changes)
    return render(BriefingInput(**data))


def test_last_five_attempts_in_order() -> None:
    text = briefing(attempts=[attempt(r) for r in range(1, 8)])
    rows = [line for line in text.splitlines() if line.startswith("| ") and "change" in line]
    assert [row.split(" | ")[0] for row in rows] == ["| 3", "| 4", "| 5", "| 6", "| 7"]


def test_attempt_row_shows_val_split_and_train_delta() -> None:
    text = briefing(attempts=[attempt(2, "REJECT", -0.1234, 0.05), attempt(3, "CRITIC", None)])
    assert "| 2 | REJECT | -0.1234 | -0.1234 | +0.0000 | — | +0.0500 | change 2 |" in text
    assert "| 3 | CRITIC | — | — | — | — | — | change 3 |" in text


def test_train_table_worst_composite_first_with_failing_tests() -> None:
    tasks = [{"task_id": "b", "eval": 0.9, "cost": 0.001, "steps": 3, "composite": 0.8, "failing": []},
             {"task_id": "a", "eval": 0.2, "cost": 0.002, "steps": 5, "composite": 0.1, "failing": ["dates", "rows"]},
             {"task_id": "c", "eval": 0.5, "cost": 0.001, "steps": 4, "composite": 0.45, "failing": ["rows"]}]
    lines = [line for line in briefing(train_tasks=tasks).splitlines() if line[:4] in ("| a ", "| b ", "| c ")]
    assert [line[2] for line in lines] == ["a", "c", "b"]
    assert lines[0].endswith("| 0.100 | — | dates, rows |") and lines[2].endswith("| — | — |")


def test_meta_skill_and_objective_sections_only_when_set() -> None:
    plain = briefing()
    assert "Lessons so far" not in plain and "This round's objective" not in plain
    assert "no attempts yet" in plain
    full = briefing(meta_skill="Prefer small rules.", objective="Fix dates")
    assert "## Lessons so far (meta skill)\nPrefer small rules." in full
    assert "## This round's objective (set by the first attempt)\nFix dates" in full


def test_ledger_lists_every_attempt_with_reason() -> None:
    rows = [LedgerRow("1", "KEEP", "add dates", "dates fail", 0.03, 0.05, -0.015, -0.005, 0.02),
            LedgerRow("2.1", "CRITIC", "noop", "", None, None, None, None, None, note="identical to its parent")]
    text = render_ledger(rows)
    assert "## Attempt 1 — KEEP" in text and "## Attempt 2.1 — CRITIC" in text
    assert ("val Δcomposite +0.0300 (Δeval +0.0500, Δcost -0.0150, Δsteps -0.0050); train Δcomposite +0.0200"
            in text)
    assert "- why: identical to its parent" in text and text.index("Attempt 1") < text.index("Attempt 2.1")
    assert "No attempts yet." in render_ledger([])


def test_skill_use_column_and_section() -> None:
    tasks = [{"task_id": "a", "eval": 0.2, "cost": 0.002, "steps": 5, "composite": 0.1, "failing": [],
              "skill_use": "NOT loaded (0/2)"}]
    text = briefing(train_tasks=tasks, skill_use=["- train: skill loaded in 0 of 2 cells"])
    assert "| a | 0.200 | 0.00200 | 5.0 | 0.100 | NOT loaded (0/2) | — |" in text
    assert "## How your parent's skill was used (from the build agents' own streams)\n- train: skill loaded" in text
    assert "How your parent's skill was used" not in briefing()


def test_the_briefing_states_the_runs_keep_rule() -> None:
    """The mutator is told the rule its candidate is kept by: under 'positive' (the default) a Δ at or below
    minImprovement is not kept, so 'statistical ties are kept' would be false; a store resumed with the lenient
    gate (mutator/round/eras.py) keeps the lenient sentence, word for word as before."""
    from types import SimpleNamespace

    from mutator.briefing.view import MutatorView
    from mutator.scoring.score import Comparison
    settings = SimpleNamespace(score=SimpleNamespace(min_improvement=0.0, gate_z=1.0, gate_method="t"))
    session = SimpleNamespace(settings=settings, prior_comparisons=lambda **_: [Comparison(8, 0.08)])
    suites = SimpleNamespace(val=SimpleNamespace(content_hash="v", tasks=[object()] * 8))

    def text(rule: str) -> str:
        return MutatorView(session, suites, None, rule).gate_text()
    now = "Now: minImprovement 0.0, gateZ 1.0, pooled s 0.0800 over df 7, SE 0.0283 for 8 tasks, t 1.077"
    delta = "its Δcomposite vs the incumbent (mean of paired per-task deltas on the validation suite)"
    assert text("positive") == (f"A candidate is kept when {delta} is above minImprovement (keep rule 'positive'). "
                                f"{now}: a change with Δ < -0.0305 is a decisive loss, and one with Δ at or below "
                                "minImprovement is not kept either. Statistical ties are not kept.")
    assert text("lenient") == (f"A candidate is kept unless {delta} < minImprovement − t·SE. {now} → a change is "
                               "rejected only if Δ < -0.0305. Statistical ties are kept.")
    assert "kept only if Δ > +0.0305" in text("strict") and "empirical Bayes" in text("eb")
