"""Several eval models (`--model a,b`): an evaluation's cells are tasks x replicates x models.

A contract whose model is 'a,b' is a *group*: one one-model evaluation per member model, each cached
under its own key (so a group reuses the cells a one-model run of `a` already paid for), and a group row
that lists them. Pure helpers over contracts and stored figures; never runs a cell.
"""

from __future__ import annotations

import dataclasses

from eval.cells import Contract
from mutator.scoring.score import CellFigures, Normalisers, Weights, by_model
from mutator.store.db import dumps, loads


def members(contract: Contract) -> list[Contract]:
    """The one-model contracts of a (group) contract; [contract] itself for one model."""
    names = contract.model.split(",")
    if len(names) == 1:
        return [contract]
    return [dataclasses.replace(contract, model=name) for name in names]


def is_group(contract: Contract) -> bool:
    return "," in contract.model


def first_model(model: str) -> str:
    """The model a group is priced by where one price is wanted (each member cell is priced by its own)."""
    return model.split(",")[0]


def seed_columns(val: Normalisers, train: Normalisers) -> dict:
    """The run's per-model seed normalisers as stored (runs.seed_models); {} for one model."""
    if not val.by_model:
        return {}
    return {"seed_models": dumps({"val": [list(r) for r in val.by_model],
                                  "train": [list(r) for r in train.by_model]})}


def stored_normalisers(run: dict, split: str) -> Normalisers:
    """The seed normalisers a run stored for 'val' or 'train' (per model when it has several)."""
    cost, steps = (("seed_val_cost", "seed_val_steps") if split == "val" else ("seed_cost", "seed_steps"))
    rows = (loads(run.get("seed_models"), {}) or {}).get(split) or []
    return Normalisers(run.get(cost) or 0.0, run.get(steps) or 0.0, by_model=tuple(tuple(r) for r in rows))


def model_figures(cells: list[CellFigures], weights: Weights, norm: Normalisers) -> dict[str, dict]:
    """{model: {composite, eval, cost, steps, n_cells}} beside the mean ({} for one model)."""
    return {m: {"composite": s.composite, "eval": s.eval, "cost": s.cost, "steps": s.steps,
                "n_cells": s.n_cells}
            for m, s in by_model(cells, weights, norm).items()}
