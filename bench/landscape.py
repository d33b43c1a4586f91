"""The bench's synthetic landscape and its simulated mutator, shared by bench/strategies.py and
bench/peers.py.

A genome is a set of CSV rules (fakes/csv_rules.py ops); a cell applies each rule unless the agent fumbles it
(skip probability = the rule implementation's quality), and the demo grader scores the output against the
answer key. Every random draw walks its sets in sorted order, so a seed gives the same landscape and the same
search under any PYTHONHASHSEED; landscape_hash() and mutator_hash() hash both definitions, so a table names
what it was made on. Never imports the strategies or the gate: the landscape is what the searches are measured
on, not one of them. Landscape, norm_for and Mutator keep their lines as they are: their source text is what
the hashes read.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import itertools
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fakes.csv_rules import apply_rules, read_csv  # noqa: E402
from mutator.scoring.score import CellFigures, Normalisers, Weights, composite  # noqa: E402

SEED_RULES = (("trim", 0), ("headers", 0))
HELPFUL = ("dates", "amounts", "booleans", "emails", "dedupe")
COST_ONLY = ("notes", "verify", "examples")        # rules that only add turns: they change no output
CATALOGUE = (*HELPFUL, "titlecase", *COST_ONLY)
TEST_RULES = {"dates": "dates", "amounts": "amounts", "flags": "booleans", "emails": "emails",
              "rows": "dedupe"}
VARIANTS = 3
WEIGHTS = Weights(0.1, 0.02)
MUTATOR_USD = 3000 * 5e-6 + 400 * 25e-6            # one fake mutator call priced as claude-opus-4-5
PER_TURN_IN, PER_TURN_OUT = 900, 80                 # fake agent tokens per turn (haiku: $1 / $5 per M)
# chance the mutator acts on its evidence, else a random change
SMART = 0.5

Genome = frozenset  # of (op, variant)


def load_grader():
    spec = importlib.util.spec_from_file_location("csv_grader", ROOT / "suites" / "csv_grader.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.grade


class Landscape:
    def __init__(self, rng: random.Random) -> None:
        grade = load_grader()
        self.suites = {}
        for split in ("train", "val", "test"):
            folder = ROOT / "suites" / f"clean-{split}"
            tasks = [json.loads(line)["id"] for line in (folder / "tasks.jsonl").read_text().splitlines() if line]
            self.suites[split] = {t: (read_csv(folder / "fixtures" / t / "input.csv"),
                                      read_csv(folder / "answers" / f"{t}.csv")) for t in tasks}
        self._grade, self._cache, self._expected = grade, {}, {}
        # each rule has VARIANTS implementations of different reliability (the fumble rate per cell)
        self.skip = {(op, v): rng.choice((0.02, 0.08, 0.30)) for op in CATALOGUE for v in range(VARIANTS)}
        self.skip.update({rule: 0.0 for rule in SEED_RULES})

    def tests(self, split: str, task: str, applied: frozenset) -> dict[str, float]:
        key = (split, task, applied)
        if key not in self._cache:
            rows, answer = self.suites[split][task]
            self._cache[key] = self._grade(answer, apply_rules(rows, sorted(applied)))
        return self._cache[key]

    def score(self, split: str, task: str, applied: frozenset) -> float:
        tests = self.tests(split, task, applied)
        return sum(tests.values()) / len(tests)

    @staticmethod
    def turns(genome: Genome) -> int:
        return 2 + len(genome)                         # read, one per rule, write

    def cost(self, genome: Genome) -> float:
        return self.turns(genome) * (PER_TURN_IN + 40 * len(genome)) * 1e-6 + self.turns(genome) * PER_TURN_OUT * 5e-6

    def cell(self, genome: Genome, split: str, task: str, replicate: int, rng: random.Random | None = None, *,
             stream: str = "") -> tuple[CellFigures, list[str]]:
        """One measured cell and the grader tests it failed. With `stream` the cell draws from its own generator,
        seeded by the stream, the split, the task, the replicate and the genome; without it, from `rng`."""
        rules = sorted(genome)
        draw = random.Random(f"cell:{stream}:{split}:{task}:{replicate}:{rules}") if stream else rng
        applied = frozenset(op for op, v in rules if draw.random() >= self.skip[(op, v)])
        tests = self.tests(split, task, applied)
        return (CellFigures(task, replicate, sum(tests.values()) / len(tests), self.cost(genome), self.turns(genome),
                            True), sorted(t for t, s in tests.items() if s < 1))

    def cells(self, genome: Genome, split: str, replicates: int, rng: random.Random | None = None, *,
              stream: str = "") -> tuple[list[CellFigures], dict[str, list[str]]]:
        """Measured cells, and per task the grader tests that failed in any replicate (the train evidence).

        With `stream` every cell draws from its own generator (see cell()): the same genome measures the same in
        every line of a seed (common random numbers, so paired lines differ by their decisions, not their luck),
        and replicate r is the same cell whether 1 or 3 replicates are drawn. Without it they draw in turn from `rng`.
        """
        out, failing = [], {}
        for task in self.suites[split]:
            for rep in range(replicates):
                cell, failed = self.cell(genome, split, task, rep, rng, stream=stream)
                failing.setdefault(task, set()).update(failed)
                out.append(cell)
        return out, {t: sorted(v) for t, v in failing.items() if v}

    def expected(self, genome: Genome, split: str, norm: Normalisers) -> float:
        """The genome's true composite: every fumble pattern weighted by its probability."""
        key = (genome, split)
        if key not in self._expected:
            self._expected[key] = self._exact(genome, split, norm)
        return self._expected[key]

    def _exact(self, genome: Genome, split: str, norm: Normalisers) -> float:
        # only fumble-able rules that change the output need enumerating; the rest are always "applied"
        rules = sorted(r for r in genome if r[0] in (*HELPFUL, "titlecase") and self.skip[r] > 0)
        fixed = [op for op, v in genome if (op, v) not in rules]
        total = 0.0
        for task in self.suites[split]:
            for pattern in itertools.product((True, False), repeat=len(rules)):
                p, applied = 1.0, list(fixed)
                for (op, v), on in zip(rules, pattern, strict=True):
                    s = self.skip[(op, v)]
                    p *= (1 - s) if on else s
                    if on:
                        applied.append(op)
                if p:
                    total += p * self.score(split, task, frozenset(applied))
        mean = total / len(self.suites[split])
        return composite(mean, self.cost(genome), self.turns(genome), WEIGHTS, norm.seed_cost, norm.seed_steps)[0]

    def optimum(self, split: str, norm: Normalisers) -> float:
        best_variant = {op: min(range(VARIANTS), key=lambda v: self.skip[(op, v)]) for op in CATALOGUE}
        return max(self.expected(Genome(SEED_RULES) | {(op, best_variant[op]) for op in subset}, split, norm)
                   for k in range(len(HELPFUL) + 2) for subset in itertools.combinations((*HELPFUL, "titlecase"), k))


