"""expect_frozen means the same in the watch and the doctor: names, module names, glob
patterns, modules and parameters, all through labcoat.params."""

from __future__ import annotations

import pytest
import torch

from labcoat.errors import InputError
from labcoat.params import as_names, name_matches, resolve, unmatched
from tests.watch._training import CNN, train
from tests.watch.test_plants import PLANT, frozen_backbone_cnn, only


def test_every_form_selects_the_same_tensors():
    torch.manual_seed(0)
    model = CNN()
    forms = [
        "features.*",
        "features",
        [model.features],
        [model.features[0], model.features[1], "features.3"],
    ]
    chosen = [list(resolve(model, form, "expect_frozen", with_buffers=True)) for form in forms]
    assert all(c == chosen[0] for c in chosen)
    assert "features.1.running_mean" in chosen[0] and "head.weight" not in chosen[0]
    weights = resolve(model, ["*.weight", model.head.bias], "x", with_buffers=False)
    assert list(weights) == [
        "features.0.weight",
        "features.1.weight",
        "features.3.weight",
        "head.weight",
        "head.bias",
    ]


def test_names_match_by_name_module_prefix_or_glob_and_not_by_accident():
    assert name_matches("backbone.0.weight", ["backbone"])
    assert name_matches("backbone.0.weight", ["backbone.*"])
    assert not name_matches("backbone2.weight", ["backbone"])  # a prefix of the name, not a module
    assert unmatched(["fc.weight", "fc.bias"], ["fc", "*.bias", "enc.*"]) == ["enc.*"]


def test_objects_become_names_and_strangers_are_refused():
    torch.manual_seed(0)
    model = CNN()
    assert as_names(model, [model.head, model.features[1].running_var, "x*"], "a") == (
        "head",
        "features.1.running_var",
        "x*",
    )
    with pytest.raises(InputError, match=r"`a`\[0\] is a Linear that is not part of the model"):
        as_names(model, [torch.nn.Linear(2, 2)], "a")
    with pytest.raises(InputError, match=r"`a`\[0\] must be a name, a glob pattern"):
        as_names(model, [3], "a")
    with pytest.raises(InputError, match="selects no parameter.*Did you mean 'head"):
        resolve(model, "heads", "a", with_buffers=False)


def test_the_watch_takes_the_documented_glob_and_catches_the_backbone_moving():
    model, opt = frozen_backbone_cnn()

    def plant(step, m, o, x, y):
        if step == PLANT:
            m.train()  # frozen BatchNorm statistics start to move
        return x, y

    w = train(model, opt, steps=PLANT + 5, plant=plant, every=1, expect_frozen=["features.*"])
    assert only(w.alerts, "frozen_moved").subject == "features.1.running_mean"
    model, opt = frozen_backbone_cnn()
    assert train(model, opt, steps=PLANT + 5, every=1, expect_frozen="features.*").alerts == []
