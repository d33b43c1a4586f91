"""The dotted sections of config.json as small frozen records, each key declared once (keys.py): the gate and
the composite (`score`), the screen, sequential val, the critic's size caps and the build agents' watchdog.
Their keys keep their flat names (`gate_z`, `screen_tasks`, ...) for flags and SKILL_MUTATOR_* variables."""

from __future__ import annotations

from dataclasses import dataclass

from mutator.settings.keys import Record, at_least_zero, key, positive

GATE_METHOD_RULE = "signflip (exact for any symmetric noise) or t (Student t, exact for normal noise)"
GATE_METHOD_HELP = ("how the gate's critical value t is made: signflip (default; sign flips of the "
                    "candidate's own deltas, a false-reject rate of 1 − Φ(gateZ) for any symmetric noise) or "
                    "t (the Student-t quantile, exact for normal deltas)")
MODEL_GATE_RULE = ("mean (the gate pools every eval model's deltas) or each (a decisive loss on any one "
                   "model rejects, Holm over the models)")
MODEL_GATE_HELP = ("with several --model: mean (default) gates the mean over models; each rejects a "
                   "candidate that is a decisive loss on any one model (Holm over the models)")
TIE_RULE = "noAddedCost (a tie the gate keeps is kept only when it adds no cost) or keep (every tie)"
KEEP_RULES = ("lenient", "strict", "positive", "eb", "ebc")
KEEP_RULE = ("lenient (keep unless a decisive loss), strict (keep only a decisive win), positive (Δ > "
             "minImprovement), eb (empirical Bayes: posterior mean gain > minImprovement) or ebc (eb that "
             "also corrects the incumbent's winner's curse)")
KEEP_RULE_HELP = ("which candidates the last look keeps: positive (the default: Δ > minImprovement), lenient "
                  "(the spec's gate, the default before: unless a decisive loss), strict (only a decisive "
                  "win), eb (empirical Bayes over the run's own attempts: posterior mean gain > "
                  "minImprovement) or ebc (eb that also corrects the incumbent's winner's curse)")


@dataclass(frozen=True, kw_only=True)
class ScoreSettings(Record):
    """config.json `score`: the keep gate's centre, calibration and method, the composite's weights and the
    tie rule."""
    min_improvement: float = key("score.minImprovement", rule="a number", group="loop",
                                 help="centre of the keep gate (score.minImprovement)")
    gate_z: float = key("score.gateZ", at_least_zero, "a number >= 0", group="loop",
                        help="noise calibration of the gate; 0 = raw minImprovement gate")
    gate_method: str = key("score.gateMethod", lambda v: v in ("signflip", "t"), GATE_METHOD_RULE, "signflip",
                           group="loop", flag={"choices": ("signflip", "t")}, help=GATE_METHOD_HELP)
    model_gate: str = key("score.modelGate", lambda v: v in ("mean", "each"), MODEL_GATE_RULE, "mean",
                          group="loop", flag={"choices": ("mean", "each")}, help=MODEL_GATE_HELP)
    w_cost: float = key("score.wCost", at_least_zero, "a number >= 0")
    w_steps: float = key("score.wSteps", at_least_zero, "a number >= 0")
    w_trigger: float = key("score.wTrigger", at_least_zero, "a number >= 0 (0 = triggering not scored)", 0.0)
    tie_rule: str = key("score.tieRule", lambda v: v in ("keep", "noAddedCost"), TIE_RULE, "noAddedCost")
    keep_rule: str = key("score.keepRule", lambda v: v in KEEP_RULES, KEEP_RULE, "positive", group="loop",
                         flag={"choices": KEEP_RULES}, help=KEEP_RULE_HELP)


@dataclass(frozen=True, kw_only=True)
class WatchdogSettings(Record):
    """config.json `watchdog`: how long a build agent's stream may stay silent (at first, then between
    growths)."""
    silence_ms: int = key("watchdog.silenceMs", positive, "milliseconds >= 1", group="loop",
                          help="watchdog silence budget before an agent's stream grows",
                          attr="build_timeout_ms")
    heartbeat_ms: int = key("watchdog.heartbeatMs", positive, "milliseconds >= 1", group="loop",
                            help="watchdog budget between stream growths", attr="build_heartbeat_ms")


@dataclass(frozen=True, kw_only=True)
class CriticSettings(Record):
    """config.json `critic`: the size caps a candidate skill must stay within (mutator/critic/caps.py)."""
    max_lines: int = key("critic.maxSkillLines", positive, "an integer >= 1", attr="critic_max_lines")
    max_bytes: int = key("critic.maxSkillBytes", positive, "an integer >= 1", attr="critic_max_bytes")
    max_growth: float = key("critic.maxGrowth", at_least_zero, "a fraction >= 0 (0.2 = +20%)",
                            attr="critic_max_growth")
    min_growth_bytes: int = key("critic.minGrowthBytes", at_least_zero, "an integer >= 0",
                                attr="critic_min_growth_bytes")


@dataclass(frozen=True, kw_only=True)
class SequentialSettings(Record):
    """config.json `sequential`: val in waves with early looks, and the early looks' boundary."""
    waves: bool = key("sequential.waves", rule="true (val in waves, one replicate each, with early looks) or "
                      "false (every val cell at once)", default=True, attr="sequential")
    early_z: float = key("sequential.earlyZ", positive, "a z > 0 (the early looks' boundary)", 2.0,
                         attr="sequential_early_z")


@dataclass(frozen=True, kw_only=True)
class ScreenSettings(Record):
    """config.json `screen`: the train tasks a candidate is screened on first (0 = no screen), their
    replicates and the screen's z."""
    tasks: int = key("screen.tasks", at_least_zero, "an integer >= 0 (0 = no screen)", 6, attr="screen_tasks")
    replicates: int = key("screen.replicates", positive, "an integer >= 1", 1, attr="screen_replicates")
    z: float = key("screen.z", positive, "a z > 0 (the screen's false-kill rate is 1 − Φ(z))", 2.0,
                   attr="screen_z")


BREAKER_MAX = 1000
BREAKER_HELP = ("stop the run (exit 8, resumable) after this many cell tries in a row fail on the "
                "infrastructure (the model API, the network), instead of retrying every cell (default 3)")


@dataclass(frozen=True, kw_only=True)
class BreakerSettings(Record):
    """config.json `breaker`: the circuit breaker across cells (eval/breaker.py)."""
    infra_failures: int = key("breaker.infraFailures",
                              lambda v: 1 <= v <= BREAKER_MAX and not isinstance(v, bool),
                              f"an integer from 1 to {BREAKER_MAX}", 3, group="loop",
                              attr="breaker_infra_failures", flag={"metavar": "N"}, help=BREAKER_HELP)


FAKE_NOISES = ("off", "realistic")
FAKE_NOISE_HELP = ("dry run only: off (default; the fake build agent as the demo runs it) or realistic (each "
                   "cell a pass/fail trial, per-task success drawn from SkillsBench's fitted prior: rehearse "
                   "the gate, --plan and --aa on real-agent noise for free)")
