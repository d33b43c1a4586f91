"""One round and the run around it: the loop (plan -> mutate -> critic -> evaluate -> score -> integrate ->
train) over one frozen Session, one attempt's steps (candidate.py) and a round's state (state.py), the mutator
call and its tamper check, cached evaluations and their outcome, the stops, the winner's-curse confirmation,
failure rules, the solve phase, the run budget, provenance, progress and the end-of-run summary. Every SQL
statement it needs is a function of `mutator/store/`; an attempt comes back as a store AttemptRow.

May import: `mutator/scoring/`, `mutator/critic/`, `mutator/briefing/`, `mutator/store/`, `mutator.config`,
`eval/`, `strategies/`, `sandbox/`. Never imports `validity/`, `after/`, `mining/` or `server/`.
"""
