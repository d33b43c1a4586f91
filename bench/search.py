"""One line's search on the bench's landscape at a hard rollout budget, deciding as the loop decides.

The REAL strategies, gate and tie rule (mutator/scoring/), sequential val and kill-only screen
(mutator/round/waves.py) run in-process on cells of bench/landscape.py, configured from config.json as the
loop is. Cells are cached per (genome, split, task, replicate), as the loop's evaluation cache holds them: a
wave, a screen or a deeper evaluation reuses what was run, and a genome measures the same in every line of a
seed. Every rollout is counted by what it was for (seed, screen, val, a kept incumbent's remaining waves,
train evidence), so cells per decision are measured, and every screen decision is kept with the candidate's
TRUE effect, so the screen's false-kill rate is measured. No agents, no database.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from bench.calibrated import mutator_for, norm_of, seed_genome
from bench.landscape import MUTATOR_USD, WEIGHTS, Genome, Landscape
from mutator.config import load_settings
from mutator.round.evaluations import Outcome as Measured
from mutator.round.waves import Gating, Screen, sequential_val
from mutator.scoring.gate import compare
from mutator.scoring.score import CellFigures, Comparison, per_task, summarise
from mutator.scoring.sequential import Design, wave
from strategies import Integration, Member, Scored, State, make_strategy
from strategies.verdicts import Verdict

ROOT = Path(__file__).resolve().parents[1]
RAW_THRESHOLD = 0.02                                # the raw-threshold line: keep iff Δ ≥ this (gateZ 0)
# the screen lines' train tasks when config.json's screen is off
SCREEN_TASKS = 6


class OutOfBudget(Exception):
    """The next evaluation would pass the line's rollout budget: the search ends where it stands."""


@dataclass(frozen=True)
class Rules:
    """The loop's decision settings, as config.json gives them (score.*, evidenceReplicates, sequential.*,
    screen.*)."""
    min_improvement: float = 0.0
    gate_z: float = 1.0
    method: str = "signflip"
    tie_rule: str = "noAddedCost"
    evidence_replicates: int = 0      # a kept candidate's train evaluation; 0 = the run's replicates
    sequential: bool = True
    early_z: float = 2.0
    screen_tasks: int = 0             # 0 = the screen is off in config.json
    screen_replicates: int = 1
    screen_z: float = 2.0
    keep_rule: str = "lenient"        # score.keepRule (mutator/scoring/keep.py)

    @classmethod
    @functools.cache
    def from_config(cls, config_file: Path = ROOT / "config.json") -> Rules:
        s = load_settings(config_file=config_file, environ={})
        return cls(s.score.min_improvement, s.score.gate_z, s.score.gate_method, s.score.tie_rule,
                   s.evidence_replicates, s.sequential.waves, s.sequential.early_z, s.screen.tasks,
                   s.screen.replicates, s.screen.z, s.score.keep_rule)


@dataclass(frozen=True)
class Line:
    """One contender: a strategy, how its candidates are judged against the incumbent, and how cheaply."""
    label: str
    strategy: str
    opts: dict
    # 'gate' (the real gate, as configured) | 'positive' (Δ > 0, no gate) | 'raw' (Δ ≥ τ, gateZ 0) | 'oracle'
    # (keep iff the TRUE val composite rises by more than `threshold`: every keep decision right, a reference
    # for how much any gate could gain) | 'threshold-oracle' (the oracle at the threshold
    # bench/threshold_oracle.py tunes for the landscape, budget and replicates)
    keep: str = "gate"
    tie_rule: str = ""          # the gate's tie rule for this line; '' = the configured one
    waves: bool | None = None   # sequential val (gate lines only); None = as configured
    # the kill-only screen's train tasks (gate lines only); 0 = off, None = as configured
    screen: int | None = None
    keep_rule: str = ""         # the last look's keep rule (gate lines only); '' = the configured one
    replicates: int = 0         # val (and train evidence) replicates of this line; 0 = the run's
    threshold: float = 0.0      # the oracle's: keep iff the TRUE val change > this
    # --confirm (gate lines): a keep stands only if the gate, under the line's keep rule, still keeps it on
    # fresh val replicates of both genomes (mutator/round/confirm.py), its cells counted as 'confirm'
    confirm: bool = False


