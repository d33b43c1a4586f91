"""bench/rederive.py: every stored decision of real dry-run stores re-derives from the cells and the docs with no
mismatch, and a corrupted figure or verdict is named by its row."""

from __future__ import annotations

import importlib
import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, built_once, copy_store, keep_result, run_cli

# by the package name: bench/ itself on sys.path would make bench/strategies.py shadow the strategies package
# for every module this test worker imports later
rederive = importlib.import_module("bench.rederive")
rm = importlib.import_module("bench.rederive_maths")

TRAIN_VAL = ("--suite", "clean-train", "--val", "clean-val")


def _run_id(data: Path) -> str:
    with sqlite3.connect(data / "mutator.db") as conn:
        return conn.execute("select id from runs").fetchone()[0]


@pytest.fixture(scope="session")
def population_store(tmp_path_factory) -> Path:
    """A population run (3 rounds of 3 children, pool 3) under the empirical-Bayes keep rule; one replicate, so
    every gate is a full-val one that joins the pool and eb reaches its empirical prior."""
    def build(folder: Path) -> None:
        keep_result(folder, run_cli(*TRAIN_VAL, "--rounds", "3", "--replicates", "1", "--strategy", "population",
                                    "--strategy-opts", '{"pool": 3, "children": 3}', "--keep-rule", "eb",
                                    "--data-dir", str(folder / "data")))
    return built_once(tmp_path_factory, "rederive-population", build) / "data"


@pytest.fixture(scope="session")
def sequential_tested_store(tmp_path_factory) -> Path:
    """A sequential run of 6 waves (one round), then a test run at 6 replicates: the harm table can flag tasks."""
    def build(folder: Path) -> None:
        data = folder / "data"
        keep_result(folder, run_cli(*TRAIN_VAL, "--holdout", "clean-test", "--rounds", "1", "--replicates", "6",
                                    "--data-dir", str(data)))
        keep_result(folder, run_cli("--test-run", _run_id(data), "--data-dir", str(data)))
    return built_once(tmp_path_factory, "rederive-sequential-tested", build) / "data"


@pytest.fixture(scope="session")
def branching_models_store(tmp_path_factory) -> Path:
    """Branching over two eval models: Student t, model gate 'each', the strict keep rule, --confirm and a
    null control a round."""
    def build(folder: Path) -> None:
        keep_result(folder, run_cli(*TRAIN_VAL, "--rounds", "2", "--replicates", "2", "--strategy", "branching",
                                    "--strategy-opts", '{"width": 2}', "--gate-method", "t", "--confirm",
                                    "--null-controls", "1", "--model", "claude-haiku-4-5,claude-sonnet-4-5",
                                    "--model-gate", "each", "--keep-rule", "strict",
                                    "--data-dir", str(folder / "data")))
    return built_once(tmp_path_factory, "rederive-branching-models", build) / "data"


# what each store must have re-derived (a check group of the printed table), beyond 0 mismatches
EXPECTED = {
    "demo_tested": ["screen: verdict", "look: flip", "look: tie", "look: decision", "verdict: KEEP",
                    "harm vs seed: p_worse", "harm vs none: verdict"],
    "population_store": ["verdict: KEEP (pool cut)", "verdict: incumbent = pool leader", "look: keep_rule",
                         "screen: verdict"],
    "sequential_tested_store": ["look: z", "harm vs seed: mdh", "harm vs seed: verdict"],
    "branching_models_store": ["look: model_gate", "look: keep_rule", "confirm: stands", "confirm: keep_rule",
                               "null control: call",
                               "verdict: KEEP"],
}


@pytest.mark.parametrize("store", sorted(EXPECTED))
def test_every_stored_decision_rederives_with_no_mismatch(store, request) -> None:
    found = request.getfixturevalue(store)
    data = found[0] if isinstance(found, tuple) else found
    tally = rederive.rederive(data / "mutator.db")
    assert tally.mismatches == []
    assert not tally.skipped
    missing = [group for group in EXPECTED[store] if group not in tally.groups]
    assert missing == [], sorted(tally.groups)


