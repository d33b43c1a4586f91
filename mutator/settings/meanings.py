"""What each config key without a flag means, for the generated reference (docs/reference/config.md). A key
with a flag is explained by its flag's help (keys.py `help`); every other key is explained here, once. The
reference's test fails when a key has neither."""

from __future__ import annotations

MEANINGS = {
    "mutatorCmd": "your own mutator's command line, as `--mutator-cmd` (`\"\"` = none)",
    "valQueryWarn": "warn when val has been queried more often than this (val is turning into a training "
                    "set)",
    "score.wCost": "the composite's weight of cost: `score = eval − wCost·(cost/seedCost) − "
                   "wSteps·(steps/seedSteps)`",
    "score.wSteps": "the composite's weight of steps (agent turns)",
    "score.wTrigger": "the weight of triggering in the composite (0: off); part of the run id when above 0",
    "score.tieRule": "which of the gate's ties are kept: `noAddedCost` (only those that do not make the "
                     "skill dearer) or `keep` (all); applied at the last look of val only; part of the run "
                     "id (and the A/A id) unless `keep`",
    "critic.maxSkillLines": "the critic's cap on SKILL.md lines; a parent already over it may grow within "
                            "the growth allowance, with a warning",
    "critic.maxSkillBytes": "the critic's cap on the skill's bytes of text (binary files are not counted)",
    "critic.maxGrowth": "one change may add max(maxGrowth × the parent's text bytes, minGrowthBytes) bytes; "
                        "a SKILL.md already over the line cap may add maxGrowth × its lines",
    "critic.minGrowthBytes": "the smallest growth allowance of one change, in bytes",
    "cellResources": "the Ray resources one cell asks for (with `--executor ray`)",
    "evidenceReplicates": "replicates of the train evaluation of the seed and of each selected genome (the "
                          "mutator's evidence): its first N replicates of every train task; 0 (or more than "
                          "`replicates`) = every replicate; part of the run id when below `replicates`",
    "sequential.waves": "val in waves of one replicate with early looks at z = earlyZ; part of the run id "
                        "when on",
    "sequential.earlyZ": "the boundary of sequential val's early looks",
    "screen.tasks": "the kill-only train screen before val: how many train tasks (0 = off); part of the run "
                    "id when on",
    "screen.replicates": "the screen's replicates per task",
    "screen.z": "the screen's z: a candidate is killed only when it loses beyond it",
    "suites": "suite name → folder (a string, relative to the config file), for `--suite NAME`",
    "pricing": "USD per million tokens per model: `input`, `output`, `cacheWrite`, `cacheRead`; a model "
               "without a price is an error before anything runs; a dated id uses the longest priced name it "
               "starts with",
}
