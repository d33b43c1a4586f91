"""After the run: proposals, deploy + rollback, health checks + drift, spend + daily budgets, audit,
export, evals.json import, and their CLI glue.

May import: `mutator/` (config, evaluations, budget, progress), `mutator/store/`, `eval/`, `sandbox/`.
Never deploys without an explicit accept.
"""
