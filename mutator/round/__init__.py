"""One round and the run around it: the loop (plan -> mutate -> critic -> evaluate -> score -> integrate ->
train), the mutator call and its tamper check, cached evaluations, the winner's-curse confirmation, failure
rules, the solve phase, the run budget, provenance, progress and the end-of-run summary.

May import: `mutator/scoring/`, `mutator/critic/`, `mutator/briefing/`, `mutator/store/`, `mutator.config`,
`eval/`, `strategies/`, `sandbox/`. Never imports `validity/`, `after/`, `mining/` or `server/`.
"""
