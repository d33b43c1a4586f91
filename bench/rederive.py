"""Re-derive every stored decision of a store from its cells and the docs alone (issue 47 item 7).

    python bench/rederive.py data/mutator.db [--run RUN] [--all]

For every run: each attempt's screen (its task draw, the incumbent's cells it pairs with, every gate figure and
the SCREENED call), each sequential look (its z, the replicates it pairs, the pooled scale, t, the sign-flip
figures and coin, the early decision, the tie rule, model gate 'each', the keep rule at the last look), the
attempt's stored gate and columns, its verdict under the run's strategy (greedy, branching, population), and
each test run's no-harm report. Each figure is recomputed from the cells with bench/rederive_maths.py, which
re-implements docs/concepts/{gate,screen,rederive}.md and imports nothing of mutator/. Prints one line per
check group (`--all`: every check) and every mismatch by row; exit 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rederive_maths as rm  # noqa: E402

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
        return [{**r, "model": ""} for r in rows(db, "select * from cells where evaluation_id = ?", [evaluation_id])]
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
        return sum(composite([c for c in found if c["model"] == m], w, {m: norm[m]}) for m in models) / len(models)
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


class Run:
    def __init__(self, db: sqlite3.Connection, run: dict, tally: Tally):
        self.db, self.run, self.tally = db, run, tally
        cfg = json.loads(run["config"] or "{}")
        self.m, self.gate_z = float(cfg.get("min_improvement", run["min_improvement"] or 0.0)), float(run["gate_z"])
        self.method = run["gate_method"] or cfg.get("gate_method", "t")
        self.model_gate = run["model_gate"] or "mean"
        self.tie_rule, self.keep_rule = cfg.get("tie_rule", "keep"), cfg.get("keep_rule", "lenient")
        seq = cfg.get("sequential") or {"looks": 1, "early_z": 2.0}
        self.looks, self.early_z = int(seq["looks"]), float(seq["early_z"])
        self.screen_cfg = cfg.get("screen") or {}
        self.w = (run["w_cost"] or 0.0, run["w_steps"] or 0.0)
        self.strategy = run["strategy"]
        self.attempts = rows(db, "select a.*, e.suite_hash val_suite_hash from attempts a left join evaluations e "
                                 "on e.id = a.val_evaluation_id where a.run_id = ? order by a.id", [run["id"]])

    def where(self, a: dict, what: str) -> str:
        return f"{self.run['id']} attempt {a['id']} (round {a['round']}.{a['sibling']}) {what}"

    def z_of(self, look: int) -> float:
        if self.looks > 1 and self.gate_z > 0 and look == self.looks:
            return rm_last_z(self.looks, self.gate_z, self.early_z)
        return self.early_z if self.looks > 1 and self.gate_z > 0 else self.gate_z

    def incumbent_before(self, a: dict) -> str:
        before = [x for x in self.attempts if x["round"] < a["round"] and x["incumbent_after"]]
        return max(before, key=lambda x: (x["round"], x["id"]))["incumbent_after"] if before else \
            self.run["seed_hash"]

    def pool(self, member) -> list[tuple[int, int, float, float | None]]:
        """The run's pooled comparisons (id, n, s_r, Δ) in attempt id order among the attempts `member` admits:
        each attempt stored with a full-val gate (no early stop) on the same val suite."""
        out = []
        for x in self.attempts:
            if x["round"] == 0 or x["gate_n"] is None or not member(x):
                continue
            g = json.loads(x["gate"])
            if "early_look" not in g:
                out.append((x["id"], x["gate_n"], g["s_r"], g.get("delta")))
        return out

    def prior(self, a: dict) -> list[tuple[int, float, float | None]]:
        return [(n, s_r, d) for _, n, s_r, d in
                self.pool(lambda x: x["id"] < a["id"] and x["val_suite_hash"] == a["val_suite_hash"])]

    def gate(self, cand, inc, prior, z, *, last: bool) -> dict:
        """The gate under the run's model rule (Holm over models for 'each'), tie rule at the last look only."""
        tie = self.tie_rule if last else "keep"
        models = sorted({k.partition("@")[2] for k in cand})
        each = self.model_gate == "each" and len(models) > 1
        mean = rm.gate(cand, inc, prior=prior, m=self.m, z=z, method=self.method, tie_rule="keep" if each else tie)
        if not each:
            return mean
        standing, record, step, rejected = list(models), {}, 0, []
        while standing:
            step += 1
            zz = rm.holm_z(z, len(standing))
            losses = []
            for model in standing:
                pick = {k: v for k, v in cand.items() if k.endswith("@" + model)}
                own = rm.gate(pick, {k: inc[k] for k in pick if k in inc}, prior=prior, m=self.m, z=zz,
                              method=self.method)
                record[model] = {**own, "step": step, "z": zz}
                if not own["keep"]:
                    losses.append(model)
            if not losses:
                break
            rejected += losses
            standing = [x for x in standing if x not in losses]
        t = mean["tie"]
        keep = not rejected and not (tie == "noAddedCost" and t["tie"] and t["adds_cost"])
        return {**mean, "keep": keep, "models": record, "rejected_by": rejected}

    def keep_rule_record(self, g: dict, prior) -> dict:
        rule = self.keep_rule
        if rule in ("strict", "positive"):
            bar = self.m + (g["t"] * g["se"] if rule == "strict" else 0.0)
            return {"rule": rule, "bar": bar, "keep": g["delta"] > bar + rm.KEEP_TOL}
        history = [(d, n) for n, _, d in prior if d is not None]
        deltas = [d for d, _ in history] + [g["delta"]]
        ses = [g["s"] / math.sqrt(n) for _, n in history] + [g["se"]]
        k = len(deltas)
        if k < 5:
            return {"rule": "eb", "history": k, "posterior": g["delta"], "keep": g["delta"] > self.m + rm.KEEP_TOL}
        mu = sum(deltas) / k
        tau2 = max(0.0, sum((d - mu) ** 2 for d in deltas) / (k - 1) - sum(s * s for s in ses) / k)
        shrink = tau2 / (tau2 + g["se"] ** 2) if tau2 + g["se"] ** 2 > 0 else 1.0
        post = mu + shrink * (g["delta"] - mu)
        return {"rule": "eb", "history": k, "mu": mu, "tau2": tau2, "shrink": shrink, "posterior": post,
                "keep": post > self.m + rm.KEEP_TOL}

    def compare_gate(self, where: str, stored: dict, mine: dict) -> None:
        same = self.tally.same
        same(where, "deltas.keys", sorted(stored["deltas"]), mine["keys"])
        same(where, "deltas", [stored["deltas"][k] for k in sorted(stored["deltas"])],
             [mine["deltas"][k] for k in mine["keys"]])
        for key in ("n", "delta", "s_r", "scale_method", "scale_factor", "s", "df", "se", "t", "t_student",
                    "threshold", "keep"):
            same(where, f"gate.{key}", stored.get(key), mine[key])
        if stored.get("flip") or mine["flip"]:
            sf, mf = stored.get("flip") or {}, mine["flip"] or {}
            for key in ("below", "at", "rho", "u", "patterns", "exhaustive", "sample_seed", "position"):
                same(where, f"flip.{key}", sf.get(key), mf.get(key))
        if stored.get("tie"):
            st, mt = stored["tie"], mine["tie"]
            same(where, "tie.gate_keep", st["gate_keep"], mine["gate_keep"] if "models" not in mine
                 else not mine["rejected_by"])
            for key in ("tie", "delta_cost", "se", "t", "adds_cost"):
                same(where, f"tie.{key}", st[key], mt[key])
        if "models" in mine:
            sm = (stored.get("model_gate") or {}).get("models") or {}
            same(where, "model_gate.models", sorted(sm), sorted(mine["models"]))
            for model, rec in mine["models"].items():
                for key in ("step", "z", "n", "delta", "s_r", "s", "df", "se", "t", "threshold", "keep"):
                    same(where, f"model_gate.{model}.{key}", (sm.get(model) or {}).get(key), rec[key])
            same(where, "model_gate.rejected_by", (stored.get("model_gate") or {}).get("rejected_by"),
                 mine["rejected_by"])

    def screen(self, a: dict) -> None:
        rec = json.loads(a["screen"]) if a["screen"] else None
        if not rec or "gate" not in rec:
            return
        where = self.where(a, "screen")
        seed_train = rows(self.db, "select train_evaluation_id from attempts where run_id = ? and round = 0",
                          [self.run["id"]])[0]["train_evaluation_id"]
        ids = sorted({c["task_id"] for c in cells(self.db, seed_train)})
        n = int(self.screen_cfg.get("tasks", len(rec["tasks"])))
        seed = f"{self.run['rng_seed']}:{self.run['id']}:{a['round']}:screen"
        drawn = ids if n >= len(ids) else sorted(random.Random(seed).sample(ids, n))
        self.tally.same(where, "tasks", sorted(rec["tasks"]), drawn)
        incumbent = self.incumbent_before(a)
        seed_row = rows(self.db, "select suite_hash, contract from evaluations where id = ?", [seed_train])[0]
        want = {(t, r) for t in rec["tasks"] for r in range(rec["replicates"])}

        def side(genome: str) -> dict:
            """The genome's cells on the screen's tasks and replicates, from its evaluation of the train suite
            under the seed's train contract (a several-model run's group evaluation)."""
            found = rows(self.db, "select id from evaluations where genome_hash = ? and suite_hash = ? and "
                                  "contract = ? order by id", [genome, seed_row["suite_hash"], seed_row["contract"]])
            picked = [c for c in cells(self.db, found[-1]["id"]) if (c["task_id"], c["replicate"]) in want] \
                if found else []
            return per_task(picked, self.w, run_norm(self.run, "train"))

        mine = self.gate(side(a["genome_hash"]), side(incumbent), [], float(rec["z"]), last=False)
        self.tally.same(where, "z", rec["z"], float(self.screen_cfg.get("z", rec["z"])))
        self.compare_gate(where, rec["gate"], mine)
        decision = "loss" if rm.early(mine["keep"], mine["delta"], mine["t"], mine["se"], self.m) == "loss" \
            else None
        self.tally.same(where, "decision", rec["decision"], decision)
        self.tally.same(where, "verdict", a["verdict"] == "SCREENED", decision == "loss")

    def looks_(self, a: dict) -> dict | None:
        looks = json.loads(a["looks"]) if a["looks"] else None
        if not looks or a["gate"] is None:
            return None
        prior = self.prior(a)
        incumbent = self.incumbent_before(a)
        self.tally.same(self.where(a, "comparator"), "comparator_hash", a["comparator_hash"], incumbent)
        mine_last = None
        for look in looks:
            k = look["look"]
            last = k == self.looks or look is looks[-1] and look["decision"] is None
            where = self.where(a, f"look {k}")
            self.tally.same(where, "z", look["z"], self.z_of(k), tol=1e-6)
            inc_ev = look["incumbent_evaluation_id"]
            self.tally.same(where, "incumbent genome", rows(self.db, "select genome_hash from evaluations where "
                                                                     "id = ?", [inc_ev])[0]["genome_hash"], incumbent)
            reps = look["replicates"]
            norm = run_norm(self.run, "val")
            cand = per_task([c for c in cells(self.db, a["val_evaluation_id"]) if c["replicate"] < reps], self.w, norm)
            inc = per_task([c for c in cells(self.db, inc_ev) if c["replicate"] < reps], self.w, norm)
            widen = 1.0 if last else math.sqrt(self.looks / k)
            mine = self.gate(cand, inc, [(n, s * widen) for n, s, _ in prior], look["z"], last=last)
            self.compare_gate(where, look["gate"], mine)
            if last and self.keep_rule != "lenient":
                rule = self.keep_rule_record(mine, prior)
                stored = look["gate"].get("keep_rule") or {}
                for key in rule:
                    self.tally.same(where, f"keep_rule.{key}", stored.get(key), rule[key])
                self.tally.same(where, "keep_rule.gate_keep", stored.get("gate_keep"), mine["keep"])
                mine = {**mine, "keep": rule["keep"]}
            decision = None
            if not last:
                decision = rm.early(mine["keep"], mine["delta"], mine["t"], mine["se"], self.m)
                if decision == "win" and "models" in mine:
                    wins = [rm.early(True, r["delta"], r["t"], r["se"], self.m) for r in mine["models"].values()]
                    decision = "win" if all(w == "win" for w in wins) else None
            self.tally.same(where, "decision", look["decision"], decision)
            self.tally.same(where, "keep", look["gate"]["keep"], mine["keep"])
            mine_last = mine
        stored = json.loads(a["gate"])
        where = self.where(a, "gate")
        self.tally.same(where, "gate = last look", {k: v for k, v in stored.items() if k != "early_look"},
                        looks[-1]["gate"])
        for col, key in (("delta", "delta"), ("gate_threshold", "threshold"), ("gate_se", "se"), ("gate_s", "s"),
                         ("gate_df", "df"), ("gate_t", "t"), ("gate_n", "n")):
            self.tally.same(where, f"column {col}", a[col], mine_last[key])
        return mine_last

    def decided_composite(self, a: dict) -> float:
        """The val composite the round compared: over the cells the deciding look read (an early stop's first k
        replicates; attempts.composite of a kept early stop is rewritten later over every replicate)."""
        last = json.loads(a["looks"])[-1]
        found = cells(self.db, a["val_evaluation_id"])
        if last["decision"] is not None:
            found = [c for c in found if c["replicate"] < last["replicates"]]
        return composite(found, self.w, run_norm(self.run, "val"))

    def confirm(self, a: dict) -> bool:
        """The confirmation gate (--confirm): fresh replicates of the winner and the old incumbent, pooling every
        comparison of the run so far but the winner's own, the run's tie rule; True when the keep stands."""
        rec = json.loads(a["confirm"])
        where = self.where(a, "confirm")
        norm = run_norm(self.run, "val")
        prior = [(n, s_r) for i, n, s_r, _ in self.pool(lambda x: x["round"] <= a["round"] and x["id"] != a["id"])]
        mine = self.gate(per_task(cells(self.db, rec["candidate_evaluation_id"]), self.w, norm),
                         per_task(cells(self.db, rec["incumbent_evaluation_id"]), self.w, norm), prior,
                         self.gate_z, last=True)
        self.compare_gate(where, rec["gate"], mine)
        self.tally.same(where, "stands", rec["stands"], mine["keep"])
        self.tally.same(where, "salt", rec["salt"], f"confirm:{self.run['id']}:{a['round']}")
        return mine["keep"]

    def verdicts(self, gated: dict[int, dict]) -> None:
        by_round: dict[int, list[dict]] = {}
        for a in self.attempts:
            if a["round"] > 0 and a["verdict"] in ("KEEP", "REJECT"):
                by_round.setdefault(a["round"], []).append(a)
        for rnd, scored in by_round.items():
            if self.strategy in ("greedy", "branching"):
                if self.strategy == "greedy":
                    chosen = [a for a in scored if gated[a["id"]]["keep"]][-1:]
                else:   # the highest composite wins, an exact tie to the earlier sibling; kept if its gate keeps
                    best = max(scored, key=lambda a: (self.decided_composite(a), -a["sibling"]))
                    chosen = [best] if gated[best["id"]]["keep"] else []
                if chosen and chosen[0]["confirm"]:
                    chosen = chosen if self.confirm(chosen[0]) else []
                for a in scored:
                    self.tally.same(self.where(a, "verdict"), "KEEP", a["verdict"] == "KEEP", a in chosen)
            elif self.strategy == "population":
                pool = next((json.loads(a["pool_snapshot"]) for a in scored if a["pool_snapshot"]), [])
                before = self.incumbent_pool(rnd)
                seen = set(before)
                for a in sorted(scored, key=lambda a: a["sibling"]):
                    first = a["genome_hash"] not in seen
                    seen.add(a["genome_hash"])
                    # KEEP = entered the pool's cut (the gate's verdict plays no part)
                    self.tally.same(self.where(a, "verdict"), "KEEP (pool cut)", a["verdict"] == "KEEP",
                                    first and a["genome_hash"] in pool)
                self.tally.same(self.where(scored[0], "verdict"), "incumbent = pool leader",
                                scored[0]["incumbent_after"], pool[0] if pool else None)
            else:
                self.tally.skipped.append(f"{self.run['id']} round {rnd}: {self.strategy} verdicts not re-derived")

    def nulls(self) -> None:
        """Null controls: a fresh-salt copy of the round's incumbent gated against its val evaluation, pooling
        every comparison of the run up to its round; called a loss (rejected), a win (past the win line) or
        a tie."""
        for row in rows(self.db, "select * from null_controls where run_id = ? order by id", [self.run["id"]]):
            where = f"{self.run['id']} null control {row['id']} (round {row['round']}.{row['copy']})"
            norm = run_norm(self.run, "val")
            prior = [(n, s_r) for _, n, s_r, _ in self.pool(lambda x: x["round"] <= row["round"])]
            mine = self.gate(per_task(cells(self.db, row["evaluation_id"]), self.w, norm),
                             per_task(cells(self.db, row["incumbent_evaluation_id"]), self.w, norm), prior,
                             self.gate_z, last=True)
            self.compare_gate(where, json.loads(row["gate"]), mine)
            win = rm.early(True, mine["delta"], mine["t"], mine["se"], self.m) == "win"
            if win and "models" in mine:
                win = all(rm.early(True, r["delta"], r["t"], r["se"], self.m) == "win"
                          for r in mine["models"].values())
            self.tally.same(where, "call", row["call"], "loss" if not mine["keep"] else "win" if win else "tie")
            self.tally.same(where, "salt", row["salt"], f"null:{self.run['id']}:{row['round']}:{row['copy']}")
            self.tally.same(where, "incumbent", row["genome_hash"], self.incumbent_before({"round": row["round"]}))

    def incumbent_pool(self, rnd: int) -> list[str]:
        earlier = [a for a in self.attempts if a["round"] < rnd and a["pool_snapshot"]]
        if earlier:
            return json.loads(max(earlier, key=lambda a: a["id"])["pool_snapshot"])
        return [a["genome_hash"] for a in self.attempts if a["round"] < rnd and a["val_evaluation_id"]]

    def check(self) -> None:
        if self.run["w_trigger"]:
            self.tally.skipped.append(f"{self.run['id']}: wTrigger > 0 (the trigger term is not re-derived)")
            return
        gated = {}
        for a in self.attempts:
            if a["round"] == 0:
                continue
            self.screen(a)
            if (mine := self.looks_(a)) is not None:
                gated[a["id"]] = mine
        self.verdicts(gated)
        self.nulls()


