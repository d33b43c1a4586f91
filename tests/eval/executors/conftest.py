"""Fixtures of the eval tests."""

from tests.eval.executors.executor_support import driver  # noqa: F401 - the fixture, for test_executors and test_ray_executor
