"""The round loop and the mutator's view: loop, mutate, critic, score (composite + gate; the gate's scale in mad,
its sign-flip critical value in signflip), briefing, evidence, view, solve, meta, progress, the run budget, the
summary report and the merged config.

May import: its rooms `store/` (and, for the summary, nothing else of them), `eval/`, `strategies/`,
`sandbox/`. Its rooms `validity/`, `after/` and `server/` build on it; it never imports them.
"""
