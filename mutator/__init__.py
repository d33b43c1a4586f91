"""The round loop and the mutator's view: loop, mutate, critic, score (composite + gate), briefing,
evidence, view, solve, meta, progress, the run budget, the summary report and the merged config.

May import: its rooms `store/` (and, for the summary, nothing else of them), `eval/`, `strategies/`,
`sandbox/`. Its rooms `validity/`, `after/` and `server/` build on it; it never imports them.
"""
