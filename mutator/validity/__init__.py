"""Research validity: statistics, the honest test report, --test-run, --aa and --plan.

May import: `mutator/` (config, score, evaluations, progress), `mutator/store/`, `eval/`, `strategies/`,
`sandbox/`. Never steers the search: nothing here feeds a verdict or a briefing.
"""