def norm_for(land: Landscape, split: str) -> Normalisers:
    seed = Genome(SEED_RULES)
    return Normalisers(land.cost(seed), land.turns(seed))


class Mutator:
    """One change per call, the same for every strategy: follow an objective, merge a ref, act on
    failing train tests (the targets, else the parent's worst tasks) or make a random change."""

    def __init__(self, land: Landscape, rng: random.Random) -> None:
        self.land, self.rng = land, rng

    @classmethod
    def for_seed(cls, land: Landscape, seed: int) -> Mutator:
        """The bench's mutator: one stream per seed, shared by every line, so lines start from the same proposals
        and part only where their decisions do (common random numbers, as the cells)."""
        return cls(land, random.Random(f"mutator:{seed}"))

    def __call__(self, parent: Genome, *, objective: str | None, refs: list[Genome], failing: dict[str, list[str]],
                 targets: tuple[str, ...]) -> tuple[Genome, str]:
        have = {op for op, _ in parent}
        variant = self.rng.randrange(VARIANTS)
        if objective in CATALOGUE and objective not in have:
            return parent | {(objective, variant)}, objective
        for ref in refs:
            lend = sorted(rule for rule in ref - parent if rule[0] not in have)
            if lend:
                rule = self.rng.choice(lend)
                return parent | {rule}, rule[0]
        if failing and self.rng.random() < SMART:
            focus = [t for t in targets if t in failing] or sorted(failing, key=lambda t: -len(failing[t]))[:3]
            wanted = [TEST_RULES[t] for task in focus for t in failing[task] if t in TEST_RULES]
            wanted = [op for op in wanted if op not in have]
            if wanted:
                op = max(sorted(set(wanted)), key=wanted.count)
                return parent | {(op, variant)}, op
        extra = sorted(rule for rule in parent if rule not in SEED_RULES)
        if extra and self.rng.random() < 0.15:
            rule = self.rng.choice(extra)
            return parent - {rule}, f"-{rule[0]}"
        options = [op for op in CATALOGUE if op not in have]
        op = self.rng.choice(options) if options else "notes"
        return parent | {(op, variant)}, op


def _digest(*parts: object) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def landscape_hash() -> str:
    """The landscape's definition: its code, its constants, the grader, the CSV rules and every suite file."""
    files = [ROOT / "suites" / "csv_grader.py", ROOT / "fakes" / "csv_rules.py"]
    for split in ("train", "val", "test"):
        files += sorted(p for p in (ROOT / "suites" / f"clean-{split}").rglob("*") if p.is_file())
    return _digest(inspect.getsource(Landscape), inspect.getsource(norm_for), SEED_RULES, HELPFUL, CATALOGUE,
                   VARIANTS, WEIGHTS, PER_TURN_IN, PER_TURN_OUT,
                   *[(str(p.relative_to(ROOT)), p.read_bytes()) for p in files])


def mutator_hash() -> str:
    """The simulated mutator's definition: its code and every parameter it reads."""
    return _digest(inspect.getsource(Mutator), SMART, TEST_RULES, CATALOGUE, VARIANTS, SEED_RULES,
                   MUTATOR_USD)


def draws_hash(lands: list[Landscape]) -> str:
    """The per-seed draws of these landscapes (every rule implementation's fumble rate)."""
    return _digest(*[sorted(land.skip.items()) for land in lands])
