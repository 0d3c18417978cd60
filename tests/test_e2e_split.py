"""tests/e2e/split.py: the run of a split e2e suite each test belongs to."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.e2e import split


@dataclass
class Item:
    """The two things `run_of` reads of a pytest item."""

    nodeid: str = "tests/e2e/test_x.py::test_x"
    markers: dict[str, pytest.Mark] = field(default_factory=dict)

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return self.markers.get(name)


def _item(*marks: pytest.MarkDecorator) -> pytest.Item:
    item = Item(markers={m.mark.name: m.mark for m in marks})
    return item  # type: ignore[return-value]


def test_a_test_belongs_to_the_run_it_names_else_controllers_when_it_needs_them_else_bare() -> None:
    assert split.run_of(_item()) == "bare"
    assert split.run_of(_item(pytest.mark.run_in("mock"))) == "mock"
    assert split.run_of(_item(pytest.mark.run_in("controllers"))) == "controllers"
    assert split.run_of(_item(pytest.mark.needs_controllers)) == "controllers"
    assert split.run_of(_item(pytest.mark.needs_controllers, pytest.mark.run_in("controllers"))) == "controllers"


def test_a_run_that_does_not_exist_or_contradicts_needing_the_controllers_is_refused() -> None:
    with pytest.raises(pytest.UsageError, match=r"run_in\('bar'\): expected one of mock, bare, controllers"):
        split.run_of(_item(pytest.mark.run_in("bar")))
    with pytest.raises(pytest.UsageError, match=r"needs the controllers but is marked run_in\('bare'\)"):
        split.run_of(_item(pytest.mark.needs_controllers, pytest.mark.run_in("bare")))
