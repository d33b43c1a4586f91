"""Plan before spending: the minimum detectable effect of one round's gate and of the final test
comparison at 80% power, and the estimated cost per round and per run — from suite sizes, replicates,
a noise estimate and the pricing table.

Reads the store (read-only) for a noise estimate and the seed's measured cost; never runs a cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from eval.cost import Usage, price_for, usd
from eval.snapshot import hash_tree
from eval.suite import Suite
from mutator.config import Settings
from mutator.round.solve import solve_estimate, solve_line
from mutator.scoring.gate import gate_t, method_warning
from mutator.scoring.sequential import Design, expected_looks
from mutator.store import planning
from mutator.store.db import connect_readonly
from mutator.validity import calibration
from mutator.validity.stats import mde, two_sided_critical
from strategies import make_strategy

POWER = 0.8
TEST_ALPHA = 0.05
# the change `--plan` always says the cost of detecting, and the resolution below which it warns
TARGET_EFFECT = 0.05
BLIND_ABOVE = 0.15
# a real build-agent cell, when none is measured
CELL_TOKENS = Usage(input_tokens=40_000, output_tokens=4_000)
# one real mutator call, when none is measured
MUTATOR_TOKENS = Usage(input_tokens=80_000, output_tokens=8_000)
# one LLM-judge call (eval/graders/judge_runner.py)
JUDGE_TOKENS = Usage(input_tokens=6_000, output_tokens=600)


@dataclass(frozen=True)
class Noise:
    sigma: float          # SD of a per-task delta at the planned replicates
    measured: float       # as measured (at `replicates`)
    replicates: int | None
    source: str


@dataclass(frozen=True)
class Plan:
    noise: Noise
    n_train: int
    n_val: int
    n_test: int | None
    replicates: int
    rounds: int
    candidates: int
    gate_z: float
    mde_gate_first: float
    df_first: int
    mde_gate_last: float
    df_last: int
    mde_test: float | None
    cell_usd: float
    cell_source: str
    mutator_usd: float
    mutator_source: str
    confirm: bool
    round_usd: float
    run_usd: float
    test_usd: float | None
    models: tuple[str, ...] = ()   # the eval models: every cell is measured on each
    # sequential val (mutator/scoring/sequential.py): looks, z's, expected waves
    design: dict | None = None
    screen_cells: int = 0          # the kill-only train screen's cells per candidate (0 = off)
    solve_line: str = ""           # the solve phase, on (its cells and cost, in run_usd) or off
    # one judge call, when a suite is graded by the LLM judge (added to its cells)
    judge_usd: float = 0.0
    judge_suites: tuple[str, ...] = ()
    # replicates of a genome's train evidence (evidenceReplicates; 0 = replicates)
    train_replicates: int = 0
    # a round of null changes: each screened, val at a null change's expected waves
    expected_round_usd: float = 0.0
    # per round, full val evaluations of the incumbent under a fresh salt (nullControls)
    null_controls: int = 0
    # what detecting TARGET_EFFECT takes at this σ and these replicates: {"gate"|"test": (tasks, cells, usd)}
    target: dict | None = None
    gate_warning: str | None = None   # the Student-t gate chosen (gate.method_warning)

    @property
    def train_cells(self) -> int:
        return self.n_train * (self.train_replicates or self.replicates)


def _store(settings: Settings):
    return connect_readonly(settings.db_path) if settings.db_path.exists() else None


def pass_fail(suite: Suite) -> bool:
    """Whether a suite's grader gives pass/fail scores: a Harbor task's reward (SkillsBench, Terminal-Bench),
    or
    a suite.md that says `grades: pass-fail`."""
    return suite.runner == "harbor" or str(suite.option("grades", "")).lower() in ("pass-fail", "pass/fail")


def prior_noise(val: Suite, replicates: int) -> Noise:
    """σ before any cell: a per-task delta between two equal genomes, each task the mean of `replicates`
    trials, σ = √(2·E[p(1−p)]/R) with E[p(1−p)] from the beta-binomial fit of SkillsBench's trials
    (mutator/validity/calibration.py). Pass/fail graders: that is the prior. Graded ones: the same figure as a
    conservative bound (a score in [0, 1] with mean p has variance at most p(1−p)). Between-task spread of a
    real effect and the composite's cost terms are left out."""
    fit = calibration.fit(None)
    sigma = calibration.pass_fail_sigma(replicates, fit)
    what = ("a prior for a pass/fail grader" if pass_fail(val) else
            "a stated conservative bound for a graded suite (a [0, 1] score with mean p varies at most "
            "p(1−p))")
    return Noise(sigma, sigma, replicates,
                 f"{what}: SkillsBench's trials, E[p(1−p)] = {fit.trial_var:.4f} (beta-binomial "
                 f"Beta({fit.alpha:.3f}, {fit.beta:.3f}) over {fit.cells:,} cells), "
                 f"√(2·E[p(1−p)]/{replicates}) "
                 f"at {replicates} replicate(s); nothing measured on {val.name} yet (an A/A run measures it: "
                 "--aa 5)")


