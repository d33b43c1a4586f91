"""The winner's-curse guard and val accounting, on the demo; the guard under the run's keep rule."""

from __future__ import annotations

import importlib
import io
import json
import sqlite3
import sys
import tarfile
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
        # the run's keep rule decides (positive, the default): Δ above minImprovement
        assert fresh["keep_rule"]["rule"] == "positive" and fresh["keep"] == record["stands"]
        assert record["stands"] == (fresh["delta"] > fresh["keep_rule"]["bar"] == fresh["min_improvement"])
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


def rederived(data: Path) -> int:
    """bench/rederive.py over the store, with no mismatch: how many keep-rule figures of confirmations it
    re-derived (the lenient gate's: one a confirmation, that none is stored)."""
    tally = importlib.import_module("bench.rederive").rederive(data / "mutator.db")
    assert tally.mismatches == [] and not tally.skipped and tally.groups["confirm: stands"][1] == 0
    return tally.groups.get("confirm: keep_rule", [0])[0]


def seed_confirmed(tmp_path: Path, keep_rule: str) -> tuple[Loop, str]:
    """Constructed: round 1's candidate is kept on val (Δ +0.0790), then both fresh evaluations measure the
    seed, so the confirmed Δ is exactly 0 with SE 0 (no earlier comparison to pool; method t): on the lenient
    gate's threshold (0 = minImprovement − t·0, a keep) and not above minImprovement (positive rejects)."""
    settings = load_settings({"data_dir": tmp_path / "data", "rounds": 1, "replicates": 1, "confirm": True,
                              "keep_rule": keep_rule, "gate_method": "t", "min_improvement": 0.0})
    suites = Suites(train=load_suite(ROOT / "suites" / "clean-train"), val=load_suite(ROOT / "suites" / "clean-val"))
    agents = Agents(build_argv=(sys.executable, str(ROOT / "fakes" / "fake_agent.py")), build_id="fake",
                    mutator_argv=(sys.executable, str(ROOT / "fakes" / "fake_mutator.py")), mutator_id="fake")
    out = io.StringIO()
    loop = Loop(settings, suites, agents, NoneLauncher(), make_strategy("greedy", {}), progress=Progress(out))
    real = loop.session.evaluator.evaluate

    def evaluate(genome_dir, genome_hash, skill_name, suite, *, label, contract=None, price=None, only=None,
                 run=True):
        if contract is not None and contract.salt.startswith("confirm"):
            seed = loop.session.run()["seed_hash"]
            genome_dir, genome_hash = loop.session.genomes.path(seed), seed
        return real(genome_dir, genome_hash, skill_name, suite, label=label, contract=contract, price=price,
                    only=only, run=run)

    loop.session.evaluator.evaluate = evaluate
    loop.execute()
    return loop, out.getvalue()


def confirmed_gate(keep: bool) -> dict:
    """The fresh gate's figures both constructions share (the lenient gate's own; deltas aside)."""
    return {"delta": 0.0, "delta_cost": 0.0, "delta_eval": 0.0, "delta_steps": 0.0, "df": 7, "flip": None,
            "gate_z": 1.0, "keep": keep, "method": "t", "min_improvement": 0.0, "n": 8, "pooling": "mean",
            "s": 0.0, "s_r": 0.0, "se": 0.0, "threshold": 0.0, "scale_method": "sd"}


def test_confirmation_applies_the_runs_keep_rule_positive_overturns_what_lenient_keeps(tmp_path: Path) -> None:
    """Under keep rule positive the fresh Δ 0 is not above minImprovement 0: the keep is overturned (REJECT),
    the rule's figures stored in the confirm record's gate and named in the words. (The old code applied the
    lenient gate here: the keep stood.)"""
    loop, out = seed_confirmed(tmp_path, "positive")
    rows = [dict(r) for r in loop.session.db.query("select * from attempts order by round")]
    first = json.loads(rows[1]["gate"])
    assert rows[1]["delta"] > 0 and first["keep_rule"]["rule"] == "positive" and first["keep"] is True
    record = json.loads(rows[1]["confirm"])
    gate = record.pop("gate")
    assert record == {"stands": False, "candidate_evaluation_id": record["candidate_evaluation_id"],
                      "incumbent_evaluation_id": record["incumbent_evaluation_id"],
                      "salt": f"confirm:{loop.session.run_id}:1"}
    assert {k: gate[k] for k in confirmed_gate(False)} == confirmed_gate(False)
    assert gate["keep_rule"] == {"rule": "positive", "bar": 0.0, "keep": False, "gate_keep": True}
    error = "keep overturned by confirmation: fresh Δ +0.0000 ≤ minImprovement +0.0000 under keep rule positive"
    assert rows[1]["verdict"] == "REJECT" and rows[1]["status"] == "rejected"
    assert rows[1]["error"] == error and rows[1]["reason"] == "rejected: " + error
    assert ("  confirmation on fresh val replicates: Δ +0.0000 ≤ minImprovement +0.0000 under keep rule positive "
            "→ OVERTURNED") in out.splitlines()
    assert loop.session.run()["incumbent_hash"] == rows[0]["genome_hash"] and rows[1]["train_evaluation_id"] is None
    assert json.loads(loop.session.run()["config"])["confirm_rule"] == "positive"
    assert rederived(tmp_path / "data") == 4    # the overturn re-derives: rule, bar, keep and gate_keep


