"""bench/rederive.py's reads of the store and its no-harm re-derivation: cells as the scorer sees them,
per-task and whole-evaluation composites, the seed's normalisers, and the tally of checks. Imports nothing of
mutator/ (the re-derivation is independent by design)."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from dataclasses import dataclass, field

from bench import rederive_maths as rm

FLOAT_TOL = 1e-9


@dataclass
class Tally:
    checks: int = 0
    mismatches: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    groups: dict = field(default_factory=dict)

    def same(self, where: str, what: str, stored, derived, tol: float = FLOAT_TOL) -> bool:
        self.checks += 1
        kind = re.sub(r"run-\S+ |attempt \d+ \(round [\d.]+\) |test run \d+ |look \d+| \d+ \(round [\d.]+\)",
                      lambda m: "look" if m.group().startswith("look") else "", where).strip()
        part = what.split(".")[-1] if kind.startswith("harm") else what.split(".")[0]
        group = self.groups.setdefault(f"{kind}: {part}", [0, 0])
        group[0] += 1
        if _equal(stored, derived, tol):
            return True
        group[1] += 1
        self.mismatches.append(f"{where}: {what} stored {stored!r} re-derived {derived!r}")
        return False


def _equal(a, b, tol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= tol * max(1.0, abs(a), abs(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y, tol) for x, y in zip(a, b))
    return a == b


def rows(db: sqlite3.Connection, sql: str, args=()) -> list[dict]:
    return [dict(r) for r in db.execute(sql, args)]


def cells(db: sqlite3.Connection, evaluation_id: int) -> list[dict]:
    """An evaluation's cells; a several-model (group) evaluation's are its members', each with its model."""
    ev = rows(db, "select members from evaluations where id = ?", [evaluation_id])
    members = json.loads(ev[0]["members"]) if ev and ev[0]["members"] else {}
    if not members:
        return [{**r, "model": ""} for r in rows(db, "select * from cells where evaluation_id = ?",
                                                  [evaluation_id])]
    return [{**r, "model": model} for model, member in members.items()
            for r in rows(db, "select * from cells where evaluation_id = ?", [member])]


def per_task(found: list[dict], w: tuple[float, float], norm: dict[str, tuple[float, float]]) -> dict:
    """{task or 'task@model': (composite, cost_term + steps_term)} as means over the replicate cells: eval is
    the mean score (a failed cell scores 0), cost and steps the mean, each term −w·mean/seed's mean on that
    model (dropped when the seed's is 0)."""
    several = len({c["model"] for c in found}) > 1
    groups: dict[str, list[dict]] = {}
    for c in sorted(found, key=lambda c: (c["model"], c["task_id"], c["replicate"])):
        groups.setdefault(f"{c['task_id']}@{c['model']}" if several else c["task_id"], []).append(c)
    out = {}
    for key, group in groups.items():
        n = len(group)
        ev = sum((c["score"] or 0.0) if c["status"] == "ok" else 0.0 for c in group) / n
        cost = sum(c["cost_usd"] or 0.0 for c in group) / n
        steps = sum(c["steps"] or 0 for c in group) / n
        seed_cost, seed_steps = norm[group[0]["model"]] if several else next(iter(norm.values()))
        cost_term = -w[0] * cost / seed_cost if seed_cost and seed_cost > 0 else 0.0
        steps_term = -w[1] * steps / seed_steps if seed_steps and seed_steps > 0 else 0.0
        out[key] = (ev + cost_term + steps_term, cost_term + steps_term)
    return out


def composite(found: list[dict], w: tuple[float, float], norm: dict[str, tuple[float, float]]) -> float:
    """An evaluation's composite over these cells: per-cell means (eval, cost, steps) scored against the seed;
    with several models the mean of each model's own composite."""
    models = sorted({c["model"] for c in found})
    if len(models) > 1:
        return sum(composite([c for c in found if c["model"] == m], w, {m: norm[m]})
                   for m in models) / len(models)
    n = len(found)
    ev = sum((c["score"] or 0.0) if c["status"] == "ok" else 0.0 for c in found) / n
    cost, steps = sum(c["cost_usd"] or 0.0 for c in found) / n, sum(c["steps"] or 0 for c in found) / n
    seed_cost, seed_steps = next(iter(norm.values())) if len(norm) == 1 else norm[models[0]]
    return (ev + (-w[0] * cost / seed_cost if seed_cost and seed_cost > 0 else 0.0)
            + (-w[1] * steps / seed_steps if seed_steps and seed_steps > 0 else 0.0))