def noise_estimate(settings: Settings, val: Suite, build_id: str = "") -> Noise:
    """An A/A run's pooled s on this val suite, else an earlier run's pooled gate s, else the prior
    (prior_noise). A dry plan reads only runs by its own fake build agent: a noiseless fake's noise is no
    estimate of `--fake-noise realistic`'s, nor the other way round.

    A measured s is rescaled from its run's replicates R₀ to the planned R by √(R₀/R): exact for the pure
    replicate noise an A/A run measures, approximate for a real run's deltas (which also hold real effects).
    """
    db = _store(settings)
    found: list[dict] = []
    source = ""
    if db is not None:
        for kind, label in (("aa", "A/A run"), ("evolve", "earlier run")):
            row = planning.pooled_noise(db, kind, val.content_hash, build_id if dry(build_id) else None)
            found = [row] if row else []
            if found:
                source = f"{label} {found[0]['id']} (pooled s over df {found[0]['gate_df']})"
                break
    if not found:
        return prior_noise(val, settings.replicates)
    measured, reps = float(found[0]["gate_s"]), int(found[0]["replicates"])
    sigma = measured * math.sqrt(reps / settings.replicates)
    if reps != settings.replicates:
        source += f", measured at {reps} replicates, rescaled ×√({reps}/{settings.replicates})"
    return Noise(sigma, measured, reps, source)


def _seed_cell_usd(settings: Settings, build_id: str, model: str) -> tuple[float | None, str]:
    db = _store(settings)
    if db is None or not planning.has_evaluations(db):
        return None, ""
    seed = hash_tree(settings.skill_dir)
    # the same build agent first; another implementation of it (e.g. an edited fake) says so; a real plan is
    # never priced from a dry run's fake cells
    other = "fake@%" if dry(build_id) else "%"
    for agent, note in ((build_id, ""), (other, " by another build-agent implementation")):
        found = planning.seed_cells_cost(db, seed, model, agent, no_fake=not dry(build_id))
        if found.get("cells"):
            return found["usd"] / found["cells"], (f"measured: the seed's {found['cells']} cells{note} in "
                                                   "the store")
    return None, ""


def dry(agent_id: str) -> bool:
    """A zero-spend fake's implementation id (fakes/): its figures never price a real plan."""
    return agent_id.startswith("fake@")


def _mutator_usd(settings: Settings, *, real: bool) -> tuple[float | None, str]:
    """The mean of this store's mutator calls at this model: only real ones (not a dry run's fake mutator) for
    a real plan."""
    db = _store(settings)
    if db is None or not planning.has_attempts(db):
        return None, ""
    found = planning.mutator_calls(db, settings.mutator_model, real=real)
    if not found.get("n"):
        return None, ""
    what = "real mutator calls" if real else "dry-run (fake) mutator calls"
    return found["usd"], f"measured: mean of {found['n']} {what} in the store"


def candidates_per_round(settings: Settings) -> int:
    strategy = make_strategy(settings.strategy, settings.strategy_opts)
    return int(getattr(strategy, "width", None) or getattr(strategy, "children", None) or 1)


