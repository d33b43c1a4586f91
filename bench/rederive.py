"""Re-derive every stored decision of a store from its cells and the docs alone (issue 47 item 7).

    python bench/rederive.py data/mutator.db [--run RUN]

For every run: each attempt's screen (its task draw, the incumbent's cells it pairs with, every gate figure
and the SCREENED call); each sequential look (its z, the replicates it pairs, the pooled scale, t, the
sign-flip figures and coin, the early decision, the tie rule, model gate 'each', the keep rule at the last
look); the attempt's stored gate and columns; its verdict under the run's strategy (greedy, branching,
population), its --confirm gate; each null control; and each test run's no-harm report. Every figure is
recomputed from the cells by bench/rederive_maths.py, which re-implements docs/concepts/{gate,screen,
rederive}.md and imports nothing of mutator/. Prints a table of figures and mismatches per kind of check,
then every mismatch by row; exit 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sqlite3
import sys
from pathlib import Path

# Its sibling modules by the package name, with the project root on the path (never bench/ itself: a folder
# on sys.path whose strategies.py would shadow the strategies package for every later import in the process).
ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
from bench import rederive_maths as rm  # noqa: E402
from bench.rederive_store import Tally, cells, composite, harm_reports, per_task, rows, run_norm  # noqa: E402


class Run:
    def __init__(self, db: sqlite3.Connection, run: dict, tally: Tally):
        self.db, self.run, self.tally = db, run, tally
        cfg = json.loads(run["config"] or "{}")
        self.m = float(cfg.get("min_improvement", run["min_improvement"] or 0.0))
        self.gate_z = float(run["gate_z"])
        self.method = run["gate_method"] or cfg.get("gate_method", "t")
        self.model_gate = run["model_gate"] or "mean"
        self.tie_rule, self.keep_rule = cfg.get("tie_rule", "keep"), cfg.get("keep_rule", "lenient")
        # the rule --confirm re-checks a keep with: the keep rule, named in the run's identity since --confirm
        # applies it (a run stored before, or without --confirm, confirms under the lenient gate)
        self.confirm_rule = cfg.get("confirm_rule", "lenient")
        seq = cfg.get("sequential") or {"looks": 1, "early_z": 2.0}
        self.looks, self.early_z = int(seq["looks"]), float(seq["early_z"])
        self.screen_cfg = cfg.get("screen") or {}
        self.w = (run["w_cost"] or 0.0, run["w_steps"] or 0.0)
        self.strategy = run["strategy"]
        self.attempts = rows(db, "select a.*, e.suite_hash val_suite_hash from attempts a left join "
                                 "evaluations e on e.id = a.val_evaluation_id where a.run_id = ? "
                                 "order by a.id", [run["id"]])

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
        """The run's pooled comparisons (id, n, s_r, Δ) in attempt id order among the attempts `member`
        admits: each attempt stored with a full-val gate (no early stop) on the same val suite."""
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
        """The gate under the run's model rule (Holm over models for 'each'), the tie rule at the last look
        only."""
        tie = self.tie_rule if last else "keep"
        models = sorted({k.partition("@")[2] for k in cand})
        each = self.model_gate == "each" and len(models) > 1
        mean = rm.gate(cand, inc, prior=prior, m=self.m, z=z, method=self.method,
                       tie_rule="keep" if each else tie)
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

    def by_rule(self, where: str, stored: dict, mine: dict, prior, rule: str) -> dict:
        """`mine` with its keep under keep rule `rule` (the gate's own for 'lenient'), each of the rule's
        figures compared with the stored gate's `keep_rule`."""
        if rule == "lenient":
            self.tally.same(where, "keep_rule", stored.get("keep_rule"), None)
            return mine
        record = self.keep_rule_record(mine, prior, rule)
        found = stored.get("keep_rule") or {}
        for key in record:
            self.tally.same(where, f"keep_rule.{key}", found.get(key), record[key])
        self.tally.same(where, "keep_rule.gate_keep", found.get("gate_keep"), mine["keep"])
        return {**mine, "keep": record["keep"]}

    def keep_rule_record(self, g: dict, prior, rule: str) -> dict:
        if rule in ("strict", "positive"):
            bar = self.m + (g["t"] * g["se"] if rule == "strict" else 0.0)
            return {"rule": rule, "bar": bar, "keep": g["delta"] > bar + rm.KEEP_TOL}
        history = [(d, n) for n, _, d in prior if d is not None]
        deltas = [d for d, _ in history] + [g["delta"]]
        ses = [g["s"] / math.sqrt(n) for _, n in history] + [g["se"]]
        k = len(deltas)
        if k < 5:
            return {"rule": "eb", "history": k, "posterior": g["delta"],
                    "keep": g["delta"] > self.m + rm.KEEP_TOL}
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
                                  "contract = ? order by id",
                         [genome, seed_row["suite_hash"], seed_row["contract"]])
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
            against = rows(self.db, "select genome_hash from evaluations where id = ?", [inc_ev])[0]
            self.tally.same(where, "incumbent genome", against["genome_hash"], incumbent)
            reps = look["replicates"]
            norm = run_norm(self.run, "val")
            mine_cells = [c for c in cells(self.db, a["val_evaluation_id"]) if c["replicate"] < reps]
            cand = per_task(mine_cells, self.w, norm)
            inc = per_task([c for c in cells(self.db, inc_ev) if c["replicate"] < reps], self.w, norm)
            widen = 1.0 if last else math.sqrt(self.looks / k)
            mine = self.gate(cand, inc, [(n, s * widen) for n, s, _ in prior], look["z"], last=last)
            if last:
                mine = self.by_rule(where, look["gate"], mine, prior, self.keep_rule)
            self.compare_gate(where, look["gate"], mine)
            decision = None
            if not last:
                decision = rm.early(mine["keep"], mine["delta"], mine["t"], mine["se"], self.m)
                if decision == "win" and "models" in mine:
                    wins = [rm.early(True, r["delta"], r["t"], r["se"], self.m)
                            for r in mine["models"].values()]
                    decision = "win" if all(w == "win" for w in wins) else None
            self.tally.same(where, "decision", look["decision"], decision)
            self.tally.same(where, "keep", look["gate"]["keep"], mine["keep"])
            mine_last = mine
        stored = json.loads(a["gate"])
        where = self.where(a, "gate")
        final = {k: v for k, v in stored.items() if k != "early_look"}
        for key in sorted(set(final) | set(looks[-1]["gate"])):   # the attempt's gate is its last look's
            self.tally.same(where, f"last look.{key}", final.get(key), looks[-1]["gate"].get(key), tol=0.0)
        for col, key in (("delta", "delta"), ("gate_threshold", "threshold"), ("gate_se", "se"),
                         ("gate_s", "s"), ("gate_df", "df"), ("gate_t", "t"), ("gate_n", "n")):
            self.tally.same(where, f"column {col}", a[col], mine_last[key])
        return mine_last

    def decided_composite(self, a: dict) -> float:
        """The val composite the round compared: over the cells the deciding look read (an early stop's first
        k replicates; attempts.composite of a kept early stop is rewritten later over every replicate)."""
        last = json.loads(a["looks"])[-1]
        found = cells(self.db, a["val_evaluation_id"])
        if last["decision"] is not None:
            found = [c for c in found if c["replicate"] < last["replicates"]]
        return composite(found, self.w, run_norm(self.run, "val"))

    def confirm(self, a: dict) -> bool:
        """The confirmation gate (--confirm): fresh replicates of the winner and the old incumbent, pooling
        every comparison of the run so far but the winner's own, the run's tie rule, and the run's keep rule
        (its identity's confirm_rule); True when the keep stands."""
        rec = json.loads(a["confirm"])
        where = self.where(a, "confirm")
        norm = run_norm(self.run, "val")
        prior = [(n, s_r, d) for _, n, s_r, d in
                 self.pool(lambda x: x["round"] <= a["round"] and x["id"] != a["id"])]
        mine = self.gate(per_task(cells(self.db, rec["candidate_evaluation_id"]), self.w, norm),
                         per_task(cells(self.db, rec["incumbent_evaluation_id"]), self.w, norm),
                         [(n, s_r) for n, s_r, _ in prior], self.gate_z, last=True)
        mine = self.by_rule(where, rec["gate"], mine, prior, self.confirm_rule)
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
                else:   # the highest composite wins (a tie: the earlier sibling), kept if its gate keeps
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
                self.tally.skipped.append(f"{self.run['id']} round {rnd}: {self.strategy} verdicts are not "
                                          "re-derived")

    def nulls(self) -> None:
        """Null controls: a fresh-salt copy of the round's incumbent gated against its val evaluation, pooling
        every comparison of the run up to its round; called a loss (rejected), a win (past the win line) or
        a tie."""
        for row in rows(self.db, "select * from null_controls where run_id = ? order by id",
                        [self.run["id"]]):
            where = f"{self.run['id']} null control {row['id']} (round {row['round']}.{row['copy']})"
            norm = run_norm(self.run, "val")
            upto = row["round"]
            prior = [(n, s_r) for _, n, s_r, _ in self.pool(lambda x, upto=upto: x["round"] <= upto)]
            mine = self.gate(per_task(cells(self.db, row["evaluation_id"]), self.w, norm),
                             per_task(cells(self.db, row["incumbent_evaluation_id"]), self.w, norm), prior,
                             self.gate_z, last=True)
            self.compare_gate(where, json.loads(row["gate"]), mine)
            win = rm.early(True, mine["delta"], mine["t"], mine["se"], self.m) == "win"
            if win and "models" in mine:
                win = all(rm.early(True, r["delta"], r["t"], r["se"], self.m) == "win"
                          for r in mine["models"].values())
            call = "loss" if not mine["keep"] else "win" if win else "tie"
            self.tally.same(where, "call", row["call"], call)
            self.tally.same(where, "salt", row["salt"], f"null:{self.run['id']}:{row['round']}:{row['copy']}")
            self.tally.same(where, "incumbent", row["genome_hash"], self.incumbent_before({"round": upto}))

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