_LAST_Z: dict = {}


def rm_last_z(looks: int, gate_z: float, early_z: float) -> float:
    key = (looks, gate_z, early_z)
    if key not in _LAST_Z:
        _LAST_Z[key] = rm.last_z(*key)
    return _LAST_Z[key]


def harm_reports(db: sqlite3.Connection, tally: Tally, run_id: str | None) -> None:
    for tr in rows(db, "select * from test_runs where report is not null" + (" and run_id = ?" if run_id else ""),
                   [run_id] if run_id else []):
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

        def per_cell(ev: int) -> dict[str, list[float]]:
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
            sums = sum(sum((v - sum(s[t]) / len(s[t])) ** 2 for v in s[t]) for s in (mine, ref) for t in tasks)
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


def rederive(path: Path, run_id: str | None = None) -> Tally:
    if not path.is_file():
        raise SystemExit(f"error: no store at {path}; pass the path of a mutator.db")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    tally = Tally()
    for run in rows(db, "select * from runs" + (" where id = ?" if run_id else "") + " order by created_at",
                    [run_id] if run_id else []):
        Run(db, run, tally).check()
    harm_reports(db, tally, run_id)
    db.close()
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--run", default=None)
    args = parser.parse_args(argv)
    tally = rederive(args.store, args.run)
    print(f"{'check':<40} {'figures':>8} {'mismatches':>10}")
    for group, (n, bad) in sorted(tally.groups.items()):
        print(f"{group:<40} {n:>8} {bad:>10}")
    for line in tally.skipped:
        print(f"skipped: {line}")
    for line in tally.mismatches:
        print(f"MISMATCH {line}")
    print(f"{tally.checks} figures re-derived, {len(tally.mismatches)} mismatches")
    return 1 if tally.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
