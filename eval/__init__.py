"""The stateless evaluation core: evaluate(skill, suite, contract) -> cells. Suites, the cell runner,
the one agent call (agent_call.py: the SM_* contract, spawning, stream reading, charging; every agent process
runs through it), the scheduler, the watchdog, stream metrics, cost, snapshots, agent backends and graders.

May import: `sandbox/` only. Never imports `mutator/` and never touches the store.
"""
