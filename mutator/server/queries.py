"""The dashboard's pages as data: plain functions from a read-only connection to JSON-ready data.

No SQL here: every statement is a function of mutator/store/queries/; this module lays its rows out as the
pages read them (no writes, no HTTP). The server wraps them in routes and bench/dashboard.py times them beside
the bare SQL they run (the statements' parts and row readers it names, LIGHT, ATTEMPT_LIST, EVAL_COLS,
RUN_LIST, q and one, are the store's). Per-stage progress is derived from attempt rows plus the counters of
the evaluation in progress.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import sqlite_utils

from eval.reaper import pid_alive
from mutator.after.spend import run_spend, run_totals
from mutator.server import decisions as D
from mutator.server import gate_view as G
from mutator.server import spend_axis
from mutator.server.models_view import (
    attempt_models,
    by_model,
    cell_sources,
    composite_of,
    mean_composite,
    train_composite,
)
from mutator.server.skill_use_view import skill_use
from mutator.server.stages import mark_stopped, progress, stages
from mutator.store.liveness import mark_stale, mark_stale_records
from mutator.store.notes import notes_of
from mutator.store.queries import attempts as stored_attempts
from mutator.store.queries import cells as stored_cells
from mutator.store.queries import evaluations, testruns
from mutator.store.queries import runs as stored_runs
from mutator.store.queries import signatures as stored_signatures
from mutator.store.queries.attempts import LIGHT_NAMES
from mutator.store.queries.gate import null_controls, own_evaluation
from mutator.store.queries.rows import loads


def composite(ev: dict | None, run: dict, *, split: str) -> float | None:
    """Composite of a finished evaluation from its per-cell means, normalised to the seed on that split."""
    if not ev or ev.get("eval") is None:
        return None
    seed_cost = run["seed_val_cost"] if split == "val" else run["seed_cost"]
    seed_steps = run["seed_val_steps"] if split == "val" else run["seed_steps"]
    return composite_of(ev, run, seed_cost, seed_steps)


# ---- stores, skills, runs ------------------------------------------------------------------------
def skills(db: sqlite_utils.Database) -> list[dict]:
    return stored_runs.skills(db)


def runs(db: sqlite_utils.Database, skill: str | None) -> list[dict]:
    # A/A runs (kind 'aa': the gate's noise calibration) come after the ordinary runs, so no picker defaults
    # to one
    found = stored_runs.run_list(db, skill)
    spent = run_totals(db)
    for run in found:
        # the one spend (mutator/after/spend.py), as Cost shows it
        run["cost_usd"] = spent.get(run["id"], 0.0)
        run["alive"] = run["status"] == "running" and pid_alive(run["pid"])
    return mark_stale(db.conn, found)  # a dead writer's run shows as `stale` (mutator/store/liveness.py)


def shown_statuses(db: sqlite_utils.Database, found: dict, rows: str, key: str) -> dict:
    """found[rows] (records naming a run by `key`, with its stored status) with a dead writer's run shown
    `stale`, as every other page shows it."""
    running = mark_stale(db.conn, stored_runs.running(db))
    shown = {r["id"]: r["status"] for r in running}
    for record in found.get(rows) or []:
        if record.get("status") == "running":
            record["status"] = shown.get(record.get(key), "running")
    return found


def run_row(db: sqlite_utils.Database, run_id: str) -> dict | None:
    run = stored_runs.run(db, run_id)
    if run:
        run["alive"] = run["status"] == "running" and pid_alive(run["pid"])
        mark_stale(db.conn, [run])
        run["config"] = loads(run["config"], {})
        run["strategy_opts"] = loads(run["strategy_opts"], {})
        run["solve"] = loads(run.get("solve"), None)   # solve phase record (runs.solve, migration v3)
        run["meta_skill"] = loads(run.get("meta_skill"), [])    # [{round, lessons, cost_usd, error}]
        launch = loads(run.get("agents"), None) or {}         # the agents the run recorded (provenance.py)
        run["dry_run"] = launch["real"] is False if "real" in launch else None   # None: not recorded
        run["fake_noise"] = launch.get("fake_noise", "off") if run["dry_run"] else None
        run["notes"] = notes_of(db, [f"run:{run_id}"]).get(f"run:{run_id}")   # run.py --annotate
        run["spend"] = run_spend(db, run_id)                    # {total, kinds}: the CLI's and Cost's figure
        run["cost_usd"] = run["spend"]["total"]
    return run


def run_detail(db: sqlite_utils.Database, run_id: str, data_dir: Path, *, window: int = 60,
               val_query_warn: int | None = None) -> dict | None:
    """The Home page's data: the run, the curve over every round (compact arrays), the round timeline
    with stages for the last `window` rounds (0 = all), and the test timeline. `val_query_warn` is the
    configured valQueryWarn, echoed on the run so the page can flag an over-queried val suite."""
    run = run_row(db, run_id)
    if run is None:
        return None
    run["val_query_warn"] = val_query_warn
    run["decided_round"] = stored_attempts.decided_round(db, run_id)
    # The curve covers every round, so this runs over the whole run: plain tuples, no per-row dicts.
    light = stored_attempts.light_with_train(db, run_id)
    rows = [dict(zip(LIGHT_NAMES, r)) for r in light]
    tests = test_runs(db, run, data_dir)
    last = light[-1][0] if light else 0
    low = last - window + 1 if window > 0 else -1
    after = D.incumbents(rows)           # the incumbent the loop stored once each round was integrated
    by_genome = D.genome_composites(rows)
    rounds: list[int] = []
    champion_s: list[float | None] = []
    best_s: list[float | None] = []
    train_s: list[float | None] = []
    incumbent_s: list[str | None] = []
    for row, (*_, t_eval, t_cost, t_steps) in zip(rows, light, strict=True):
        rnd, value = row["round"], row["composite"]
        if not rounds or rounds[-1] != rnd:
            rounds.append(rnd)
            incumbent_s.append(after.get(rnd))
            champion_s.append(by_genome.get(after.get(rnd) or ""))
            best_s.append(value)
            train_s.append(None)
        elif value is not None and (best_s[-1] is None or value > best_s[-1]):
            best_s[-1] = value
        if t_eval is not None:
            train_s[-1] = composite({"eval": t_eval, "cost": t_cost, "steps": t_steps}, run, split="train")
            if run.get("seed_models"):   # several eval models: the mean over models of each model's own
                train_s[-1] = train_composite(db, run, row["round"], row["sibling"]) or train_s[-1]
    test_s: list[float | None] = [None] * len(rounds)
    index = {rnd: i for i, rnd in enumerate(rounds)}
    for t in tests:
        if t["composite"] is not None and t["round"] in index:
            test_s[index[t["round"]]] = t["composite"]
    curve = {"round": rounds, "champion": champion_s, "best": best_s, "train": train_s, "test": test_s,
             "incumbent": incumbent_s}
    attempts = stored_attempts.window(db, run_id, low)
    ids = sorted({i for a in attempts for i in (a["val_evaluation_id"], a["train_evaluation_id"]) if i})
    evals = evaluations.by_ids(db, ids)
    for a in attempts:
        a["critic"], a["confirm"] = loads(a["critic"], None), loads(a["confirm"], None)
        a["stages"] = stages(db, a, run, evals, data_dir)
        train = evals.get(a["train_evaluation_id"]) if a["train_evaluation_id"] else None
        a["train_composite"] = composite(train, run, split="train")
        attempt_models(db, run, a)   # several eval models: each model's figures beside the mean
        a["champion_composite"] = by_genome.get(after.get(a["round"]) or "")
    D.annotate(attempts)
    mark_stopped(run, attempts)
    found = {"run": run, "attempts": attempts, "n_rounds": len(curve["round"]), "window": window,
             "curve": curve, "tests": tests}
    if run["kind"] == "aa":   # the gate's noise calibration: every copy, whatever the window
        from mutator.server import aa_view
        found["aa"] = aa_view.summary(run, stored_attempts.aa_copies(db, run_id))
    return found


def test_runs(db: sqlite_utils.Database, run: dict, data_dir: Path) -> list[dict]:
    found = mark_stale_records(db.conn, testruns.of_run(db, run["id"]),
                               lambda t: t["run_id"])   # a test run holds its run's lock (run.py)
    for t in found:
        t["report"] = loads(t.get("report"), None)   # the honest test report (mutator/validity/report.py)
        t["progress"] = None
        if t["status"] == "running":
            ev = evaluations.newest(db, t["genome_hash"], t["suite"], run["replicates"])
            seed_ev = evaluations.newest(db, run["seed_hash"], t["suite"], run["replicates"])
            t["progress"] = [p for p in (progress(seed_ev, data_dir), progress(ev, data_dir)) if p]
    return found


# ---- one attempt (Round Analysis) ------------------------------------------------------------------
def attempt_detail(db: sqlite_utils.Database, attempt_id: int, split: str,
                   data_dir: Path | None = None) -> dict | None:
    a = stored_attempts.attempt(db, attempt_id)
    if a is None:
        return None
    run = run_row(db, a["run_id"])
    a["critic"], a["gate"], a["ref_hashes"] = loads(a["critic"], None), loads(a["gate"], None), loads(
        a["ref_hashes"], [])
    a["confirm"] = confirmation(db, loads(a.get("confirm"), None), run)
    a["looks"], a["screen"] = loads(a.get("looks"), None), loads(a.get("screen"), None)   # migration _v13
    D.annotate([a])
    mark_stopped(run, [a])
    a.pop("pool_snapshot", None)
    suite = run["val"] if split == "val" else run["suite"]
    ev_id = a["val_evaluation_id"] if split == "val" else a["train_evaluation_id"]
    ev = evaluations.by_id(db, ev_id) if ev_id else None
    seed = stored_attempts.seed_evaluations(db, run["id"])
    seed_ev_id = (seed or {}).get("val_evaluation_id" if split == "val" else "train_evaluation_id")
    seed_ev = evaluations.by_id(db, seed_ev_id) if seed_ev_id else None
    parent = stored_attempts.first_of_genome(db, run["id"], a["parent_hash"]) if a["parent_hash"] else None
    # the gate's comparator and, on val, the very evaluation it read (mutator/server/gate_view.py)
    a["comparator"] = G.comparator(db, a, run)
    a["nulls"] = null_controls(db, run["id"], a["round"])   # the round's noise floor beside the gate band
    a["task_deltas"] = G.task_deltas(a)
    against = a["comparator"] or {}
    against_id = against.get("evaluation_id") if split == "val" else own_evaluation(
        db, run["id"], against.get("genome_hash"), split)
    parent_id = against_id if a["parent_hash"] and a["parent_hash"] == against.get("genome_hash") else \
        own_evaluation(db, run["id"], a["parent_hash"], split)
    parent_ev, against_ev = (evaluations.by_id(db, i) if i else None for i in (parent_id, against_id))
    a["incomplete"] = G.incomplete(db, run, a, suite) if ev is None else None
    a["skill_use"] = skill_use(db, candidate=(ev_id, a["genome_hash"]), parent=(parent_id, a["parent_hash"]),
                               data_dir=data_dir, run_id=run["id"], split=split,
                               stale=run.get("status") == "stale", attempt_id=attempt_id,
                               seed_evaluation=seed_ev_id, attempt=a)
    a["notes"] = notes_of(db, [f"attempt:{attempt_id}"]).get(f"attempt:{attempt_id}")
    figures = {}
    for name, e in (("candidate", ev), ("parent", parent_ev), ("comparator", against_ev), ("seed", seed_ev)):
        figures[name] = None if e is None or e.get("eval") is None else {
            "eval": e["eval"], "cost": e["cost"], "steps": e["steps"],
            "composite": composite(e, run, split=split), "evaluation_id": e["id"]}
        grouped = by_model(db, e["id"], run, split) if figures[name] else None
        if grouped:   # several eval models: the composite is the mean of each model's own, shown beside it
            figures[name].update(composite=mean_composite(grouped), by_model=grouped)
    # a several-model evaluation's cells are its members', each with its model ('task@model' in the grid)
    cells = G.cells_of(db, cell_sources(db, ev["id"])) if ev else []
    grid = G.test_grid(cells)
    test_names = sorted({n for per in grid.values() for n in per})
    siblings = stored_attempts.siblings(db, run["id"], a["round"])
    D.annotate(siblings)
    for s in siblings:
        del s["status"], s["error"]
    theirs = G.cells_of(db, cell_sources(db, against_id)) if against_id and split == "val" else []
    a["gate"], a["looks"] = G.safe_ints(a["gate"]), G.safe_ints(a["looks"])
    # the t statistic beside the critical value the gate stored (gate_t): Δ / SE of the stored figures
    a["gate_t_stat"] = a["delta"] / a["gate_se"] if a.get("delta") is not None and a.get("gate_se") else None
    return {"attempt": a, "run": run, "split": split, "suite": suite, "evaluation": ev, "parent": parent,
            "figures": figures, "cells": cells, "comparator_cells": theirs,
            "tests": {"names": test_names, "grid": grid}, "siblings": siblings}


def confirmation(db: sqlite_utils.Database, record: dict | None, run: dict) -> dict | None:
    """The winner's-curse check as stored (stands, salt, the fresh gate), plus the composites of both fresh
    val evaluations (new incumbent and old) so the page shows what the confirmed Δ compares."""
    if not record:
        return record
    ids = [record.get("candidate_evaluation_id"), record.get("incumbent_evaluation_id")]
    found = evaluations.by_ids(db, ids)
    record["figures"] = {}
    for name, ev_id in zip(("candidate", "incumbent"), ids):
        e = found.get(ev_id)
        record["figures"][name] = None if e is None or e["eval"] is None else {
            "eval": e["eval"], "cost": e["cost"], "steps": e["steps"],
            "composite": composite(e, run, split="val"), "evaluation_id": e["id"], "n_cells": e["n_cells"]}
    return record


def cell_row(db: sqlite_utils.Database, cell_id: int) -> dict | None:
    cell = stored_cells.cell(db, cell_id)
    if cell:
        cell["skill_use"] = loads(cell.get("skill_use"), None)
        cell["tests"] = stored_cells.cell_tests(db, cell_id)
    return cell


# ---- lineage and history -----------------------------------------------------------------------------
def lineage(db: sqlite_utils.Database, run_id: str) -> dict | None:
    """Every attempt as a node with its real edges (parent, and population's crossover refs), the champion →
    seed chain, and each verdict's reason. A genome's origin is the first attempt that produced it from a
    different parent: a CRITIC no-change attempt (genome == parent) or a repeat never becomes its origin."""
    run = run_row(db, run_id)
    if run is None:
        return None
    nodes = stored_attempts.lineage_nodes(db, run_id)
    origin: dict[str, dict] = {}
    for n in nodes:
        g = n["genome_hash"]
        if g and g not in origin and n["parent_hash"] != g:
            origin[g] = n
    chain: list[dict] = []
    seen: set[str] = set()
    cursor = run["incumbent_hash"]
    # origins only point to earlier attempts, so this ends; `seen` is a guard
    while cursor and cursor not in seen:
        seen.add(cursor)
        node = origin.get(cursor)
        chain.append({"genome_hash": cursor, "attempt_id": node["attempt_id"] if node else None,
                      "round": node["round"] if node else None,
                      "composite": node["composite"] if node else None,
                      "summary": node["summary"] if node else "",
                      "skills_touched": node["skills_touched"] if node else None})
        cursor = node["parent_hash"] if node else None
    D.annotate(nodes)
    edges = []
    for n in nodes:
        refs = n["ref_hashes"]
        n["ref_hashes"] = [] if refs in (None, "", "[]") else loads(refs, []) or []
        n["origin"] = bool(n["genome_hash"]) and origin.get(n["genome_hash"]) is n
        n["on_chain"] = n["origin"] and n["genome_hash"] in seen
        if n["parent_hash"]:
            edges.append({"attempt_id": n["attempt_id"], "from": n["parent_hash"], "kind": "parent"})
        edges += [{"attempt_id": n["attempt_id"], "from": ref, "kind": "ref"} for ref in n["ref_hashes"]]
        n.pop("error")
    return {"run": {k: run[k] for k in ("id", "kind", "strategy", "seed_hash", "incumbent_hash", "skill_name",
                                        "status")},
            "nodes": nodes, "edges": edges, "chain": chain}


# leads: 1 = the incumbent from here on
HISTORY_COLUMNS = ("id", "round", "sibling", "verdict", "composite", "eval", "cost", "steps",
                   "t_eval", "t_cost", "t_steps", "t_composite", "leads")
HISTORY_RUN = ("id", "kind", "status", "strategy", "model", "replicates", "rounds_done", "rounds_target",
               "created_at", "suite", "val", "holdout", "alive", "stale_note")


def history(db: sqlite_utils.Database, skill: str) -> list[dict]:
    """Every run of a skill as a regime: per-attempt val and train figures as compact rows
    (`columns` names them), plus the run's test measurements."""
    out = []
    for run in stored_runs.runs_of_skill(db, skill):
        # one pass over the run: the points' figures and the light columns the incumbent rule reads
        found = stored_attempts.history_rows(db, run["id"])
        light = [dict(zip(LIGHT_NAMES, row[7:])) for row in found]
        after = D.incumbents(light)
        rows = []
        for row, r in zip(found, light, strict=True):
            train_figures = {"eval": row[4], "cost": row[5], "steps": row[6]}
            train = None if row[4] is None else composite(train_figures, run, split="train")
            # leads: the row whose genome became the incumbent in its round (the seed in round 0)
            leads = (after.get(r["round"]) == r["genome_hash"]
                     and after.get(r["round"] - 1) != r["genome_hash"] and r["verdict"] in ("SEED", "KEEP"))
            rows.append([row[0], r["round"], r["sibling"], r["verdict"], r["composite"], row[1], row[2],
                         row[3], row[4], row[5], row[6], train, int(leads)])
        tests = testruns.figures_of_run(db, run["id"])
        run["alive"] = run["status"] == "running" and pid_alive(run["pid"])
        mark_stale(db.conn, [run])   # a dead writer's run is `stale` here as on every page
        out.append({"run": {k: run.get(k) for k in HISTORY_RUN},
                    "columns": HISTORY_COLUMNS, "points": rows, "tests": tests,
                    "spend": {"round": (spent := sorted({r["round"] for r in light})),
                              **spend_axis.series(db, run["id"], spent)}})
    return out


def signatures(db: sqlite_utils.Database, run_id: str | None) -> dict[str, str]:
    """Short digests that move when what a page shows moves: `runs` (the store's run list as the pickers show
    it) and `run` (one run's row, attempts, test runs and, while it runs, the live evaluations' counters)."""
    found = watched(db, [run_id] if run_id else [])
    return {"runs": found["runs"], **({"run": found["run"][run_id]} if run_id else {})}


def watched(db: sqlite_utils.Database, run_ids: list[str]) -> dict:
    """{runs: digest, run: {run id: digest}}: the signatures of several runs of one store in one read (the
    shared live stream of every tab of a browser, webpages/lib/liveworker.js)."""
    listing = stored_signatures.run_list(db)
    running = mark_stale(db.conn, stored_runs.running(db))
    # moves with no write: a writer died
    stale = {r["id"] for r in running if r["status"] == "stale"}
    out: dict = {"runs": _digest(f"{listing}|{','.join(sorted(stale))}"), "run": {}}
    for run_id in run_ids:
        row = stored_signatures.run(db, run_id)
        out["run"][run_id] = _digest((repr(row) if row else "") + f"|{run_id in stale}")
    return out


def _digest(text: str | None) -> str:
    return hashlib.sha256((text or "").encode()).hexdigest()[:12]


def is_sqlite_error(err: BaseException) -> bool:
    return isinstance(err, sqlite3.Error)
