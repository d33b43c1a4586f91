"""The store: the one SQLite database and its migrations, the content-addressed genome store, and the
evaluation cache (evaluation and cell rows keyed by the evaluation contract); every statement the round runs,
behind functions that return records (an attempt as a frozen AttemptRow, rows.py).

May import: `eval/` (contracts, snapshots) only. Never runs an agent, never decides a verdict.
"""
