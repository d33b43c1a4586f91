"""The stateless evaluation core: evaluate(skill, suite, contract) -> cells. Suites, the cell runner,
the scheduler, the watchdog, stream metrics, cost, snapshots, agent backends and graders.

May import: `sandbox/` only. Never imports `mutator/` and never touches the store.
"""
