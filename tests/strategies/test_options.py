"""--strategy-opts: every strategy is registered, unknown keys and bad values are refused with a listing."""

import pytest

from strategies import StrategyError, make_strategy


@pytest.mark.parametrize("strategy_id", ["greedy", "branching", "population", "pareto"])
def test_every_strategy_is_registered_with_its_defaults(strategy_id):
    assert make_strategy(strategy_id, {}).id == strategy_id


def test_defaults_are_the_documented_ones():
    population = make_strategy("population", {})
    assert (population.size, population.children, population.crossover_rate) == (4, 2, 0.5)
    assert make_strategy("branching", {}).width == 3
    assert make_strategy("pareto", {}).targets == 3


@pytest.mark.parametrize("strategy_id, opts, words", [
    ("branching", {"wdth": 3}, ["unknown key(s) wdth", "width=3"]),
    ("branching", {"width": 0}, ["width", ">= 1", "width=3"]),
    ("branching", {"width": 2.5}, ["width must be int"]),
    ("population", {"crossoverRate": 1.5}, ["crossoverRate", "[0, 1]", "pool=4, children=2, crossoverRate=0.5"]),
    ("population", {"pool": -1}, ["pool", ">= 1"]),
    ("population", {"children": "2"}, ["children must be int"]),
    ("pareto", {"targets": -1}, ["targets", "targets=3"]),
    ("pareto", {"width": 3}, ["unknown key(s) width", "targets=3"]),
])
def test_bad_options_are_refused_with_the_valid_ones_listed(strategy_id, opts, words):
    with pytest.raises(StrategyError) as err:
        make_strategy(strategy_id, opts)
    for word in words:
        assert word in str(err.value)


def test_unknown_strategy_lists_all_four():
    with pytest.raises(StrategyError, match="branching, greedy, pareto, population"):
        make_strategy("annealing", {})


def test_integer_crossover_rate_is_accepted_as_a_number():
    assert make_strategy("population", {"crossoverRate": 1}).crossover_rate == 1.0