def plan(settings: Settings, *, train: Suite, val: Suite, holdout: Suite | None, build_id: str) -> Plan:
    noise = noise_estimate(settings, val, build_id)
    models = settings.models
    # several eval models: every task x replicate is measured on each model, so each suite holds k times the
    # cells, and the gate pairs (task, model): n_val·k pairs per comparison
    k = len(models)
    n_train, n_val, reps = len(train.tasks) * k, len(val.tasks) * k, settings.replicates
    n_test = len(holdout.tasks) * k if holdout else None
    candidates = candidates_per_round(settings)
    rounds = max(settings.rounds, 1)
    # the gate at round r pools every comparison so far: df = (comparisons so far)·(n_val − 1)
    df_first, df_last = candidates * (n_val - 1), rounds * candidates * (n_val - 1)

    def gate_mde(df: int) -> float:
        return mde(noise.sigma, n_val, critical=gate_t(settings.score.gate_z, df), power=POWER, df=df or None)

    mde_test = None
    if n_test:
        df_test = n_test - 1
        mde_test = mde(noise.sigma, n_test, critical=two_sided_critical(TEST_ALPHA, df_test or None),
                       power=POWER, df=df_test or None)
    cells, sources = [], []
    for model in models:    # each model's cells at its own measured (or estimated) price
        cell, cell_source = _seed_cell_usd(settings, build_id, model)
        if cell is None:
            cell = usd(price_for(settings.pricing, model), CELL_TOKENS)
            cell_source = (f"estimated: {CELL_TOKENS.input_tokens:,} input + {CELL_TOKENS.output_tokens:,} "
                           f"output tokens per cell at {model} prices (no seed evaluation in the store)")
        cells.append(cell)
        sources.append(cell_source if k == 1 else f"{model}: ${cell:.5f}, {cell_source}")
    cell = sum(cells) / k
    cell_source = sources[0] if k == 1 else "the mean over models; " + "; ".join(sources)
    judged = tuple(x.name for x in (train, val) if x.runner == "judge")
    judge = usd(price_for(settings.pricing, str(val.option("judge_model") or models[0])), JUDGE_TOKENS) \
        if judged else 0.0
    train_cell, val_cell = (cell + (judge if x.runner == "judge" else 0.0) for x in (train, val))
    mutator, mutator_source = _mutator_usd(settings, real=not dry(build_id))
    if mutator is None:
        mutator = usd(price_for(settings.pricing, settings.mutator_model), MUTATOR_TOKENS)
        mutator_source = (f"estimated: {MUTATOR_TOKENS.input_tokens:,} input + "
                          f"{MUTATOR_TOKENS.output_tokens:,} output tokens per call at "
                          f"{settings.mutator_model} prices")
    confirm = bool(getattr(settings, "confirm", False))
    screen_cells = min(settings.screen.tasks, len(train.tasks)) * k * settings.screen.replicates \
        if settings.screen.tasks >= 3 else 0
    # upper bound: every candidate screened and evaluated on every val wave, one selected genome on train, a
    # confirmation every round, the round's null controls
    train_reps = min(settings.train_replicates, reps)   # a genome's train evidence (evidenceReplicates)
    round_usd = (candidates * (n_val * reps * val_cell + screen_cells * train_cell)
                 + n_train * train_reps * train_cell
                 + ((2 if confirm else 0) + settings.null_controls) * n_val * reps * val_cell
                 + candidates * mutator)
    design = _design(settings)   # a null change's val cells: its expected waves of one replicate each
    val_expected = design["null"] / design["looks"] * n_val * reps if design else n_val * reps
    expected_round_usd = round_usd - candidates * (n_val * reps - val_expected) * val_cell
    solve_on = settings.solve == "on"   # `auto` (old configs) is off
    solve_usd = solve_estimate(settings, len(train.tasks))[1] if solve_on else 0.0
    run_usd = (solve_usd + n_val * reps * val_cell + n_train * train_reps * train_cell
               + settings.rounds * round_usd)
    return Plan(noise=noise, n_train=n_train, n_val=n_val, n_test=n_test, replicates=reps,
                rounds=settings.rounds, candidates=candidates, gate_z=settings.score.gate_z,
                mde_gate_first=gate_mde(df_first), df_first=df_first, mde_gate_last=gate_mde(df_last),
                df_last=df_last, mde_test=mde_test, cell_usd=cell, cell_source=cell_source,
                mutator_usd=mutator, mutator_source=mutator_source, confirm=confirm, round_usd=round_usd,
                run_usd=run_usd, models=models,
                # a test run measures the seed, the champion and the no-skill control
                test_usd=3 * n_test * reps * cell if n_test else None,
                design=design, screen_cells=screen_cells, expected_round_usd=expected_round_usd,
                solve_line=solve_line(settings, len(train.tasks), solve_on), judge_usd=judge,
                judge_suites=judged, train_replicates=train_reps, null_controls=settings.null_controls,
                target=_target(settings, noise.sigma, candidates, val_cell, cell),
                gate_warning=method_warning(settings.score.gate_method, settings.score.gate_z))