def test_a_lenient_run_confirms_as_before(tmp_path: Path) -> None:
    """The same construction under keep rule lenient: the Δ on the gate's threshold keeps, the record holds no
    keep_rule figures and the words are the old ones (the old code stores and says exactly this)."""
    loop, out = seed_confirmed(tmp_path, "lenient")
    rows = [dict(r) for r in loop.session.db.query("select * from attempts order by round")]
    record = json.loads(rows[1]["confirm"])
    gate = record.pop("gate")
    assert record == {"stands": True, "candidate_evaluation_id": record["candidate_evaluation_id"],
                      "incumbent_evaluation_id": record["incumbent_evaluation_id"],
                      "salt": f"confirm:{loop.session.run_id}:1"}
    assert {k: gate[k] for k in confirmed_gate(True)} == confirmed_gate(True) and "keep_rule" not in gate
    assert rows[1]["verdict"] == "KEEP" and rows[1]["error"] is None
    assert rows[1]["reason"] == ("kept: Δ +0.0790 vs gate threshold -0.0796 (Δ at or above it); the keep stands "
                                 "on fresh val replicates")
    assert "  confirmation on fresh val replicates: Δ +0.0000 vs threshold +0.0000 → the keep stands" in out.splitlines()
    config = json.loads(loop.session.run()["config"])
    assert "confirm_rule" not in config and "keep_rule" not in config and config["confirm"] is True
    assert loop.session.run_id == "run-8ed01f2108c6"    # the id the old code gives this run
    assert rederived(tmp_path / "data") == 1    # re-derived: no keep_rule figures stored


def confirm_rows(data: Path) -> tuple[int, list[tuple], list[tuple]]:
    db = sqlite3.connect(data / "mutator.db")
    try:
        return (db.execute("select count(*) from cells").fetchone()[0],
                db.execute("select id, config from runs").fetchall(),
                db.execute("select round, verdict, confirm from attempts order by round").fetchall())
    finally:
        db.close()


def test_a_store_made_before_confirm_applied_the_keep_rule_resumes_with_no_cell_as_it_was_made(tmp_path):
    """A store of main 6715848 (keep rule positive, --confirm --replicates 2 --rounds 1: round 1 KEEP, its keep
    confirmed by the lenient gate) is found again under its own id: 0 cells, the same records, said so; going
    on, its confirmations keep the lenient gate."""
    with tarfile.open(Path(__file__).with_name("fixtures") / "store-6715848-confirm.tgz") as tar:
        tar.extractall(tmp_path, filter="data")
    data = tmp_path / "data"
    args = ("--suite", "clean-train", "--val", "clean-val", "--replicates", "2", "--confirm", "--data-dir",
            str(data))
    cells, runs, rows = confirm_rows(data)
    (old_id, config), = runs
    assert old_id == "run-795537eb4800" and json.loads(config)["keep_rule"] == "positive"
    assert "confirm_rule" not in json.loads(config) and json.loads(config)["confirm"] is True
    assert [(r, v) for r, v, _ in rows] == [(0, "SEED"), (1, "KEEP")]
    assert "keep_rule" not in json.loads(rows[1][2])["gate"]

    again = run_cli(*args, "--rounds", "1")
    assert again.returncode == 0, again.stderr[-3000:]
    assert (f"{old_id} was stored before --confirm re-checked a keep under the run's keep rule: it resumes as it "
            "was made (keep rule 'positive', each keep confirmed by the lenient gate: it stands unless a decisive "
            "loss on fresh val replicates; a new --data-dir starts a run whose --confirm applies keep rule "
            "'positive')") in again.stderr
    assert "0 cells run by this command" in again.stdout and confirm_rows(data) == (cells, runs, rows)

    more = run_cli(*args, "--rounds", "2")        # round 2 KEEP, confirmed by the lenient gate as it was made
    assert more.returncode == 0, more.stderr[-3000:]
    _, runs_after, rows = confirm_rows(data)
    assert runs_after == runs and [(r, v) for r, v, _ in rows[:3]] == [(0, "SEED"), (1, "KEEP"), (2, "KEEP")]
    record = json.loads(rows[2][2])
    assert "keep_rule" not in record["gate"] and record["stands"] is record["gate"]["keep"] is True
    assert "confirmation on fresh val replicates: Δ +0.0614 vs threshold -0.0257 → the keep stands" in more.stderr
    assert rederived(data) == 2                 # both confirmations re-derive under the lenient gate