def test_the_population_store_reaches_the_empirical_prior(population_store) -> None:
    """eb's shrinkage (5+ comparisons) is re-derived, not only its no-prior fallback."""
    with sqlite3.connect(population_store / "mutator.db") as conn:
        gates = [json.loads(g) for (g,) in conn.execute("select gate from attempts where gate is not null")]
    histories = [g["keep_rule"]["history"] for g in gates if "keep_rule" in g]   # an early stop has none
    assert max(histories) >= 5


def test_the_harm_table_flags_tasks_it_rederives(sequential_tested_store) -> None:
    with sqlite3.connect(sequential_tested_store / "mutator.db") as conn:
        report = json.loads(conn.execute("select report from test_runs").fetchone()[0])
    harm = report["harm"]["seed"]
    assert harm["can_flag"] and harm["mdh"] > 0
    assert {row["verdict"] for row in harm["tasks"]} >= {"worse", "better"}


def _corrupt(data: Path, sql: str, args=()) -> None:
    with sqlite3.connect(data / "mutator.db") as conn:
        conn.execute(sql, args)


def _json_edit(data: Path, table: str, column: str, row_id: int, edit) -> None:
    with sqlite3.connect(data / "mutator.db") as conn:
        value = json.loads(conn.execute(f"select {column} from {table} where id = ?", [row_id]).fetchone()[0])
        edit(value)
        conn.execute(f"update {table} set {column} = ? where id = ?", [json.dumps(value), row_id])


def test_a_corrupted_figure_or_verdict_is_named_by_its_row(demo_tested, tmp_path) -> None:
    data = copy_store(demo_tested[0], tmp_path / "data")
    run_id = _run_id(data)
    with sqlite3.connect(data / "mutator.db") as conn:
        kept = conn.execute("select id, round from attempts where verdict = 'KEEP' and json_array_length(looks) "
                            ">= 2 order by id").fetchone()
        screened = conn.execute("select id, round from attempts where verdict = 'SCREENED'").fetchone()
        task = json.loads(conn.execute("select report from test_runs").fetchone()[0])["harm"]["seed"]["tasks"][0]
    looks_edit = lambda looks: looks[0]["gate"].update(threshold=looks[0]["gate"]["threshold"] + 1e-6)  # noqa: E731
    _json_edit(data, "attempts", "looks", kept[0], looks_edit)
    _corrupt(data, "update attempts set verdict = 'REJECT', status = 'rejected' where id = ?", [kept[0]])
    _json_edit(data, "attempts", "screen", screened[0], lambda s: s.update(decision=None))
    _json_edit(data, "test_runs", "report", 1,
               lambda r: r["harm"]["seed"]["tasks"][0].update(verdict="worse"))
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "rederive.py"), str(data / "mutator.db")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 1, result.stdout[-2000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("MISMATCH")]
    expected = [
        f"{run_id} attempt {kept[0]} (round {kept[1]}.0) look 1: gate.threshold",
        f"{run_id} attempt {kept[0]} (round {kept[1]}.0) verdict: KEEP stored False re-derived True",
        f"{run_id} attempt {screened[0]} (round {screened[1]}.0) screen: decision stored None re-derived 'loss'",
        f"{run_id} test run 1 harm vs seed: {task['task']}.verdict stored 'worse' re-derived '{task['verdict']}'",
    ]
    for want in expected:
        assert any(line.startswith(f"MISMATCH {want}") for line in lines), (want, lines)
    assert len(lines) == len(expected), "\n".join(lines)
    assert f"{len(expected)} mismatches" in result.stdout


def test_a_look_at_the_old_grid_z_is_a_mismatch(demo_tested, tmp_path) -> None:
    """A store whose last look used the grid solver's z (1.0586727, before the exact solve) is flagged: the
    re-derived z is 1.0585609."""
    data = copy_store(demo_tested[0], tmp_path / "data")
    with sqlite3.connect(data / "mutator.db") as conn:
        attempt = conn.execute("select id from attempts where looks is not null order by id").fetchone()[0]
    _json_edit(data, "attempts", "looks", attempt, lambda looks: looks[-1].update(z=1.0586726980153496))
    tally = rederive.rederive(data / "mutator.db")
    assert [m for m in tally.mismatches if ": z stored 1.05867" in m] != []
    assert rm.last_z(4, 1.0, 2.0) == pytest.approx(1.0585608931865318, abs=1e-6)


