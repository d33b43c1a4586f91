"""bench/strategies.py's summary figures: rollouts-to-90% with censored seeds, the paired significance line, one
line's search staying inside its rollout budget, and the same table under any PYTHONHASHSEED."""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys

import pytest

from mutator.scoring.score import CellFigures
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("strategies_bench", ROOT / "bench" / "strategies.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def test_censored_seeds_count_in_the_median(bench):
    assert bench.censored_median([100, 200, None], 640) == "200"
    assert bench.censored_median([100, None, None], 640) == "> 640"     # most never got there
    assert bench.censored_median([100, 300, None, None], 640) == "> 640"
    assert bench.censored_median([100, 300, 500, None], 640) == "400"


def test_significance_is_paired_over_seeds_and_holm_adjusted(bench):
    out = lambda v: bench.Outcome([(0, v)], v, v, 0, 0.0)  # noqa: E731
    rows = {"good": [out(0.5 + i / 100) for i in range(12)], "bad": [out(0.1 + i / 100) for i in range(12)],
            "same": [out(0.1 + i / 100) for i in range(12)]}
    found = bench.significant(rows, lambda o: o.test_true)
    assert found[0].startswith("good > ") and len(found) == 2        # good beats both; bad vs same all tie
    assert bench.wilcoxon_p([0.1, 0.2], [0.1, 0.2]) == 1.0


def test_a_search_never_passes_its_budget(bench):
    land = bench.Landscape(random.Random(0))
    lines = {line.label: line for line in bench.LINES}
    for label in ("greedy:fixed", "pareto:seq+screen", "best-of-n"):
        outcome = bench.run_search(land, lines[label], budget=120, replicates=2, seed=0)
        assert outcome.rollouts <= 120 and sum(outcome.spent.values()) == outcome.rollouts


def test_the_screen_and_the_waves_are_the_loops_and_their_cells_are_counted(bench):
    """A screen line runs the loop's Screen (its kills are SCREENED decisions, no val cell spent on them) and a seq
    line the loop's sequential_val (a candidate rejected at an early look spends one wave of val cells)."""
    land = bench.Landscape(random.Random(1))
    lines = {line.label: line for line in bench.LINES}
    fixed = bench.Search(land, lines["greedy:fixed"], 640, 2, 1)
    both = bench.Search(land, lines["greedy:seq+screen"], 640, 2, 1)
    out_fixed, out_both = fixed.run(), both.run()
    assert (fixed.screen.tasks, fixed.gating.design.looks, both.screen.tasks, both.gating.design.looks) == (0, 1, 6, 2)
    assert out_fixed.spent.get("screen", 0) == 0 and out_both.spent["screen"] > 0
    kills = sum(killed for killed, *_ in out_both.screens)
    assert kills > 0 and out_both.decisions > out_fixed.decisions          # cheaper decisions: more of them
    screened = [g for g in both.cells["train"] if g not in both.cells["val"] and g not in both.evidence]
    # a screened genome holds its screen cells only: 6 tasks x replicate 0 per round it was screened in (a round
    # draws its own tasks; one proposed again is screened again, from the cache where the tasks are the same)
    assert 0 < len(screened) <= kills
    assert all(len(both.cells["train"][g]) >= 6 and {r for _, r in both.cells["train"][g]} == {0} for g in screened)
    # every val evaluation of the fixed line is whole; a seq line's hold one wave (8 cells) or both (16)
    assert {len(c) for c in fixed.cells["val"].values()} == {16} and {len(c) for c in both.cells["val"].values()} == {8, 16}


def run_bench(hash_seed: str, *args: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "strategies.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    return "\n".join(line for line in done.stdout.splitlines() if "Wall time" not in line)


def test_the_same_arguments_print_the_same_table_under_any_hash_seed():
    """Frozensets of rules iterate in PYTHONHASHSEED's order; every draw must walk them sorted."""
    args = ("--seeds", "2", "--seed-offset", "3", "--budget", "120",
            "--lines", "greedy:seq+screen,greedy-keepties,greedy-oracle,pareto:seq")
    first, second = run_bench("0", *args), run_bench("1", *args)
    assert first == second
    assert "2 seeds (3..4)" in first and "Landscape " in first and "simulated mutator " in first


def test_a_genome_measures_the_same_in_every_line_and_replicates_nest(bench):
    """Common random numbers: the cells depend on the seed, the split and the genome only, and replicate r is the
    same cell whether 1 or 3 replicates are drawn (so evidenceReplicates changes nothing else)."""
    land = bench.Landscape(random.Random(0))
    genome = bench.Genome({*bench.SEED_RULES, ("dates", 0), ("amounts", 2)})
    three, _ = land.cells(genome, "train", 3, stream="7")
    one, _ = land.cells(genome, "train", 1, stream="7")
    assert [c for c in three if c.replicate == 0] == one
    assert land.cells(genome, "train", 3, stream="7") == land.cells(genome, "train", 3, stream="7")
    assert land.cells(genome, "train", 3, stream="8") != (three, _)


def test_the_hashes_name_the_definitions(bench):
    assert len(bench.landscape_hash()) == 12 and len(bench.mutator_hash()) == 12
    lands = [bench.Landscape(random.Random(seed)) for seed in (0, 1)]
    assert bench.draws_hash(lands) != bench.draws_hash(lands[:1])


def test_evidence_replicates_sets_the_train_depth_only(bench):
    land = bench.Landscape(random.Random(0))
    search = bench.Search(land, bench.LINES[0], 640, 2, 0, rules=bench.Rules(evidence_replicates=1))
    search.run()
    assert {len(search.cells["train"][g]) for g in search.evidence} == {len(land.suites["train"])}
    assert {len(cells) for cells in search.cells["val"].values()} == {2 * len(land.suites["val"])}


@pytest.mark.parametrize(("gains", "kept"), [
    ((0.010, 0.030, -0.050), {"branching-nogate": 1, "branching-raw": 1}),   # the best sibling clears both rules
    ((0.010, 0.015, -0.050), {"branching-nogate": 1, "branching-raw": None}),  # Δ +0.015: > 0 but < 0.02
    ((-0.010, -0.002, -0.050), {"branching-nogate": None, "branching-raw": None}),
])
def test_the_gateless_branching_lines_keep_the_best_sibling_by_delta_alone(bench, gains, kept):
    """A constructed round: 3 siblings scoring the seed's score + gains on every val cell (same cost and turns).
    branching-nogate keeps the best sibling iff its Δ > 0, branching-raw iff Δ ≥ 0.02; neither screens nor waves,
    whatever config.json says: every child costs its 16 val cells at once and no train cell but a keep's evidence."""
    land = bench.Landscape(random.Random(0))
    seed = bench.Genome(bench.SEED_RULES)
    children = [bench.Genome({*bench.SEED_RULES, ("notes", i)}) for i in range(3)]
    score = {seed: 0.5, **{child: 0.5 + gain for child, gain in zip(children, gains, strict=True)}}
    cost, turns = land.cost(seed), land.turns(seed)
    land.cell = lambda g, _split, task, rep, **_: (CellFigures(task, rep, score[g], cost, turns, True), [])
    lines = {line.label: line for line in bench.LINES}
    for label, best in kept.items():
        search = bench.Search(land, lines[label], 640, 2, 0)
        proposals = iter(children)
        search.mutator = lambda parent, proposals=proposals, **_: (next(proposals), "op")
        search.max_calls = 3                                    # one round of branching's 3 siblings
        search.run()
        assert (search.screen.tasks, search.gating.design.looks) == (0, 1), label
        assert search.incumbent == (seed if best is None else children[best]), label
        assert {len(search.cells["val"][g]) for g in children} == {2 * len(land.suites["val"])}, label
        assert set(search.cells["train"]) == {seed} | ({children[best]} if best is not None else set()), label
        assert search.decisions == 3 and search.purpose["val"] == 3 * 2 * len(land.suites["val"]), label


def test_every_strategy_has_its_gateless_lines(bench):
    lines = {line.label: line for line in bench.LINES}
    for name, strategy, opts in bench.STRATEGIES:
        assert (lines[f"{name}-nogate"].keep, lines[f"{name}-raw"].keep) == ("positive", "raw")
        assert lines[f"{name}-nogate"].strategy == strategy and lines[f"{name}-raw"].opts == opts
    assert set(bench.GATELESS) == {label for label, line in lines.items() if line.keep in ("positive", "raw")}


def test_the_choice_rule_picks_the_best_gated_line_that_beats_every_gateless_one(bench):
    out = lambda v: bench.Outcome([(0, v)], v, v, 0, 0.0)  # noqa: E731
    base = [0.5 + i / 100 for i in range(12)]
    # differences of distinct sizes: with tied |Δ| scipy's Wilcoxon turns to a permutation test, 0.7 s a call
    jitter = [i / 1000 for i in range(12)]
    rows = {"greedy:seq": [out(v + 0.2 + j) for v, j in zip(base, jitter)],
            "branching:seq": [out(v + 0.3 + j) for v, j in zip(base, jitter)],
            "pareto:fixed": [out(v + 0.8 + j if i % 2 else v - 0.1 - j)                  # best mean, no win
                             for i, (v, j) in enumerate(zip(base, jitter))],
            **{label: [out(v) for v in base] for label in bench.GATELESS}}
    chosen, table = bench.choose(rows)
    assert chosen == "branching:seq"
    assert [other for other, *_ in table["greedy:seq"]] == list(bench.GATELESS)
    assert all(q < 0.05 for *_, q in table["greedy:seq"]) and not all(q < 0.05 for *_, q in table["pareto:fixed"])
    rows["branching-raw"] = [out(v + 0.35 + 2 * j) for v, j in zip(base, jitter)]   # a gate-less line above both:
    assert bench.choose(rows)[0] is None                                                  # nothing qualifies


def test_seeds_in_several_processes_give_the_same_rows(bench):
    lines = tuple(line for line in bench.LINES if line.label in ("greedy:seq+screen", "branching-raw"))
    one, two = (bench.run_all(range(5, 7), lines, 120, 2, bench.RAW_THRESHOLD, bench.Rules.from_config(), jobs)
                for jobs in (1, 2))
    assert one.rows == two.rows and one.targets == two.targets and one.optima == two.optima


def test_an_r1_line_measures_one_replicate_per_task_whatever_the_run_gives(bench):
    """greedy:fixed:ebc:r1 (config.json's replicates 1, keep rule ebc): every val and train cell is replicate 0,
    whatever --replicates the others run at, and its keeps are judged by ebc."""
    lines = {line.label: line for line in bench.EXTRA}
    line = lines["greedy:fixed:ebc:r1"]
    assert (line.replicates, line.keep_rule, line.screen, line.waves) == (1, "ebc", 0, False)
    land = bench.calibrated.make("skillsbench", 3)
    search = bench.Search(land, line, 320, 2, 3)
    search.run()
    for split in ("val", "train"):
        assert {rep for cells in search.cells[split].values() for _, rep in cells} == {0}
    assert {len(cells) for cells in search.cells["val"].values()} == {len(land.suites["val"])}
    assert search.decisions > 0 and search.gating.keep_rule == "ebc"
