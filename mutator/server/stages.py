"""Per-stage progress of an attempt (mutation -> critic -> build -> grading -> score), derived from its row
and the counters of the evaluation in progress."""

from __future__ import annotations

from pathlib import Path

import sqlite_utils

from mutator.store.queries import evaluations


def _started_cells(data_dir: Path, key: str) -> int:
    """Cells whose build has begun: their dir exists under evals/<key>/ (only read for a live evaluation)."""
    root = data_dir / "evals" / key
    try:
        return sum(1 for p in root.iterdir() if p.is_dir())
    except OSError:
        return 0


def progress(ev: dict | None, data_dir: Path) -> dict | None:
    if ev is None:
        return None
    live = min(_started_cells(data_dir, ev["key"]), ev["n_cells"]) if ev["status"] != "done" else 0
    started = ev["n_cells"] if ev["status"] == "done" else live
    return {"evaluation_id": ev["id"], "status": ev["status"], "n_cells": ev["n_cells"],
            "n_done": ev["n_done"], "n_started": max(started, ev["n_done"]), "suite": ev["suite"]}


STOPPED = "stopped: process died"


def mark_stopped(run: dict, attempts: list[dict]) -> list[dict]:
    """A dead writer's run (`stale`, mutator/store/liveness.py): each attempt it left undecided says so
    (`stopped`), and its unfinished stages read `stopped` instead of running or pending."""
    if run.get("status") != "stale":
        return attempts
    for a in attempts:
        if a.get("verdict") is None and a.get("status") not in ("critic_rejected", "failed", "screened"):
            a["stopped"] = STOPPED
            for stage in a.get("stages") or []:
                if stage["state"] in ("running", "pending"):
                    stage.update(state="stopped", detail=(stage["detail"] + " · " if stage["detail"] else "")
                                 + "process died")
    return attempts


def stages(db: sqlite_utils.Database, attempt: dict, run: dict, evals: dict[int, dict],
           data_dir: Path) -> list[dict]:
    """mutation → critic → build → grading → score, each {stage, state, detail}; state is one of
    pending | running | done | failed | skipped. `attempt["critic"]` is the parsed JSON (None = not run)."""
    a, seed = attempt, attempt["status"] == "seed"
    critic = a["critic"]
    # an A/A copy is the seed itself: nothing mutated or reviewed
    copy = run.get("kind") == "aa" and not seed
    out: list[dict] = []
    if seed or copy:
        why = "seed" if seed else "A/A copy of the seed"
        out += [{"stage": "mutation", "state": "skipped", "detail": why},
                {"stage": "critic", "state": "skipped", "detail": why}]
    else:
        failed = a["status"] == "failed"
        out.append({"stage": "mutation", "state": "failed" if failed and not a["genome_hash"] else
                    "done" if a["genome_hash"] else "running", "detail": a["error"] if failed else ""})
        out.append({"stage": "critic", "state": "failed" if a["status"] == "critic_rejected" else
                    "done" if critic is not None else "running" if a["genome_hash"] else "pending",
                    "detail": a["error"] if a["status"] == "critic_rejected" else ""})
    ev = evals.get(a["val_evaluation_id"]) if a["val_evaluation_id"] else None
    live = a["genome_hash"] and (seed or copy or critic is not None) and a["status"] not in (
        "critic_rejected", "failed", "screened")
    if ev is None and live:
        ev = evaluations.newest(db, a["genome_hash"], run["val"], run["replicates"])
    prog = progress(ev, data_dir)
    # screened: killed before any val cell
    blocked = a["status"] in ("critic_rejected", "failed", "screened")
    if prog is None:
        state = "skipped" if blocked else "pending"
        detail = "screened out on train before val" if a["status"] == "screened" else ""
        out += [{"stage": "build", "state": state, "detail": detail}, {"stage": "grading", "state": state,
                                                                     "detail": detail}]
    else:
        # decided: an attempt stopped at an early look of val in waves leaves its evaluation partial, by
        # design
        done = prog["status"] == "done" or (a["verdict"] is not None and not seed)
        built = done or prog["n_started"] >= prog["n_cells"]
        out.append({"stage": "build", "state": "done" if built else "running",
                    "detail": f"{prog['n_started']}/{prog['n_cells']} cells started", "progress": prog})
        grading = "done" if done else "running" if prog["n_done"] else "pending"
        out.append({"stage": "grading", "state": grading,
                    "detail": f"{prog['n_done']}/{prog['n_cells']} cells graded", "progress": prog})
    if seed:
        scored = a["composite"] is not None
        out.append({"stage": "score", "state": "done" if scored else "pending",
                    "detail": "baseline" if scored else ""})
    else:
        out.append({"stage": "score", "state": "skipped" if blocked and a["status"] != "screened" else
                    "done" if a["verdict"] else
                    "running" if a["delta"] is not None else "pending",
                    "detail": f"Δ {a['delta']:+.4f} vs threshold {a['gate_threshold']:+.4f}"
                    if a["delta"] is not None else ""})
    return out
