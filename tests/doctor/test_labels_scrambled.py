"""Labels scrambled inside each batch, on token-id and dict inputs (issue 24, item 1).

A ``collate_fn`` that permutes the labels within each batch leaves every input with another
example's label. On numeric features the kNN/linear baseline finds no signal; token ids get a
baseline of their own (a linear model on a bag of tokens, kNN on token positions), so the data
layer catches the bug there too. Healthy twins: the same loaders without the scramble, a token
classifier and a Hugging Face style dict model, pass.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

import labcoat

VOCAB, LENGTH = 20, 8


def sentences(n: int = 320, seed: int = 0):
    """Token sequences labelled by which half of the vocabulary most of their tokens are from."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    low = torch.randint(1, VOCAB // 2, (n, LENGTH), generator=g)
    high = torch.randint(VOCAB // 2, VOCAB, (n, LENGTH), generator=g)
    pick = torch.rand(n, LENGTH, generator=g) < 0.8
    return torch.where(pick == y.bool().unsqueeze(1), high, low), y


class Bag(nn.Module):
    def __init__(self):
        torch.manual_seed(0)
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.out = nn.Linear(16, 2)

    def forward(self, tokens):
        return self.out(self.embed(tokens).mean(dim=1))


class HFStyle(Bag):
    def forward(self, input_ids, attention_mask=None, labels=None):
        return super().forward(input_ids)


def _stack(batch):
    return torch.stack([b[0] for b in batch]), torch.stack([b[1] for b in batch])


def _scrambled(batch):
    """The planted bug: the labels of a batch in another order than its inputs."""
    x, y = _stack(batch)
    g = torch.Generator().manual_seed(int(x.sum()))
    return x, y[torch.randperm(len(y), generator=g)]


def _as_dict(collate):
    def to_dict(batch):
        x, y = collate(batch)
        return {"input_ids": x, "attention_mask": torch.ones_like(x), "labels": y}

    return to_dict


FORMS = {
    "token ids": (_stack, _scrambled, Bag),
    "dict batches": (_as_dict(_stack), _as_dict(_scrambled), HFStyle),
}


def _diagnose(collate, model_class):
    x, y = sentences()
    loader = DataLoader(list(zip(x, y)), batch_size=32, collate_fn=collate)
    model = model_class()
    return labcoat.diagnose(
        model,
        loader,
        nn.CrossEntropyLoss(),
        torch.optim.Adam(model.parameters(), 1e-2),
        layers=("data",),
        ledger=False,
        progress=False,
    )


@pytest.mark.parametrize("form", list(FORMS))
def test_labels_scrambled_within_batches_fail_the_token_baseline(form):
    _, scrambled, model_class = FORMS[form]
    finding = _diagnose(scrambled, model_class)["data.signal.baseline"]
    assert finding.status == "fail", finding.message
    assert "no better than chance" in finding.message
    assert set(finding.evidence["baselines"]) == {
        "bag_of_tokens",
        "tokens_at_positions",
        "knn_positions",
    }


@pytest.mark.parametrize("form", list(FORMS))
def test_the_same_loader_without_the_scramble_passes(form):
    plain, _, model_class = FORMS[form]
    report = _diagnose(plain, model_class)
    finding = report["data.signal.baseline"]
    assert finding.status == "pass" and finding.evidence["pvalue"] < 1e-6, finding.message
    assert report.ok, report.summary()


def test_order_alone_carries_the_label_and_tokens_at_positions_find_it():
    """Twin for a label a bag of tokens cannot see (which token comes first): the positional
    baseline keeps an order-dependent task from reading as no signal."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, VOCAB, (320, LENGTH), generator=g)
    y = (x[:, 0] < x[:, 1]).long()
    model = Bag()
    report = labcoat.diagnose(
        model,
        (x, y),
        nn.CrossEntropyLoss(),
        torch.optim.Adam(model.parameters(), 1e-2),
        layers=("data",),
        ledger=False,
        progress=False,
    )
    finding = report["data.signal.baseline"]
    assert finding.status == "pass", finding.message


def test_each_input_field_of_a_dict_batch_is_coded_apart_and_alike_in_both_splits():
    from types import SimpleNamespace

    from labcoat.doctor.checks.data import token_ids
    from labcoat.doctor.inputs import DictInputs

    fields = DictInputs("labels", ("input_ids", "attention_mask"), ((3,), (3,)), (torch.long,) * 2)
    train = torch.tensor([[5, 6, 7, 1, 1, 1]])
    val = torch.tensor([[7, 8, 9, 1, 1, 0]])
    case = SimpleNamespace(
        train=SimpleNamespace(x=train, fields=fields), val=SimpleNamespace(x=val, fields=fields)
    )
    coded_train, coded_val = token_ids(case, train), token_ids(case, val)
    assert coded_train[0, 2] == coded_val[0, 0]  # token 7 of input_ids, in both splits
    assert coded_train[0, 3] != coded_train[0, 0] - 4  # mask value 1 is not token 1
    assert set(coded_train[0, :3]).isdisjoint(coded_train[0, 3:])