def tasks_to_detect(effect: float, sigma: float, critical, *, most: int = 1_000_000) -> int:
    """The fewest tasks n (≥ 2) whose paired design detects `effect` at POWER: mde(σ, n) ≤ effect, with the
    decision's critical value `critical(df)` and df = n − 1. Bisection (the MDE falls as n grows)."""
    def seen(n: int) -> bool:
        return mde(sigma, n, critical=critical(n - 1), power=POWER, df=n - 1) <= effect
    lo, hi = 2, 2
    while not seen(hi):
        if hi >= most:
            return most
        lo, hi = hi, min(hi * 2, most)
    if seen(lo):
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if seen(mid) else (mid, hi)
    return hi


def _target(settings: Settings, sigma: float, candidates: int, val_cell: float, cell: float) -> dict:
    """What detecting TARGET_EFFECT takes at the run's replicates: val tasks for one round's gate (its round-1
    df, cells and dollars of the round's candidates' val evaluations), test tasks for the final test (a test
    run's three evaluations: seed, champion, no-skill control)."""
    reps, z = settings.replicates, settings.score.gate_z
    gate_n = tasks_to_detect(TARGET_EFFECT, sigma, lambda df: gate_t(z, candidates * df))
    test_n = tasks_to_detect(TARGET_EFFECT, sigma, lambda df: two_sided_critical(TEST_ALPHA, df))
    return {"gate": (gate_n, gate_n * reps, candidates * gate_n * reps * val_cell),
            "test": (test_n, test_n * reps, 3 * test_n * reps * cell)}


def _design(settings: Settings) -> dict | None:
    design = Design(settings.replicates if settings.sequential.waves else 1, settings.score.gate_z,
                    settings.sequential.early_z)
    if not design.sequential:
        return None
    return {**design.to_json(), "null": expected_looks(design.looks, design.early_z),
            "clear": expected_looks(design.looks, design.early_z, -3.0)}


