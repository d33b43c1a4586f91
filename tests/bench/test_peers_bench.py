"""bench/peers.py: GEPA on our landscape spends no metric call past the budget, counts them as GEPA does (one
cell each), and the printed table holds every line."""

from __future__ import annotations

import importlib.util
import json
import random
import re
import sys

import pytest

from tests.conftest import ROOT

pytest.importorskip("gepa", reason="gepa is the bench extra, not installed here: pip install -e '.[bench]'")


@pytest.fixture(scope="module")
def peers():
    spec = importlib.util.spec_from_file_location("peers_bench", ROOT / "bench" / "peers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def test_a_genome_survives_gepas_candidate_text(peers):
    genome = peers.Genome({*peers.SEED_RULES, ("dates", 2), ("notes", 0)})
    candidate = peers.encode(genome)
    assert set(candidate) == set(peers.COMPONENTS) and candidate["dates"] == "2" and candidate["emails"] == "off"
    assert peers.decode(candidate) == genome


@pytest.mark.parametrize("budget", [40, 97, 160])
@pytest.mark.parametrize("line", ["gepa", "gepa-merge"])
def test_gepa_never_passes_its_budget(peers, line, budget):
    land = peers.Landscape(random.Random(0))
    peer = next(p for p in peers.PEER_LINES if p.label == line)
    run = peers.run_gepa(land, peer, budget, replicates=1, seed=0)
    assert run.outcome.rollouts <= budget
    assert run.gepa_calls == run.outcome.rollouts          # GEPA's own metric-call count: one per cell
    assert [r for r, _ in run.outcome.curve] == sorted(r for r, _ in run.outcome.curve)
    assert run.outcome.curve[0][0] == len(land.suites["val"])  # the seed's val cells come first


def test_a_no_op_proposal_gives_no_texts(peers):
    class Same:
        def __call__(self, parent, **_):
            return parent, "none"
    proposer = peers.MutatorProposer(Same())
    candidate = peers.encode(peers.Genome(peers.SEED_RULES))
    assert proposer(candidate, {"dates": []}, ["dates"]) == {}  # GEPA then skips the child's evaluation


def test_holm_adjusts_in_input_order(peers):
    from bench.peers_report import holm
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_the_output_has_every_line(peers, capsys):
    peers.main(["--seeds", "2", "--budget", "120"])
    out = capsys.readouterr().out
    for label in [p.label for p in peers.PEER_LINES] + list(peers.OURS):
        assert re.search(rf"\| {re.escape(label)}( \(default\))? \|", out), label
    assert out.count("GEPA's own count equals ours in 2/2.") == len(peers.PEER_LINES)


def test_the_json_holds_the_figures_the_issue_asks_for(peers, tmp_path):
    out = tmp_path / "peers.json"
    peers.main(["--landscape", "skillsbench", "--seeds", "3", "--budget", "120", "--peers", "gepa,gepa-cache",
                "--lines", f"{peers.bench.DEFAULT},greedy-nogate,greedy-oracle,threshold-oracle", "--json",
                str(out)])
    data = json.loads(out.read_text())
    assert data["landscape"] == "skillsbench" and data["seeds"] == [0, 1, 2] and data["cell_sd"] > 0.1
    assert data["default"] == peers.bench.DEFAULT
    assert set(data["lines"]) == {"gepa", "gepa-cache", peers.bench.DEFAULT, "greedy-nogate", "greedy-oracle",
                                  "threshold-oracle"}
    assert data["oracles"] == ["greedy-oracle", "threshold-oracle"]
    assert data["threshold_oracle"].startswith("threshold-oracle keeps iff the TRUE val change > ")
    for figures in data["lines"].values():
        assert {"true_test", "harmful_kept_share", "cells_per_decision"} <= set(figures)
        assert figures["rollouts"] <= 120
    # every runnable line against the default; the oracles are headroom, not competitors
    assert set(data["vs_default"]) == {"gepa", "gepa-cache", "greedy-nogate"}
    per_seed = data["per_seed_true_test"]
    diff = sum(a - b for a, b in zip(per_seed["greedy-nogate"], per_seed[peers.bench.DEFAULT])) / 3
    assert data["vs_default"]["greedy-nogate"]["diff"] == pytest.approx(diff)
    assert data["vs_default"]["greedy-nogate"]["p_holm"] >= data["vs_default"]["greedy-nogate"]["p"]


def test_gepa_draws_the_same_first_cells_as_our_lines_and_fresh_re_runs(peers):
    from bench import calibrated
    land = calibrated.make("skillsbench", 4)
    codec = peers.codec_for(land)
    norms = {split: calibrated.norm_of(land, split) for split in ("train", "val", "test")}
    adapter = peers.LandscapeAdapter(land, 100, 4, norms, codec)
    genome = frozenset({land.edit(99).id, land.edit(98).id})
    candidate = codec.seed(genome)
    task = min(land.suites["val"], key=lambda t: abs(land.p(genome, "val", t) - 0.5))   # a mixed task
    item = peers.Item("val", task, 1)
    first = adapter.evaluate([item], candidate).outputs[0]
    ours = land.cell(genome, "val", task, 1, stream="4")[0].score          # bench/search.py's stream
    assert first == ours
    again = [adapter.evaluate([item], candidate).outputs[0] for _ in range(30)]
    assert adapter.runs[(genome, item)] == 31 and len(set(again)) == 2        # re-runs are fresh Bernoulli draws
    assert again == [land.cell(genome, "val", task, 1, stream=f"4#{k}")[0].score for k in range(1, 31)]


def test_the_slot_codec_keeps_a_parents_slots(peers):
    codec = peers.SlotCodec()
    parent = codec.seed(frozenset({"a", "b"}))
    texts = codec.texts(parent, frozenset({"b", "c"}))
    assert texts == {"slot00": "c"}            # "a" left slot00 and the new edit took it
    assert codec.decode({**parent, **texts}) == frozenset({"b", "c"})


def test_the_graded_landscape_runs_in_peers(peers, capsys):
    peers.main(["--landscape", "skillsbench-graded", "--seeds", "2", "--budget", "120", "--peers", "gepa",
                "--lines", f"{peers.bench.DEFAULT},greedy-nogate"])
    out = capsys.readouterr().out
    assert "Landscape `skillsbench-graded`" in out and "GEPA's own count equals ours in 2/2." in out
    assert re.search(rf"\| {re.escape(peers.bench.DEFAULT)} \(default\) \|", out)
