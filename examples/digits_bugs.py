"""The healthy digits setup with one planted bug per function. Each is a mistake that trains
without an error message and quietly ruins the run; the doctor should name its layer.

    labcoat doctor examples/digits_bugs.py:head_not_in_optimizer   # update layer
    labcoat doctor examples/digits_bugs.py:labels_misaligned       # data layer
    labcoat doctor examples/digits_bugs.py:detached_body           # model layer
    labcoat doctor examples/digits_bugs.py:one_unit_bottleneck     # overfit layer
    labcoat doctor examples/digits_bugs.py:metric_reads_targets    # shuffle layer
"""

import torch
from digits import MLP, digits_tensors
from torch import nn

import labcoat

#: which layer the doctor should stop at for each planted bug
EXPECTED_LAYER = {
    "head_not_in_optimizer": "update",
    "labels_misaligned": "data",
    "detached_body": "model",
    "one_unit_bottleneck": "overfit",
    "metric_reads_targets": "shuffle",
}


def head_not_in_optimizer() -> labcoat.Experiment:
    """The optimizer is built before the head is replaced, so the new head never trains."""
    torch.manual_seed(0)
    model = MLP()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.head = nn.Linear(64, 10)  # e.g. a fresh head for fine-tuning, added after the optimizer
    return labcoat.Experiment(
        model=model, data=digits_tensors(), loss_fn=nn.CrossEntropyLoss(), optimizer=optimizer
    )


def labels_misaligned() -> labcoat.Experiment:
    """Labels sorted separately from the images (an off-by-one join, a shuffled label file)."""
    torch.manual_seed(0)
    x, y = digits_tensors()
    y = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(1))]
    model = MLP()
    return labcoat.Experiment(
        model=model,
        data=(x, y),
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=torch.optim.Adam(model.parameters(), lr=1e-3),
    )


class DetachedMLP(MLP):
    def forward(self, x):
        features = self.body(x).detach()  # meant for logging, but it cuts the graph
        return self.head(features)


def detached_body() -> labcoat.Experiment:
    torch.manual_seed(0)
    model = DetachedMLP()
    return labcoat.Experiment(
        model=model,
        data=digits_tensors(),
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=torch.optim.Adam(model.parameters(), lr=1e-3),
    )


class Bottleneck(nn.Module):
    """A refactor left the representation squeezed through one unit (a width typo)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
        self.head = nn.Linear(1, 10)

    def forward(self, x):
        return self.head(self.body(x))


def one_unit_bottleneck() -> labcoat.Experiment:
    torch.manual_seed(0)
    model = Bottleneck()
    return labcoat.Experiment(
        model=model,
        data=digits_tensors(),
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=torch.optim.Adam(model.parameters(), lr=1e-3),
    )


def accuracy_of_targets(output, target):
    """The metric compares the target with itself (a variable-name slip): always 1.0."""
    predicted = target  # meant: output.argmax(dim=1)
    return float((predicted == target).float().mean())


def metric_reads_targets() -> labcoat.Experiment:
    torch.manual_seed(0)
    model = MLP()
    return labcoat.Experiment(
        model=model,
        data=digits_tensors(),
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=torch.optim.Adam(model.parameters(), lr=1e-3),
        metric=accuracy_of_targets,
    )
