"""The dashboard's run detail and round analysis with several eval models: each model's figures beside the
mean (the mean re-derived from each model's own), the cells of every model, and a test run's control."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mutator.server import queries
from mutator.store.db import connect_readonly, loads
from tests.conftest import built_once, run_cli

TWO = ("claude-haiku-4-5", "claude-sonnet-4-5")


@pytest.fixture(scope="session")
def two_model_store(tmp_path_factory) -> tuple[Path, str]:
    """A two-model run and its test run, built once per test session; the tests only read it."""
    data = built_once(tmp_path_factory, "two-models", _build_two_models) / "data"
    return data, (data.parent / "run_id").read_text()


def _build_two_models(folder: Path) -> None:
    data = folder / "data"
    done = run_cli("--suite", "clean-train", "--val", "clean-val", "--holdout", "clean-test", "--rounds", "1",
                   "--replicates", "1", "--model", ",".join(TWO), "--data-dir", str(data))
    assert done.returncode == 0, done.stderr[-2000:]
    run_id = re.search(r"Run (run-[0-9a-f]+)", done.stdout).group(1)
    tested = run_cli("--test-run", run_id, "--data-dir", str(data))
    assert tested.returncode == 0, tested.stderr[-2000:]
    assert "champion vs none" in tested.stdout
    (folder / "run_id").write_text(run_id)
    # what the CLI printed (the browser test reads it)
    (folder / "cli.txt").write_text(done.stdout + tested.stdout)


def test_run_detail_shows_each_model_beside_the_mean(two_model_store) -> None:
    data, run_id = two_model_store
    db = connect_readonly(data / "mutator.db")
    detail = queries.run_detail(db, run_id, data)
    candidate = detail["attempts"][1]
    models = candidate["models"]
    assert list(models) == list(TWO)
    assert candidate["composite"] == pytest.approx(sum(m["val"]["composite"] for m in models.values()) / 2)
    assert candidate["train_composite"] == pytest.approx(
        sum(m["train"]["composite"] for m in models.values()) / 2)
    gate = loads(db["attempts"].get(candidate["id"])["gate"])
    assert candidate["delta"] == pytest.approx(sum(m["delta"] for m in models.values()) / 2)
    assert ({m: models[m]["delta"] for m in TWO}
            == {m: pytest.approx(gate["by_model"][m]["delta"]) for m in TWO})
    assert detail["curve"]["train"][1] == pytest.approx(candidate["train_composite"])
    test = detail["tests"][0]["report"]
    assert test["splits"]["test"]["n_tasks"] == 16                   # clean-test: 8 tasks x 2 models
    assert (test["control"]["champion"]["n_tasks"] == 16
            and test["control"]["seed"]["delta"]["mean"] is not None)
    # each model's own test Δ beside the mean
    per_model = test["splits"]["test"]["by_model"]
    assert list(per_model) == list(TWO) and all(m["n_tasks"] == 8 for m in per_model.values())
    assert test["splits"]["test"]["delta"]["mean"] == pytest.approx(
        sum(m["delta"]["mean"] for m in per_model.values()) / 2)


def test_round_analysis_has_every_models_cells_and_figures(two_model_store) -> None:
    data, run_id = two_model_store
    db = connect_readonly(data / "mutator.db")
    attempt = next(iter(db.query("select id from attempts where run_id = ? and round = 1", [run_id])))
    found = queries.attempt_detail(db, attempt["id"], "val")
    figures = found["figures"]["candidate"]
    assert set(figures["by_model"]) == set(TWO)
    assert figures["composite"] == pytest.approx(
        sum(f["composite"] for f in figures["by_model"].values()) / 2)
    assert len(found["cells"]) == 16 and {c["model"] for c in found["cells"]} == set(TWO)
    assert all("@" in task for task in found["tests"]["grid"]) and len(found["tests"]["grid"]) == 16
    seed = found["figures"]["seed"]["by_model"]
    # the seed vs itself
    assert all(f["composite"] == pytest.approx(f["eval"] - 0.1 - 0.02) for f in seed.values())