def test_the_rederiver_imports_nothing_of_the_code_it_checks() -> None:
    probe = ("import sys; import bench.rederive; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mutator', 'eval', 'strategies')))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def _figures(values: list[float], costs: list[float]) -> dict:
    from mutator.scoring.score import TaskFigures
    return {f"t{i:02d}": TaskFigures(f"t{i:02d}", eval=v - c, cost=0.0, steps=0.0, composite=v, n_cells=1,
                                     cost_term=c) for i, (v, c) in enumerate(zip(values, costs))}


def _deltas(kind: str, n: int, rng: random.Random) -> list[float]:
    if kind == "normal":
        return [rng.gauss(0, 0.1) for _ in range(n)]
    if kind == "tied":
        return [0.0] * (n - 2) + [rng.gauss(0, 0.1), rng.gauss(0, 0.1)]
    if kind == "float-noise":     # ties in exact arithmetic, 5.6e-17 apart in floats
        return [-0.25] + [(0.1 + 0.2 - 0.3) * (i % 2) for i in range(1, n)]
    if kind == "zero":
        return [0.0] * n
    return [rng.choice((-0.25, 0.0, 0.25)) for _ in range(n)]


def test_the_maths_agrees_with_the_gate_on_constructed_deltas() -> None:
    """The edge cases a store rarely holds: deltas tying up to float noise, every shifted delta 0 (with and
    without a prior), more than 12 tasks (sampled patterns), Student t, minImprovement > 0."""
    from mutator.scoring.gate import compare
    from mutator.scoring.score import Comparison
    rng = random.Random(7)
    cases = 0
    for n in (2, 3, 4, 6, 8, 12, 13, 16):
        for kind in ("normal", "tied", "float-noise", "zero", "discrete"):
            for prior in ([], [(8, 0.05), (4, 0.12)]):
                inc = [rng.random() for _ in range(n)]
                d = _deltas(kind, n, rng)
                cand = [a + b for a, b in zip(inc, d)]
                costs = [rng.choice((0.0, -0.01)) for _ in range(n)]
                for method, m, z in (("signflip", 0.0, 1.0), ("signflip", 0.01, 2.0), ("t", 0.0, 1.0)):
                    code = compare(_figures(cand, costs), _figures(inc, [0.0] * n),
                                   prior=[Comparison(k, s) for k, s in prior], min_improvement=m, gate_z=z,
                                   method=method, tie_rule="noAddedCost")
                    mine = rm.gate({f"t{i:02d}": (v, c) for i, (v, c) in enumerate(zip(cand, costs))},
                                   {f"t{i:02d}": (v, 0.0) for i, v in enumerate(inc)}, prior=prior, m=m, z=z,
                                   method=method, tie_rule="noAddedCost")
                    for key in ("delta", "s_r", "s", "df", "se", "t", "threshold", "keep"):
                        assert getattr(code, key) == pytest.approx(mine[key], rel=1e-9, abs=1e-12), \
                            (kind, n, prior, method, key)
                    assert (code.flip is None) == (mine["flip"] is None)
                    if code.flip:
                        for key in ("below", "at", "rho", "u", "patterns", "sample_seed", "position"):
                            assert code.flip[key] == pytest.approx(mine["flip"][key], abs=1e-12), (kind, n, key)
                    cases += 1
    assert cases == 8 * 5 * 2 * 3


def test_float_noise_deltas_take_the_sd_fallback() -> None:
    """Deltas that tie in exact arithmetic but differ by ~1e-17 in floats: the MAD is float noise, so s_r is
    SD/c4 (not a MAD of 1e-17 that would make t ~1e14)."""
    import numpy as np
    d = np.array([-0.25, 0.1 + 0.2 - 0.3, 0.0, 0.1 + 0.2 - 0.3, 0.0])
    s_r, how, factor = rm.scale(d)
    assert how == "sd" and s_r == pytest.approx(float(np.std(d, ddof=1)) / rm.c4(5))
