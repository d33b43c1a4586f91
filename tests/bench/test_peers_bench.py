"""bench/peers.py: GEPA on our landscape spends no metric call past the budget, counts them as GEPA does (one
cell each), and the printed table holds every line."""

from __future__ import annotations

import importlib.util
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
    assert peers.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_the_output_has_every_line(peers, capsys):
    peers.main(["--seeds", "2", "--budget", "120"])
    out = capsys.readouterr().out
    for label in [p.label for p in peers.PEER_LINES] + [line.label for line in peers.LINES]:
        assert re.search(rf"\| {re.escape(label)} +\|", out), label   # the label column is as wide as the longest
    assert "gepa       − greedy" in out and "equals ours in 2/2 runs" in out
