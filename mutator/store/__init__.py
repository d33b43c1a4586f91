"""The store: the one SQLite database and its migrations, the content-addressed genome store, and the
evaluation cache (evaluation and cell rows keyed by the evaluation contract).

May import: `eval/` (contracts, snapshots) only. Never runs an agent, never decides a verdict.
"""
