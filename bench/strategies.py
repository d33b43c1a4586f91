#!/usr/bin/env python3
"""Which search pays? greedy, branching, population, pareto and best-of-N on one synthetic landscape.

The landscape is built from the fakes (bench/landscape.py): a genome is a set of CSV rules, a cell applies
each rule unless the agent fumbles it, and the demo grader scores the output against the answer key. Some
rules help some tasks, titlecase hurts, three rules only add turns (cost). The optimum is enumerated exactly.
The REAL strategy classes and the REAL gate and tie rule (mutator/scoring/gate.py, ties.py), configured from
config.json as the loop is, run in a loop mirroring mutator/round/loop.py, with a simulated mutator shared by
all strategies. Everything runs in-process: no agents, no database. The same arguments print the same table
under any PYTHONHASHSEED; each table names the landscape and mutator it came from by their hashes.

Every line gets the same rollout budget (val + train cells; best-of-N included) and stops before an evaluation
would pass it. Beside the configured gate, greedy-keepties runs the gate with every tie kept (tieRule 'keep'),
and two greedy lines judge candidates without the gate: keep iff Δ > 0, and a raw threshold (keep iff Δ ≥ τ,
gateZ 0). The last lines set the default against the gate-less lines and name every significant difference,
paired over seeds.

    python bench/strategies.py [--seeds 8] [--seed-offset 0] [--budget 640] [--replicates 2]
                               [--tie-rule keep|noAddedCost] [--evidence-replicates N] [--lines a,b]
    (--seeds 32 for the full run; --seed-offset 1000 for seeds no tuning has seen)
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import calibrated  # noqa: E402
from bench.landscape import (  # noqa: E402,F401  (re-exported: bench/peers.py imports them from here)
    CATALOGUE,
    MUTATOR_USD,
    SEED_RULES,
    WEIGHTS,
    Genome,
    Landscape,
    Mutator,
    draws_hash,
    landscape_hash,
    mutator_hash,
    norm_for,
)
from bench.paired import against, censored_median, holm, mean_se, significant, wilcoxon_p  # noqa: E402,F401
from bench.search import (  # noqa: E402,F401  (re-exported, as above)
    RAW_THRESHOLD,
    SCREEN_TASKS,
    Line,
    Outcome,
    OutOfBudget,
    Rules,
    Search,
    run_search,
)

STRATEGIES = (("greedy", "greedy", {}), ("branching", "branching", {"width": 3}),
              ("population", "population", {}), ("pareto", "pareto", {}))
VARIANTS = (("fixed", False, False), ("seq", True, False), ("screen", False, True),
            ("seq+screen", True, True))
# each strategy's gate-less counterparts: keep iff Δ > 0, Δ ≥ τ
NO_GATE = (("nogate", "positive"), ("raw", "raw"))
# the keep rules (score.keepRule) each greedy variant below also runs with, labelled greedy:VARIANT:RULE
KEEP_RULES = ("lenient", "strict", "positive", "eb", "ebc")
KEEP_VARIANTS = ("fixed", "seq", "seq+screen")


def make_lines(screen_tasks: int) -> tuple[Line, ...]:
    """Each strategy with the gate as configured, with and without sequential val and the screen (its train
    tasks `screen_tasks`), then each strategy without a gate (keep iff Δ > 0; a raw threshold Δ ≥ τ, gateZ 0)
    and best-of-N, which judge on every val cell at once with no screen."""
    ours = tuple(Line(f"{name}:{variant}", strategy, opts, waves=waves, screen=screen_tasks if screen else 0)
                 for name, strategy, opts in STRATEGIES for variant, waves, screen in VARIANTS)
    gateless = tuple(Line(f"{name}-{suffix}", strategy, opts, keep=keep)
                     for name, strategy, opts in STRATEGIES for suffix, keep in NO_GATE)
    return (*ours, *gateless, Line("best-of-n", "best-of-n", {}))


def keep_rule_lines(screen_tasks: int) -> tuple[Line, ...]:
    """Greedy in the KEEP_VARIANTS, each keep rule named in its label (unnamed lines run config.json's)."""
    return tuple(Line(f"greedy:{variant}:{rule}", "greedy", {}, waves=waves,
                      screen=screen_tasks if screen else 0, keep_rule=rule)
                 for variant, waves, screen in VARIANTS if variant in KEEP_VARIANTS for rule in KEEP_RULES)


def replicate_lines(screen_tasks: int, replicates: int = 1) -> tuple[Line, ...]:
    """Greedy with fewer replicates per val task (config.json's `replicates`), each keep rule, fixed and with
    the screen (sequential val has one wave at one replicate), labelled greedy:VARIANT:RULE:rN."""
    return tuple(Line(f"greedy:{variant}:{rule}:r{replicates}", "greedy", {}, waves=waves,
                      screen=screen_tasks if screen else 0, keep_rule=rule, replicates=replicates)
                 for variant, waves, screen in VARIANTS if variant in ("fixed", "seq+screen")
                 for rule in KEEP_RULES)


def info_lines(screen_tasks: int) -> tuple[Line, ...]:
    """Round 6 (issue 47): greedy with keep rule positive spending the same budget on more information per
    decision: the default (seq+screen) at 4 val replicates per task (4 waves); the default with --confirm (a
    keep stands only if still kept on fresh val replicates of both genomes); and one look at 1 replicate per
    task, no screen, every keep confirmed on fresh replicates."""
    line = functools.partial(Line, strategy="greedy", opts={}, keep_rule="positive")
    return (line("greedy:seq+screen:positive:r4", waves=True, screen=screen_tasks, replicates=4),
            line("greedy:seq+screen:positive:confirm", waves=True, screen=screen_tasks, confirm=True),
            line("greedy:fixed:positive:r1:confirm", waves=False, screen=0, replicates=1, confirm=True))


def default_variant(rules: Rules) -> str:
    """The variant config.json runs: sequential.waves and screen.tasks."""
    return next(v for v, waves, screen in VARIANTS
                if waves == rules.sequential and screen == bool(rules.screen_tasks))


LINES = make_lines(Rules.from_config().screen_tasks or SCREEN_TASKS)
# only with --lines: the configured greedy keeping every tie; a greedy that is never wrong; one that keeps
# iff the TRUE val change passes the best fixed threshold (bench/threshold_oracle.py)
EXTRA = (Line("greedy-keepties", "greedy", {}, tie_rule="keep"),
         Line("greedy-oracle", "greedy", {}, keep="oracle"),
         Line("threshold-oracle", "greedy", {}, keep="threshold-oracle"),
         *keep_rule_lines(Rules.from_config().screen_tasks or SCREEN_TASKS),
         *replicate_lines(Rules.from_config().screen_tasks or SCREEN_TASKS),
         *info_lines(Rules.from_config().screen_tasks or SCREEN_TASKS))
DEFAULT = f"greedy:{default_variant(Rules.from_config())}"
GATELESS = tuple(f"{name}-{suffix}" for name, *_ in STRATEGIES for suffix, _ in NO_GATE)


def to_target(outcome: Outcome, target: float) -> int | None:
    """Rollouts spent when the incumbent's TRUE val composite first reached
    `target`; None = censored (never)."""
    return next((r for r, v in outcome.curve if v >= target - 1e-12), None)


@dataclass
class Results:
    rows: dict[str, list[Outcome]]
    lands: list[Landscape]
    targets: list[float]
    # per seed: seed val, optimum val, seed test, optimum test
    optima: list[tuple[float, float, float, float]]


def over_seeds(work, seeds: range, jobs: int = 1) -> list:
    """work(seed) for every seed, in seed order; in `jobs` forked processes when jobs > 1. Every seed is
    independent (its own landscape, cells and mutator stream), so the result is the same for any jobs."""
    if jobs <= 1:
        return [work(seed) for seed in seeds]
    import multiprocessing
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.map(work, seeds, chunksize=1)


def one_seed(seed: int, lines: tuple[Line, ...], budget: int, replicates: int, raw_threshold: float,
             rules: Rules, landscape: str = "quiet") -> tuple[tuple[float, float, float, float], float,
                                                              dict[str, Outcome]]:
    """One seed's optima, 90% target and every line's outcome (a calibrated landscape has no optimum: nan)."""
    land = calibrated.make(landscape, seed)
    val_norm, test_norm = calibrated.norm_of(land, "val"), calibrated.norm_of(land, "test")
    start = calibrated.seed_genome(land)
    seed_val, opt_val = land.expected(start, "val", val_norm), land.optimum("val", val_norm)
    optima = (seed_val, opt_val, land.expected(start, "test", test_norm),
              land.optimum("test", test_norm))
    return optima, seed_val + 0.9 * (opt_val - seed_val), {
        line.label: run_search(land, line, budget, replicates, seed, raw_threshold, rules) for line in lines}


def run_all(seeds: range, lines: tuple[Line, ...], budget: int, replicates: int, raw_threshold: float,
            rules: Rules, jobs: int = 1, landscape: str = "quiet") -> Results:
    results = Results({line.label: [] for line in lines},
                      [calibrated.make(landscape, seed) for seed in seeds], [], [])
    tune_oracles(lines, landscape, budget, replicates)
    work = functools.partial(one_seed, lines=lines, budget=budget, replicates=replicates,
                             raw_threshold=raw_threshold, rules=rules, landscape=landscape)
    for optima, target, outcomes in over_seeds(work, seeds, jobs):
        results.optima.append(optima)
        results.targets.append(target)
        for label, outcome in outcomes.items():
            results.rows[label].append(outcome)
    return results


def tune_oracles(lines: tuple[Line, ...], landscape: str, budget: int, replicates: int) -> None:
    """Tune the threshold oracles' thresholds in this process, before the seeds fork: each worker reads the
    cache it inherits instead of tuning again."""
    for line in lines:
        if line.keep == "threshold-oracle":
            from bench.threshold_oracle import threshold
            threshold(landscape, budget, line.replicates or replicates)


def print_header(args: argparse.Namespace, seeds: range, res: Results, rules: Rules) -> None:
    land = res.lands[-1]
    name = getattr(args, "landscape", "quiet")
    print(("Synthetic landscape from the fakes" if name == "quiet" else calibrated.describe(land))
          + f": {len(seeds)} seeds ({seeds.start}..{seeds.stop - 1}), an "
          f"equal budget of {args.budget} rollouts per line (val + train cells), {args.replicates} "
          f"replicates, val {len(land.suites['val'])} tasks, train {len(land.suites['train'])}, test "
          f"{len(land.suites['test'])}.")
    if name == "quiet":
        print(f"Landscape {landscape_hash()} · simulated mutator {mutator_hash()} · these seeds' draws "
              f"{draws_hash(res.lands)} (sha256 of their definitions; a different hash is a different "
              "bench).")
    else:
        print(f"Landscape and mutator {calibrated.definition_hash()} (sha256 of bench/calibrated.py and the "
              "calibration data; a different hash is a different bench).")
    evidence = min(rules.evidence_replicates or args.replicates, args.replicates)
    print(f"Gate as configured: minImprovement {rules.min_improvement:g}, gateZ {rules.gate_z:g}, "
          f"{rules.method}, tieRule {rules.tie_rule}; train evidence {evidence} replicate(s) "
          f"(evidenceReplicates {rules.evidence_replicates}); sequential val "
          f"{'on' if rules.sequential else 'off'} (earlyZ {rules.early_z:g}); screen.tasks "
          f"{rules.screen_tasks} (the screen lines: {args.screen_tasks} train tasks × "
          f"{rules.screen_replicates} replicate, z {rules.screen_z:g}).")
    print(f"True composite (mean over seeds): seed val {statistics.mean(o[0] for o in res.optima):.4f} → "
          f"optimum {statistics.mean(o[1] for o in res.optima):.4f}; seed test "
          f"{statistics.mean(o[2] for o in res.optima):.4f} → optimum "
          f"{statistics.mean(o[3] for o in res.optima):.4f}.")
    print("Lines: STRATEGY:fixed = the gate as configured on every val cell at once, no screen; :seq = val "
          "in waves with early looks; :screen = the kill-only train screen first; :seq+screen = both. "
          f"{DEFAULT} is config.json's default. STRATEGY-nogate = keep iff Δ > 0; STRATEGY-raw = keep iff Δ "
          f"≥ {args.raw_threshold:g} (gateZ 0): no gate, no screen, no waves; best-of-N = independent "
          "mutants of the seed, best measured val.")
    print("'to 90%': rollouts until the incumbent's TRUE val composite closes 90% of the seed→optimum gap; "
          "the median counts the seeds that never got there as censored at '> budget'.\n")


def print_table(rows: dict[str, list[Outcome]], targets: list[float], budget: int) -> None:
    """The main table: each line's rollouts to 90% of the optimum and its final scores at the budget."""
    width = max(15, *(len(label) for label in rows))
    header = (f"| {'line':<{width}} | {'reached 90%':>11} | {'median to 90%':>13} | "
              f"{'final val (measured)':>20} | {'final val (true)':>17} | {'final test (true)':>17} | "
              f"{'rollouts':>8} | {'cost USD':>8} |")
    print(header)
    print("|" + "|".join("-" * len(cell) for cell in header.split("|")[1:-1]) + "|")
    for label, outcomes in rows.items():
        hits = [to_target(o, t) for o, t in zip(outcomes, targets, strict=True)]
        reached = sum(h is not None for h in hits)
        print(f"| {label:<{width}} | {reached:>5}/{len(outcomes):<5} | {censored_median(hits, budget):>13} | "
              f"{mean_se([o.val_measured for o in outcomes]):>20} | "
              f"{mean_se([o.curve[-1][1] for o in outcomes]):>17} | "
              f"{mean_se([o.test_true for o in outcomes]):>17} | "
              f"{statistics.mean(o.rollouts for o in outcomes):>8.0f} | "
              f"{statistics.mean(o.usd for o in outcomes):>8.2f} |")


def print_cells(rows: dict[str, list[Outcome]]) -> None:
    """Where each line's rollouts went, per decision, and the screen's measured false-kill rate."""
    width = max(15, *(len(label) for label in rows))
    header = (f"| {'line':<{width}} | {'mutator calls':>13} | {'decisions':>9} | {'cells/decision':>14} | "
              f"{'val+screen/decision':>19} | {'seed':>5} | {'screen':>6} | {'val':>6} | {'remaining':>9} | "
              f"{'train':>6} | {'screened out':>12} | {'false kills':>17} |")
    print(header)
    print("|" + "|".join("-" * len(cell) for cell in header.split("|")[1:-1]) + "|")
    for label, outcomes in rows.items():
        spent = {k: statistics.mean(o.spent.get(k, 0) for o in outcomes)
                 for k in ("seed", "screen", "val", "remaining", "train", "confirm")}
        decisions = statistics.mean(o.decisions for o in outcomes)
        deciding = spent["screen"] + spent["val"] + spent["remaining"] + spent["confirm"]
        screens = [s for o in outcomes for s in o.screens]
        kills = f"{sum(k for k, *_ in screens)}/{len(screens)}" if screens else "—"
        false = rate([killed for killed, better in screens if better])
        per = [f"{cells / decisions:.1f}" if decisions else "—"
               for cells in (deciding + spent["train"], deciding)]
        print(f"| {label:<{width}} | {statistics.mean(o.calls for o in outcomes):>13.1f} | {decisions:>9.1f} "
              f"| {per[0]:>14} | {per[1]:>19} | {spent['seed']:>5.0f} | {spent['screen']:>6.1f} | "
              f"{spent['val']:>6.1f} | {spent['remaining']:>9.1f} | "
              f"{spent['train']:>6.1f} | {kills:>12} | {false:>17} |")


def rate(kills: list[bool]) -> str:
    return f"{sum(kills)}/{len(kills)} = {sum(kills) / len(kills):.1%}" if kills else "—"


def print_tests(rows: dict[str, list[Outcome]], n_seeds: int) -> None:
    pairs = len(rows) * (len(rows) - 1) // 2
    floor = 2 / 2 ** n_seeds   # the smallest two-sided Wilcoxon p over this many seeds (every sign one way)
    if floor >= 0.05 / max(pairs, 1):
        print(f"Note: with {n_seeds} seeds no pair can be significant here: the smallest Wilcoxon p is "
              f"{floor:.2g}, Holm's first step over {pairs} pairs "
              f"needs < {0.05 / max(pairs, 1):.2g}; run --seeds 32.")
    test = lambda o: o.test_true  # noqa: E731
    others = [label for label in GATELESS if label in rows]
    if DEFAULT in rows and others:
        print(f"The default ({DEFAULT}) against the gate-less lines on the final TRUE test composite (paired "
              f"over {n_seeds} seeds, Holm "
              f"over these {len(others)}): " + "; ".join(against(rows, test, DEFAULT, others))
              + ".")
    if DEFAULT in rows and "greedy-keepties" in rows:
        print("The default against the gate keeping every tie: " + against(rows, test, DEFAULT,
                                                                           ["greedy-keepties"])[0]
              + ".")
    variants = [(f"{name}:{v}", f"{name}:fixed") for name, *_ in STRATEGIES for v, *_ in VARIANTS[1:]
                if f"{name}:{v}" in rows and f"{name}:fixed" in rows]
    if variants:
        ps = [wilcoxon_p([test(o) for o in rows[a]], [test(o) for o in rows[b]]) for a, b in variants]
        print("Each variant against its strategy's fixed line on the final TRUE test composite (Wilcoxon, "
              f"paired over {n_seeds} seeds, Holm over these {len(variants)}):")
        for (a, b), p, q in zip(variants, ps, holm(ps), strict=True):
            diff = statistics.mean(test(o) for o in rows[a]) - statistics.mean(test(o) for o in rows[b])
            print(f"  {a:<22} − {b:<18} {diff:+.4f}  p {p:<8.2g} Holm {q:<8.2g} "
                  + ("significant" if q < 0.05 else "not significant"))
    for name, metric in (("final TRUE test composite", test),
                         ("final TRUE val composite", lambda o: o.curve[-1][1])):
        found = significant(rows, metric)
        print(f"Significant on {name} (Wilcoxon signed-rank, paired over {n_seeds} seeds, Holm-adjusted "
              f"p < 0.05 over all {pairs} pairs): " + ("; ".join(found) if found else "none")
              + (" — every other difference is not." if found else "."))


def choose(rows: dict[str, list[Outcome]], alpha: float = 0.05) -> tuple[str | None, dict[str, list[tuple]]]:
    """The choice rule (README, "Which line should be the default"): among our gated lines, the one with the
    highest mean final TRUE test composite that beats every gate-less line, each Wilcoxon paired over seeds
    with Holm over its comparisons with them at p < alpha; None when no gated line does. Also each gated
    line's (gate-less line, mean difference, Holm p)."""
    test = lambda o: o.test_true  # noqa: E731
    others = [label for label in GATELESS if label in rows]
    gated = [label for label in rows if ":" in label]
    table, winners = {}, []
    for line in gated:
        mine = [test(o) for o in rows[line]]
        ps = [wilcoxon_p(mine, [test(o) for o in rows[other]]) for other in others]
        diffs = [statistics.mean(mine) - statistics.mean(test(o) for o in rows[other]) for other in others]
        table[line] = list(zip(others, diffs, holm(ps), strict=True))
        if others and all(d > 0 and q < alpha for _, d, q in table[line]):
            winners.append((statistics.mean(mine), line))
    return (max(winners)[1] if winners else None), table


def print_choice(rows: dict[str, list[Outcome]], n_seeds: int) -> None:
    chosen, table = choose(rows)
    if not table or not next(iter(table.values())):
        return
    others = [other for other, *_ in next(iter(table.values()))]
    print("\nEach gated line against every gate-less line on the final TRUE test composite: mean difference "
          f"(Holm p over the line's {len(others)} comparisons; Wilcoxon paired over {n_seeds} seeds):")
    print("| line | mean | " + " | ".join(others) + " |")
    print("|---|---|" + "---|" * len(others))
    for line, cells in table.items():
        mean = statistics.mean(o.test_true for o in rows[line])
        print(f"| {line} | {mean:.4f} | " + " | ".join(f"{d:+.4f} ({q:.2g})" for _, d, q in cells) + " |")
    print("The choice rule (the highest mean among the gated "
          "lines that beat every gate-less line, Holm p < 0.05): "
          + (f"{chosen}." if chosen else "no gated line beats every gate-less line."))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--seeds", type=int, default=8, help="landscapes (paired across lines); 32 for the full "
                    "comparison (default 8 to stay quick)")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="the first seed (default 0); e.g. 1000 for seeds "
                    "no tuning has seen")
    ap.add_argument("--budget", type=int, default=640, help="rollouts (cells) per search, val + train; every "
                    "line stops before an evaluation would pass it")
    ap.add_argument("--replicates", type=int, default=2)
    ap.add_argument("--raw-threshold", type=float, default=RAW_THRESHOLD,
                    help=f"the greedy-raw line keeps iff Δ ≥ this (gateZ 0; default {RAW_THRESHOLD})")
    ap.add_argument("--tie-rule", choices=("keep", "noAddedCost"),
                    help="the gate's tie rule for the gated lines "
                    "(default: score.tieRule in config.json)")
    ap.add_argument("--evidence-replicates", type=int, help="replicates of a kept candidate's train "
                    "evaluation, 0 = --replicates (default: evidenceReplicates in config.json)")
    ap.add_argument("--screen-tasks", type=int, help="train tasks of the screen lines' screen (default: "
                    f"screen.tasks in config.json, or {SCREEN_TASKS} when it is 0)")
    ap.add_argument("--lines", help="comma-separated line labels to run (default: all but greedy-keepties "
                    "and the oracles: greedy-oracle keeps iff the TRUE "
                    "val composite rises, every keep decision right; threshold-oracle iff it rises by more "
                    "than the best fixed threshold, bench/threshold_oracle.py)")
    ap.add_argument("--jobs", type=int, default=1, help="seeds run in this many processes "
                                                        "at once (the same table)")
    ap.add_argument("--landscape", choices=calibrated.LANDSCAPES, default="quiet",
                    help="quiet (the fakes' rules, near-deterministic), skillsbench, tau or "
                    "skillsbench-graded (real agent noise, bench/calibrated.py)")
    args = ap.parse_args(argv)
    started = time.monotonic()
    rules = Rules.from_config()
    rules = dataclasses.replace(rules, tie_rule=args.tie_rule or rules.tie_rule,
                                evidence_replicates=rules.evidence_replicates
                                if args.evidence_replicates is None else args.evidence_replicates)
    args.screen_tasks = args.screen_tasks or rules.screen_tasks or SCREEN_TASKS
    every = make_lines(args.screen_tasks) + EXTRA
    wanted = (set(args.lines.split(",")) if args.lines
              else {line.label for line in make_lines(args.screen_tasks)})
    unknown = wanted - {line.label for line in every}
    if unknown:
        ap.error(f"--lines: unknown {', '.join(sorted(unknown))}; the lines are "
                 f"{', '.join(x.label for x in every)}")
    seeds = range(args.seed_offset, args.seed_offset + args.seeds)
    res = run_all(seeds, tuple(line for line in every if line.label in wanted), args.budget, args.replicates,
                  args.raw_threshold, rules, args.jobs, args.landscape)
    print_header(args, seeds, res, rules)
    print_table(res.rows, res.targets, args.budget)
    print(f"\n± is the standard error over seeds. Wall time {time.monotonic() - started:.1f} s.\n")
    print("Cells per decision (means per seed): a decision is a verdict of the gate or the screen (KEEP, "
          "REJECT, SCREENED); cells/decision counts every cell but the seed's; 'remaining' = a kept "
          "incumbent's val waves not yet run; false kills = the truly better candidates the screen saw (TRUE "
          "val composite above the incumbent's) that it screened out.")
    print_cells(res.rows)
    print()
    print_tests(res.rows, args.seeds)
    print_choice(res.rows, args.seeds)


if __name__ == "__main__":
    main()