@dataclass
class Outcome:
    curve: list[tuple[int, float]]     # (rollouts so far, true val composite of the incumbent)
    val_measured: float
    test_true: float
    rollouts: int
    usd: float
    decisions: int = 0                 # candidates given a verdict by the gate or the screen
    spent: dict = field(default_factory=dict)    # rollouts by purpose: seed, screen, val, remaining, train
    screens: list = field(default_factory=list)  # per screen decision: (killed, TRULY better on val)
    calls: int = 0                     # mutator calls
    # per KEEP verdict: the kept candidate's TRUE test composite minus the incumbent's it was judged against
    kept: list = field(default_factory=list)
    final: object = None               # the final incumbent genome


class Search:
    """One line's search on the landscape at a hard rollout budget: the cell cache, the spend, the curve."""

    def __init__(self, land: Landscape, line: Line, budget: int, replicates: int, seed: int,
                 raw_threshold: float = RAW_THRESHOLD, rules: Rules | None = None) -> None:
        replicates = line.replicates or replicates
        self.land, self.line, self.budget, self.replicates, self.seed = land, line, budget, replicates, seed
        self.raw_threshold = raw_threshold
        # the loop's settings unless a line is measured otherwise
        self.rules = rules = rules or Rules.from_config()
        # replicates per evaluation: val always the run's; train (the mutator's evidence) evidenceReplicates
        self.depth = {"val": replicates, "train": min(rules.evidence_replicates or replicates, replicates)}
        gated = line.keep == "gate"
        waves = gated and (rules.sequential if line.waves is None else line.waves)
        self.gating = Gating(WEIGHTS, rules.min_improvement, rules.gate_z, rules.method,
                             Design(replicates if waves else 1, rules.gate_z, rules.early_z),
                             line.tie_rule or rules.tie_rule, keep_rule=line.keep_rule or rules.keep_rule)
        self.screen = Screen((rules.screen_tasks if line.screen is None else line.screen) if gated else 0,
                             rules.screen_replicates, rules.screen_z)
        self.suites = {split: SimpleNamespace(name=split,
                                              tasks=[SimpleNamespace(id=t) for t in land.suites[split]])
                       for split in ("train", "val")}
        self.mutator = mutator_for(land, seed)
        self.norms = {split: norm_of(land, split) for split in ("train", "val", "test")}
        # genome -> {(task, rep): (cell, failed)}
        self.cells: dict[str, dict[Genome, dict]] = {"train": {}, "val": {}}
        self.fresh_cells: dict[tuple, dict] = {}   # --confirm's: (genome, round) -> {(task, rep): cell}
        self.confirms: list[bool] = []             # per confirmation: the keep stands
        self.evidence: set[Genome] = set()    # genomes whose train evidence was run (the mutator may read it)
        self.spent = {"rollouts": 0, "usd": 0.0}
        self.purpose: Counter = Counter()
        self.decisions, self.screens, self.kept = 0, [], []
        self.names: dict[Genome, str] = {}
        self._members: dict[Genome, tuple] = {}
        self.by_name: dict[str, Genome] = {}
        self.calls = 0
        self.val_size = len(land.suites["val"]) * replicates
        # the mutator-call cap (it stops a search whose candidates are all cached): 3 calls per cheapest
        # decision the budget buys, i.e. a whole val evaluation, one wave of one, or a screen, so a cheaper
        # line is not cut short
        sizes = [self.val_size // self.gating.design.looks]
        if self.screen.tasks >= 3:
            sizes.append(min(self.screen.tasks, len(land.suites["train"])) * rules.screen_replicates)
        self.max_calls = 3 * budget // min(sizes)
        # val cells in suite order, as measured
        self.order = {task: i for i, task in enumerate(land.suites["val"])}
        self.seed_genome = seed_genome(land)
        self.incumbent = self.seed_genome
        self.child = self.seed_genome
        self.curve: list[tuple[int, float]] = []
        self.threshold = line.threshold
        if line.keep == "threshold-oracle":   # tuned on seeds 0..23 by running oracle lines (no recursion)
            from bench.threshold_oracle import threshold
            self.threshold = threshold(getattr(land, "name", "quiet"), budget, replicates)

    def name(self, g: Genome) -> str:
        name = self.names.setdefault(g, f"g{len(self.names)}")
        self.by_name[name] = g
        return name

    def evaluate(self, g: Genome, split: str, want: frozenset | None = None,
                 purpose: str = "val") -> list[CellFigures]:
        """g's cells `want` ((task, replicate) pairs; None = the split's whole
        depth), running the missing ones."""
        tasks = self.land.suites[split]
        want = wave(list(tasks), self.depth[split]) if want is None else want
        order = [(t, r) for t in tasks for r in range(self.replicates) if (t, r) in want]
        have = self.cells[split].get(g, {})
        if self.draw(g, split, order, have, purpose):
            self.cells[split][g] = have
        self.name(g)
        return [have[c][0] for c in order]

    def draw(self, g: Genome, split: str, order: list, have: dict, purpose: str) -> bool:
        """Run the cells of `order` missing from `have` (the evaluation cache: same genome and cell, no new
        spend), counted as `purpose`; whether any was run."""
        missing = [c for c in order if c not in have]
        if missing:
            if self.spent["rollouts"] + len(missing) > self.budget:
                raise OutOfBudget  # every line stops at the same hard rollout cap
            for task, rep in missing:
                have[(task, rep)] = self.land.cell(g, split, task, rep, stream=str(self.seed))
                self.spent["usd"] += have[(task, rep)][0].cost_usd
            self.spent["rollouts"] += len(missing)
            self.purpose[purpose] += len(missing)
        return bool(missing)

    def measured(self, name: str, suite, _label: str, only: frozenset | None) -> Measured:
        """The waves' and the screen's view of an evaluation (mutator/round/waves.py's Evaluate)."""
        cells = self.evaluate(self.by_name[name], suite.name, only,
                              "screen" if suite.name == "train" else "val")
        return Measured(0, tuple(cells), 0, 0.0, n_cells=len(cells))

    def stored(self, g: Genome, split: str) -> list[CellFigures]:
        return [cell for cell, _ in self.cells[split].get(g, {}).values()]

    def member(self, g: Genome) -> Member:
        # what is stored, as the loop's member(): a candidate decided early has its waves only; memoised on
        # what it is made of (every round asks for every genome's)
        key = (len(self.cells["val"].get(g, ())), g in self.evidence)
        if self._members.get(g, (None,))[0] != key:
            self._members[g] = (key, self._member(g))
        return self._members[g][1]

    def _member(self, g: Genome) -> Member:
        norms = self.norms
        val = sorted(self.stored(g, "val"), key=lambda c: (self.order[c.task_id], c.replicate))
        tasks = per_task(val, WEIGHTS, norms["val"])
        train = {t: f.composite
                 for t, f in per_task(self.evaluate(g, "train"), WEIGHTS, norms["train"]).items()} \
            if g in self.evidence else {}
        return Member(self.name(g), summarise(val, WEIGHTS, norms["val"]).composite,
                      {t: f.composite for t, f in tasks.items()}, train)

    def train_evidence(self, g: Genome, purpose: str = "train") -> None:
        self.evaluate(g, "train", purpose=purpose)
        self.evidence.add(g)

    def failing(self, g: Genome) -> dict[str, list[str]]:
        """Per train task, the grader tests g failed in any cell of its evidence
        (only selected genomes have it)."""
        if g not in self.evidence:
            return {}
        failing: dict[str, set] = {}
        evidence = wave(list(self.land.suites["train"]), self.depth["train"])
        for (task, rep), (_, failed) in self.cells["train"][g].items():
            if (task, rep) in evidence:
                failing.setdefault(task, set()).update(failed)
        return {t: sorted(v) for t, v in failing.items() if v}

    def mutate(self, parent: Genome, **how) -> tuple[Genome, object]:
        self.spent["usd"] += MUTATOR_USD
        self.calls += 1
        return self.mutator(parent, failing=self.failing(parent), **how)

    def point(self) -> None:
        self.curve.append((self.spent["rollouts"],
                           self.land.expected(self.incumbent, "val", self.norms["val"])))

    def best_of_n(self) -> None:
        """Independent mutants of the seed until the budget is spent; a duplicate is served from the cache."""
        while self.calls < self.max_calls:
            child, _ = self.mutate(self.seed_genome, objective=None, refs=[], targets=())
            if child == self.seed_genome:
                continue
            self.evaluate(child, "val")
            self.decisions += 1
            if self.member(child).composite > self.member(self.incumbent).composite:
                self.child = child
                self.decided(None, True)
                self.incumbent = child
            self.point()

    def gate(self, cand: dict, base: dict, prior: list) -> tuple[object, bool]:
        """The gate-less lines' verdicts, on every val cell at once."""
        rules = self.rules
        if self.line.keep in ("oracle", "threshold-oracle"):
            gate, norm = compare(cand, base, prior=prior, min_improvement=0.0, gate_z=0.0,
                                 tie_rule="keep"), self.norms["val"]
            change = (self.land.expected(self.child, "val", norm)
                      - self.land.expected(self.incumbent, "val", norm))
            return gate, change > self.threshold + 1e-12
        if self.line.keep == "raw":
            gate = compare(cand, base, prior=prior, min_improvement=self.raw_threshold, gate_z=0.0,
                           method=rules.method, tie_rule="keep")
            return gate, gate.keep
        gate = compare(cand, base, prior=prior, min_improvement=rules.min_improvement, gate_z=rules.gate_z,
                       method=rules.method, tie_rule="keep")
        return gate, gate.delta > 1e-12

    def decided(self, gate, keep: bool) -> None:
        """Every verdict: a KEEP records the kept candidate's TRUE test change (bench/kept.py hooks in)."""
        if keep:
            norm = self.norms["test"]
            self.kept.append(self.land.expected(self.child, "test", norm)
                             - self.land.expected(self.incumbent, "test", norm))

    def judge(self, child: Genome, round_no: int, prior: list) -> tuple[list[CellFigures], bool] | None:
        """The child's verdict against the incumbent: None when the screen kills it, else the val cells it was
        judged on and keep. Gate lines decide as the loop does (screen, then val in waves); the others on
        every val cell at once."""
        name, incumbent = self.name(child), self.name(self.incumbent)
        if self.line.keep != "gate":
            cells = self.evaluate(child, "val")
            gate, keep = self.gate(per_task(cells, WEIGHTS, self.norms["val"]),
                                   per_task(self.evaluate(self.incumbent, "val"), WEIGHTS, self.norms["val"]),
                                   prior)
            prior.append(Comparison(gate.n, gate.s_r, gate.delta, keep))
            self.decided(gate, keep)
            return cells, keep
        if self.screen.tasks:
            record = self.screen.run(self.gating, self.measured, train=self.suites["train"], genome=name,
                                     incumbent=incumbent, norm=self.norms["train"],
                                     seed=f"bench:{self.seed}:{round_no}:screen", label="screen")
            if record is not None:
                # killed, and whether the child is TRULY better on val (what the search is
                # scored on; the exact train composite would cost the bench 3x its time)
                norm = self.norms["val"]
                better = self.land.expected(child, "val",
                                            norm) > self.land.expected(self.incumbent, "val", norm) + 1e-12
                self.screens.append((record["decision"] == "loss", better))
                if record["decision"] == "loss":
                    return None
        outcome, gate, looks = sequential_val(self.gating, self.measured, val=self.suites["val"], genome=name,
                                              incumbent=incumbent, norm=self.norms["val"], prior=prior,
                                              label="val", healthy=lambda _outcome: True)
        if looks[-1]["decision"] is None:
            # as the loop's prior_comparisons: an early look's scale is not pooled
            prior.append(Comparison(gate.n, gate.s_r, gate.delta, gate.keep))
        self.decided(gate, gate.keep)
        return list(outcome.cells), gate.keep

    def one_round(self, strategy, state: State, prior: list) -> list[Scored]:
        scored, first_op = [], None
        for sibling, spec in enumerate(strategy.plan(state)):
            parent = self.by_name[spec.parent_hash]
            child, op = self.mutate(parent, objective=first_op if spec.share_objective else None,
                                    refs=[self.by_name[h] for h in spec.ref_hashes],
                                    targets=spec.target_tasks)
            first_op = op if sibling == 0 else first_op
            if child == parent:  # the critic rejects a no-op without spending an evaluation
                scored.append(Scored(sibling, spec, None, evaluated=False))
                continue
            self.child = child
            judged = self.judge(child, state.round, prior)
            self.decisions += 1
            if judged is None:   # SCREENED: not evaluated on val
                scored.append(Scored(sibling, spec, self.name(child), evaluated=False))
                continue
            cells, keep = judged
            tasks = per_task(cells, WEIGHTS, self.norms["val"])
            scored.append(Scored(sibling, spec, self.name(child), True,
                                 summarise(cells, WEIGHTS, self.norms["val"]).composite, keep,
                                 {t: f.composite for t, f in tasks.items()}))
        return scored

    def strategy_rounds(self) -> None:
        strategy_id = self.line.strategy
        strategy = make_strategy(strategy_id, self.line.opts)
        pool, prior, round_no = (), [], 0
        # the mutator-call cap stops a search whose candidates are all cached (it spends no more rollouts)
        while self.calls < self.max_calls:
            round_no += 1
            members = tuple(self.member(g) for g in self.cells["val"])
            state = State(round_no, self.member(self.incumbent),
                          random.Random(f"{self.seed}:{strategy_id}:{round_no}"), members, pool)
            before = len(prior)
            integration = strategy.integrate(state, self.one_round(strategy, state, prior))
            if self.line.confirm and integration.incumbent != state.incumbent.genome_hash:
                # the loop's prior excludes the winner's own comparison (this round's, for greedy)
                integration = self.confirm(state, integration, round_no, prior[:before])
            self.incumbent, pool = self.by_name[integration.incumbent], integration.pool or pool
            # kept at an early look: its other waves
            self.evaluate(self.incumbent, "val", purpose="remaining")
            self.point()
            for h in integration.selected:
                self.train_evidence(self.by_name[h])

    def fresh(self, g: Genome, round_no: int) -> Measured:
        """g's val cells at the run's depth under round `round_no`'s confirmation salt (replicates no
        evaluation of the run draws: 1000·round onwards)."""
        reps = range(1000 * round_no, 1000 * round_no + self.replicates)
        order = [(t, r) for t in self.land.suites["val"] for r in reps]
        have = self.fresh_cells.setdefault((g, round_no), {})
        self.draw(g, "val", order, have, "confirm")
        return Measured(0, tuple(have[c][0] for c in order), 0, 0.0, n_cells=len(order))

    def confirm(self, state: State, integration: Integration, round_no: int, prior: list) -> Integration:
        """mutator/round/confirm.py's confirm_keep on the bench: the new incumbent and the old one on fresh
        val replicates, the gate (the line's tie rule) under the line's keep rule; an overturned keep is a
        REJECT and its KEEP record is dropped. Out of budget mid-confirmation, the keep does not stand."""
        new, old = self.by_name[integration.incumbent], self.by_name[state.incumbent.genome_hash]
        try:
            mine, theirs = self.fresh(new, round_no), self.fresh(old, round_no)
        except OutOfBudget:
            self.kept.pop()
            raise
        gate = self.gating.gate(mine, theirs, self.norms["val"], z=self.rules.gate_z, prior=prior,
                                tie_rule=self.gating.tie_rule, keep_rule=self.gating.keep_rule)
        self.confirms.append(gate.keep)
        if gate.keep:
            return integration
        self.kept.pop()
        winner = next(s for s, v in integration.verdicts.items() if v == Verdict.KEEP)
        return dataclasses.replace(
            integration, verdicts={**integration.verdicts, winner: Verdict.REJECT},
            incumbent=state.incumbent.genome_hash,
            selected=tuple(h for h in integration.selected if h != integration.incumbent))

    def run(self) -> Outcome:
        self.evaluate(self.seed_genome, "val", purpose="seed")
        self.train_evidence(self.seed_genome, purpose="seed")
        self.point()
        try:
            self.best_of_n() if self.line.strategy == "best-of-n" else self.strategy_rounds()
        except OutOfBudget:
            self.point()
        return Outcome(self.curve, self.member(self.incumbent).composite,
                       self.land.expected(self.incumbent, "test", self.norms["test"]), self.spent["rollouts"],
                       self.spent["usd"], self.decisions, dict(self.purpose), self.screens, self.calls,
                       self.kept, self.incumbent)


def run_search(land: Landscape, line: Line, budget: int, replicates: int, seed: int,
               raw_threshold: float = RAW_THRESHOLD, rules: Rules | None = None) -> Outcome:
    return Search(land, line, budget, replicates, seed, raw_threshold, rules).run()
