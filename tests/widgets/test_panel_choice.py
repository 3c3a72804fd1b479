"""The widget asks for the plot's panels at every refresh; the callback chooses them again only when the facts that
choose them change (a new metric, the first negative loss, an lr change), and a new run starts afresh."""
from __future__ import annotations

from typing import Any

from nbcallback.widgets import Dashboard, LiveLossPlot, Panel


class Counting(LiveLossPlot):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.asked = 0

    def _panels_for(self, facts: dict[str, Any]) -> list[Panel]:
        self.asked += 1
        return super()._panels_for(facts)


def test_the_panels_are_chosen_again_only_when_their_facts_change() -> None:
    callback = Counting(display="off")
    facts = {"metrics": [], "loss_positive": True, "lr_changed": False, "x_range": [0, 10], "series": {}}
    first = callback._panels(facts)
    for step in range(1, 20):  # refreshes: the series and the x range change, the facts that choose panels do not
        assert callback._panels({**facts, "x_range": [0, 10 + step], "series": {"loss": {}}}) is first
    assert callback.asked == 1
    assert [panel.to_json() for panel in first] == [panel.to_json() for panel in callback._panels_for(facts)]
    callback.asked = 0
    for changed in ({"metrics": ["accuracy"]}, {"loss_positive": False}, {"lr_changed": True}):
        panels = callback._panels({**facts, **changed})
        assert [p.to_json() for p in panels] == [p.to_json() for p in callback._panels_for({**facts, **changed})]
        assert [p.to_json() for p in panels] != [p.to_json() for p in first], changed
    assert callback.asked == 6  # once per change, once per direct call above


def test_a_new_run_chooses_its_panels_afresh() -> None:
    callback = Dashboard(display="off")
    facts = {"metrics": ["accuracy"], "loss_positive": True, "lr_changed": False}
    before = callback._panels(facts)
    with callback:  # a run begins (and ends without hooks)
        assert callback._panels(facts) is not before