def run_norm(run: dict, split: str) -> dict[str, tuple[float, float]]:
    by_model = (json.loads(run["seed_models"]) if run["seed_models"] else {}).get(split) or []
    if by_model:
        return {m: (c, s) for m, c, s in by_model}
    cost, steps = ("seed_val_cost", "seed_val_steps") if split == "val" else ("seed_cost", "seed_steps")
    return {"": (run[cost] or 0.0, run[steps] or 0.0)}


def harm_reports(db: sqlite3.Connection, tally: Tally, run_id: str | None) -> None:
    for tr in rows(db, "select * from test_runs where report is not null"
                   + (" and run_id = ?" if run_id else ""), [run_id] if run_id else []):
        report = json.loads(tr["report"])
        if not report.get("harm"):
            continue
        run = rows(db, "select * from runs where id = ?", [tr["run_id"]])[0]
        w = (run["w_cost"] or 0.0, run["w_steps"] or 0.0)
        seed_eval = report["splits"]["test"]["seed_evaluation_id"]
        seed_cells = cells(db, seed_eval)
        models = sorted({c["model"] for c in seed_cells})
        norm = {m: (sum(c["cost_usd"] or 0.0 for c in seed_cells if c["model"] == m)
                    / max(1, sum(c["model"] == m for c in seed_cells)),
                    sum(c["steps"] or 0 for c in seed_cells if c["model"] == m)
                    / max(1, sum(c["model"] == m for c in seed_cells))) for m in models}

        def per_cell(ev: int, w=w, norm=norm) -> dict[str, list[float]]:
            found = cells(db, ev)
            several = len({c["model"] for c in found}) > 1
            out: dict[str, list] = {}
            for c in sorted(found, key=lambda c: (c["task_id"], c["model"], c["replicate"])):
                value = next(iter(per_task([c], w, {c["model"]: norm[c["model"]]} if several else
                                           {"": next(iter(norm.values()))}).values()))[0]
                out.setdefault(f"{c['task_id']}@{c['model']}" if several else c["task_id"], []).append(value)
            return out

        mine = per_cell(tr["evaluation_id"])
        for name, ref_ev in (("seed", seed_eval), ("none", tr["control_evaluation_id"])):
            stored = report["harm"].get(name)
            if not stored or ref_ev is None or not stored.get("tasks"):
                continue
            where = f"{tr['run_id']} test run {tr['id']} harm vs {name}"
            ref = per_cell(ref_ev)
            tasks = sorted(set(mine) & set(ref))
            alpha = stored["alpha"]
            worse = rm.holm({t: rm.exact_p(mine[t], ref[t], True) for t in tasks}, alpha)
            better = rm.holm({t: rm.exact_p(mine[t], ref[t], False) for t in tasks}, alpha)
            r_c, r_r = min(len(mine[t]) for t in tasks), min(len(ref[t]) for t in tasks)
            min_p = 1.0 / math.comb(r_c + r_r, r_c)
            can_flag = min_p <= alpha / len(tasks)
            sums = sum(sum((v - sum(s[t]) / len(s[t])) ** 2 for v in s[t])
                       for s in (mine, ref) for t in tasks)
            df = sum(len(s[t]) - 1 for s in (mine, ref) for t in tasks)
            sigma = math.sqrt(sums / df) if df else 0.0
            mdh = ((float(rm.special.ndtri(1 - alpha / len(tasks))) + float(rm.special.ndtri(0.8)))
                   * sigma * math.sqrt(1 / r_c + 1 / r_r)) if can_flag else None
            for key, value in (("min_p", min_p), ("can_flag", can_flag), ("sigma", sigma), ("mdh", mdh),
                               ("replicates", [r_c, r_r])):
                tally.same(where, key, stored[key], value)
            by_task = {row["task"]: row for row in stored["tasks"]}
            tally.same(where, "tasks", sorted(by_task), tasks)
            for t in tasks:
                row = by_task.get(t, {})
                tally.same(where, f"{t}.p_worse", row.get("p_worse"), rm.exact_p(mine[t], ref[t], True))
                tally.same(where, f"{t}.p_better", row.get("p_better"), rm.exact_p(mine[t], ref[t], False))
                tally.same(where, f"{t}.verdict", row.get("verdict"),
                           "worse" if worse[t] else "better" if better[t] else "same")
            tally.same(where, "flagged", sorted(stored["flagged"]), sorted(t for t in tasks if worse[t]))


