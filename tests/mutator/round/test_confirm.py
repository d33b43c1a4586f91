"""The winner's-curse guard and val accounting, on the demo."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from eval.suite import load_suite
from mutator.config import load_settings
from mutator.round.loop import Loop
from mutator.round.progress import Progress
from mutator.round.session import Agents, Suites
from mutator.store.db import connect_readonly
from sandbox.none import NoneLauncher
from strategies import make_strategy
from tests.conftest import ROOT, run_cli


def test_confirmations_are_recorded_and_consistent(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run_cli("--suite", "clean-train", "--val", "clean-val", "--rounds", "2", "--replicates", "1",
                     "--confirm", "--data-dir", str(data))
    assert result.returncode == 0, result.stderr
    db = connect_readonly(data / "mutator.db")
    rows = [dict(r) for r in db.query("select * from attempts where round > 0 order by round")]
    confirmed = [(row, json.loads(row["confirm"])) for row in rows if row["confirm"]]
    assert confirmed and all(row["verdict"] in ("KEEP", "REJECT") for row, _ in confirmed)
    for row, record in confirmed:
        fresh = record["gate"]
        assert record["stands"] == (fresh["delta"] >= fresh["threshold"])
        assert (row["verdict"] == "KEEP") == record["stands"]
        salts = {json.loads(r["contract"])["salt"] for r in db.query(
            "select contract from evaluations where id in (?, ?)",
            [record["candidate_evaluation_id"], record["incumbent_evaluation_id"]])}
        assert salts == {record["salt"]} and record["salt"].endswith(f":{row['round']}")
    run = dict(next(iter(db.query("select * from runs"))))
    assert run["confirm"] == 1 and run["val_queries"] == len(rows) + 2 * len(confirmed)   # the seed's baseline is no query
    assert f"val queried by {run['val_queries']} candidate evaluations" in result.stdout
    assert f"{len(confirmed)} keep(s) re-checked on fresh val replicates" in result.stdout


def test_a_keep_that_does_not_replicate_is_overturned(tmp_path: Path) -> None:
    """Constructed: the fresh evaluations both measure the seed, so the confirmed Δ is exactly 0 and
    fails a gate of minImprovement 0.001 that the candidate's first evaluation passed."""
    settings = load_settings({"data_dir": tmp_path / "data", "rounds": 1, "replicates": 1, "confirm": True,
                              "gate_z": 0.0, "min_improvement": 0.001})
    suites = Suites(train=load_suite(ROOT / "suites" / "clean-train"), val=load_suite(ROOT / "suites" / "clean-val"))
    agents = Agents(build_argv=(sys.executable, str(ROOT / "fakes" / "fake_agent.py")), build_id="fake",
                    mutator_argv=(sys.executable, str(ROOT / "fakes" / "fake_mutator.py")), mutator_id="fake")
    loop = Loop(settings, suites, agents, NoneLauncher(), make_strategy("greedy", {}),
                progress=Progress(open("/dev/null", "w")))
    real = loop.session.evaluator.evaluate

    def evaluate(genome_dir, genome_hash, skill_name, suite, *, label, contract=None, price=None, only=None,
                 run=True):
        if contract is not None and contract.salt.startswith("confirm"):
            seed = loop.session.run()["seed_hash"]
            return real(loop.session.genomes.path(seed), seed, skill_name, suite, label=label, contract=contract, price=price,
                        only=only, run=run)
        return real(genome_dir, genome_hash, skill_name, suite, label=label, contract=contract, price=price,
                    only=only, run=run)

    loop.session.evaluator.evaluate = evaluate
    loop.execute()
    rows = [dict(r) for r in loop.session.db.query("select * from attempts order by round")]
    record = json.loads(rows[1]["confirm"])
    assert rows[1]["delta"] > 0.001  # the first evaluation passed the gate ...
    assert record["gate"]["delta"] == 0.0 and record["stands"] is False  # ... the fresh one did not
    assert rows[1]["verdict"] == "REJECT" and "keep overturned by confirmation" in rows[1]["error"]
    assert rows[1]["train_evaluation_id"] is None
    assert loop.session.run()["incumbent_hash"] == rows[0]["genome_hash"]
