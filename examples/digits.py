"""A small, healthy classifier on scikit-learn's digits (8x8 images, 10 classes).

    labcoat doctor examples/digits.py            # runs experiment()

The setup is what most training scripts look like: tensors, a model, a loss and an optimizer
instance built on the model's parameters.
"""

import torch
from sklearn.datasets import load_digits
from torch import nn

import labcoat


def digits_tensors():
    """Inputs scaled to [0, 1] and integer labels."""
    x, y = load_digits(return_X_y=True)
    return torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y)


class MLP(nn.Module):
    def __init__(self, hidden: int = 64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.head = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.head(self.body(x))


def experiment() -> labcoat.Experiment:
    torch.manual_seed(0)
    model = MLP()
    return labcoat.Experiment(
        model=model,
        data=digits_tensors(),
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=torch.optim.Adam(model.parameters(), lr=1e-3),
    )