def render_plan(p: Plan) -> str:
    lines = [
        f"Plan · {p.rounds} rounds × {p.candidates} candidate(s) · {p.replicates} replicates · "
        + (f"{len(p.models)} eval models ({', '.join(p.models)}), counted as task × model pairs · "
           if len(p.models) > 1 else "")
        + f"train {p.n_train} tasks, val {p.n_val} tasks"
        + (f", test {p.n_test} tasks" if p.n_test else ", no --holdout"),
        f"  noise σ (SD of a per-task composite delta) = {p.noise.sigma:.4f} — from {p.noise.source}",
        f"  Minimum detectable effect at {POWER:.0%} power (true mean Δcomposite):",
        f"    one round's gate (gate_z {p.gate_z:g}): {p.mde_gate_first:.4f} at round 1 (df {p.df_first}), "
        f"{p.mde_gate_last:.4f} by round {p.rounds} (df {p.df_last}) — a change this much worse is rejected, "
        "or this much better clears +t·SE, 4 times in 5",
    ]
    if p.mde_test is not None:
        lines.append(f"    final test comparison (champion vs seed, paired t, two-sided α {TEST_ALPHA}, "
                     f"{p.n_test} tasks): {p.mde_test:.4f} (assumes test deltas as noisy as val's)")
    else:
        lines.append("    final test comparison: — (give --holdout to plan it)")
    lines += _resolution_lines(p)
    if p.gate_warning:
        lines.append(f"  {p.gate_warning}")
    lines += [
        f"  Cost: a cell ≈ ${p.cell_usd:.5f} ({p.cell_source}); a mutator call ≈ ${p.mutator_usd:.4f} "
        f"({p.mutator_source})",
        f"    per round ≤ ${p.round_usd:.4f} ({p.candidates} val evaluation(s) of {p.n_val * p.replicates} "
        f"cells, one train evaluation of {p.train_cells} cells" + (", a confirmation of 2 × "
                                                                     f"{p.n_val * p.replicates} cells"
                                                                   if p.confirm
                                                                     else "")
        + (f", {p.null_controls} null control(s) of {p.n_val * p.replicates} cells"
           if p.null_controls else "")
        + f", {p.candidates} mutator call(s))",
        *_cheaper_lines(p),
        *([f"    the LLM judge grades {' and '.join(p.judge_suites)}: ≈ ${p.judge_usd:.5f} a cell "
           f"(estimated: {JUDGE_TOKENS.input_tokens:,} input + {JUDGE_TOKENS.output_tokens:,} output tokens "
           "a call), in the figures above"] if p.judge_suites else []),
        f"    {p.solve_line or 'solve phase off'}",
        f"    per run ≤ ${p.run_usd:.4f} (" + ("the solve phase + " if "phase on" in p.solve_line else "")
        + f"round 0 + {p.rounds} rounds; cached evaluations cost nothing)"
        + (f"; a test run ≈ ${p.test_usd:.4f} (seed, champion and the no-skill control)"
           if p.test_usd is not None else ""),
        "    'measured' figures are means of this store's real calls (a dry run's fakes never price a real "
        "plan); 'estimated' ones are stated token counts at config.json prices",
    ]
    return "\n".join(lines)


def _resolution_lines(p: Plan) -> list[str]:
    """What detecting TARGET_EFFECT would take, always; a warning when nothing under BLIND_ABOVE is
    visible."""
    lines = []
    if p.target:
        (gn, gc, gu), (tn, tc, tu) = p.target["gate"], p.target["test"]
        lines.append(f"  Detecting a change of {TARGET_EFFECT:g} at {POWER:.0%} power, at σ "
                     f"{p.noise.sigma:.4f} and {p.replicates} replicate(s): the gate needs {gn} val tasks × "
                     f"{p.replicates} = {gc} cells "
                     f"per candidate (≈ ${gu:.4f} of val a round); the final test {tn} test tasks × "
                     f"{p.replicates} = {tc} cells per genome (≈ ${tu:.4f} a test run)")
    seen = min(x for x in (p.mde_gate_last, p.mde_test) if x is not None)
    if seen > BLIND_ABOVE:
        lines.append(f"  WARNING: this run cannot see a change smaller than {BLIND_ABOVE:g}: its smallest "
                     f"detectable change is {seen:.4f}. The gate keeps or rejects smaller changes on noise; "
                     "add tasks or replicates (above), or measure σ first (--aa 5)")
    return lines


def _cheaper_lines(p: Plan) -> list[str]:
    """What sequential val and the screen save, as estimates beside the upper bound."""
    lines = []
    if p.design:
        d, val_cells = p.design, p.n_val * p.replicates
        lines.append(f"    val in {d['looks']} waves (early looks at z {d['early_z']:g}, the last at "
                     f"{d['last_z']:.3f}): estimated {d['null'] / d['looks'] * val_cells:.1f} of {val_cells} "
                     f"val cells for a null change and {d['clear'] / d['looks'] * val_cells:.1f} for a "
                     f"change 3 SE worse (normal theory; a kept incumbent's remaining waves are run)")
    if p.screen_cells:
        lines.append(f"    the train screen: {p.screen_cells} cells per candidate before val (reused by a "
                     f"survivor's train evaluation), in the bound above")
    if lines:
        lines.append(f"    per round ≈ ${p.expected_round_usd:.4f} expected when every candidate is a null "
                     "change: screened, then val at a null change's expected waves (a change the screen "
                     f"kills spends less, a kept one also its remaining waves)")
    return lines
