"""Several eval models on the dashboard: each model's figures beside the mean, from the store alone.

A group evaluation (evaluations.members) is scored model by model against the seed on that model
(runs.seed_models); its composite is the mean over models. Pure reads; never writes.
"""

from __future__ import annotations

import json

import sqlite_utils

from mutator.scoring.score import Weights, composite
from mutator.store.queries import attempts, evaluations
from mutator.store.queries.evaluations import members


def _loads(text: str | None) -> dict:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def composite_of(row: dict, run: dict, cost_norm: float | None, steps_norm: float | None) -> float:
    """A composite from an evaluation's per-cell means (eval, cost, steps) and the seed's normalisers, by the
    one function the loop scores with (mutator/scoring/score.py)."""
    weights = Weights.of_run(run)
    return composite(row["eval"], row["cost"] or 0, row["steps"] or 0, weights, cost_norm, steps_norm)[0]


def by_model(db: sqlite_utils.Database, evaluation_id: int | None, run: dict,
             split: str) -> dict[str, dict] | None:
    """{model: {eval, cost, steps, composite, evaluation_id}} of a group evaluation, each model against the
    seed on that model; None for a one-model evaluation or when a member has no figures yet."""
    parts = members(db, evaluation_id)
    if not parts:
        return None
    norms = {m: (c, s) for m, c, s in _loads(run.get("seed_models")).get(split, [])}
    out = {}
    for model, member in parts.items():
        row = evaluations.figures(db, member)
        if row is None:
            return None
        cost_norm, steps_norm = norms.get(model, (0.0, 0.0))
        out[model] = {**row, "composite": composite_of(row, run, cost_norm, steps_norm),
                      "evaluation_id": member}
    return out


def mean_composite(figures: dict[str, dict]) -> float:
    return sum(f["composite"] for f in figures.values()) / len(figures)


def cell_sources(db: sqlite_utils.Database, evaluation_id: int) -> list[tuple[str, int]]:
    """[(model, evaluation id)] whose cells make up this evaluation: its members, or itself ('' model)."""
    return list(members(db, evaluation_id).items()) or [("", evaluation_id)]


def train_composite(db: sqlite_utils.Database, run: dict, round_no: int, sibling: int) -> float | None:
    """The mean over models of an attempt's train evaluation (the curve's train point)."""
    train = attempts.train_evaluation_id(db, run["id"], round_no, sibling)
    grouped = by_model(db, train, run, "train") if train else None
    return mean_composite(grouped) if grouped else None


def attempt_models(db: sqlite_utils.Database, run: dict, attempt: dict) -> None:
    """Set attempt['models'] = {model: {val, train, delta}} (None for a one-model run) and its train composite
    to the mean over models."""
    attempt["models"] = None
    if not run.get("seed_models"):
        return
    val = by_model(db, attempt["val_evaluation_id"], run, "val") or {}
    train = by_model(db, attempt["train_evaluation_id"], run, "train")
    if train:
        attempt["train_composite"] = mean_composite(train)
    deltas = _loads(attempts.gate_text(db, attempt["id"])).get("by_model") or {}
    attempt["models"] = {m: {"val": f, "train": (train or {}).get(m), "delta": deltas.get(m, {}).get("delta")}
                         for m, f in val.items()} or None
