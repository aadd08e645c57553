"""diagnose(): the contract other parts and users rely on."""

import json

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

import labcoat
from labcoat.doctor.copies import Blueprint
from tests.doctor.helpers import diagnose, digits, mlp


def _state(model, opt):
    return (
        {k: v.clone() for k, v in model.state_dict().items()},
        {id(p): (None if p.grad is None else p.grad.clone()) for p in model.parameters()},
        json.dumps(opt.state_dict(), default=lambda t: t.tolist()),
    )


def test_callers_model_optimizer_and_rng_are_bit_identical_after_full_ladder():
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = digits()
    nn.CrossEntropyLoss()(model(x[:16]), y[:16]).backward()
    opt.step()  # give the optimizer real state to preserve
    model.train()
    before = _state(model, opt)
    rng = torch.get_rng_state()
    report = labcoat.diagnose(model, (x, y), nn.CrossEntropyLoss(), opt, run_all=True, ledger=False)
    assert report.findings
    after = _state(model, opt)
    assert all(torch.equal(before[0][k], after[0][k]) for k in before[0])
    assert all(
        (a is None and b is None) or torch.equal(a, b)
        for a, b in zip(before[1].values(), after[1].values())
    )
    assert before[2] == after[2]
    assert torch.equal(rng, torch.get_rng_state())
    assert model.training  # mode flags untouched


def test_copies_keep_optimizer_class_groups_and_mapping():
    model = mlp()
    opt = torch.optim.SGD(
        [
            {"params": model[0].parameters(), "lr": 0.1},
            {"params": model[2].parameters(), "lr": 0.01, "momentum": 0.9},
        ],
        lr=0.5,
    )
    setup = Blueprint(model, opt).fresh()
    assert type(setup.optimizer) is torch.optim.SGD
    assert [g["lr"] for g in setup.optimizer.param_groups] == [0.1, 0.01]
    assert setup.optimizer.param_groups[1]["momentum"] == 0.9
    copied = {id(p) for p in setup.model.parameters()}
    assert all(id(p) in copied for g in setup.optimizer.param_groups for p in g["params"])
    assert not any(p is q for p in model.parameters() for q in setup.model.parameters())


def test_optimizer_factory_is_accepted():
    report = diagnose(mlp(), optimizer=lambda params: torch.optim.Adam(params, lr=1e-3))
    assert report.ok


class NumpyItems(Dataset):
    """A map-style dataset as many are written: a numpy image and a plain int or numpy label."""

    def __init__(self, x, y, label_type):
        self.x, self.y, self.label_type = x.numpy(), y.numpy(), label_type

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.label_type(self.y[i])


@pytest.mark.parametrize(
    "form",
    [
        "tensors",
        "numpy",
        "dataset",
        "numpy items, int labels",
        "numpy items, np.int64 labels",
        "loader",
        "batches",
    ],
)
def test_every_data_form_gives_the_same_examples(form):
    x, y = digits()
    data = {
        "tensors": (x, y),
        "numpy": (x.numpy(), y.numpy()),
        "dataset": TensorDataset(x, y),
        "numpy items, int labels": NumpyItems(x, y, int),
        "numpy items, np.int64 labels": NumpyItems(x, y, np.int64),
        "loader": DataLoader(TensorDataset(x, y), batch_size=64),
        "batches": [(x[i : i + 100], y[i : i + 100]) for i in range(0, len(x), 100)],
    }[form]
    report = diagnose(mlp(), data, layers=("data", "model", "update"))
    assert report.ok, str(report)
    assert report.examples == {"train": 640, "val": 160}
    assert report["model.forward"].evidence["target_shape"] == [32]  # a scalar label stays a scalar


@pytest.mark.parametrize(
    "data, message",
    [
        ("a string", "expected (X, y) tensors"),
        ((torch.zeros(5, 3), torch.zeros(4)), "X has 5 rows but y has 4"),
        ([(torch.zeros(4, 3),)], "must be an (x, y) pair"),
        ([], "yielded no batches"),
    ],
)
def test_unsupported_data_is_a_clear_input_error(data, message):
    with pytest.raises(labcoat.InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        diagnose(mlp(), data)


def _rows(n):
    x, y = digits()
    return TensorDataset(x[:n], y[:n])


def _read_once():
    batches = iter([(torch.zeros(8, 64), torch.zeros(8, dtype=torch.long))])
    list(batches)
    return batches


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: DataLoader(_rows(20), batch_size=32, drop_last=True),
            "its dataset has 20 rows, fewer than batch_size=32, and drop_last=True drops that "
            "partial batch; pass drop_last=False or a batch_size of at most 20",
        ),
        (lambda: DataLoader(_rows(0), batch_size=32), "the DataLoader's dataset is empty"),
        (
            lambda: DataLoader(
                _rows(50), batch_size=8, sampler=torch.utils.data.SubsetRandomSampler([])
            ),
            "its sampler (SubsetRandomSampler) draws no rows from a dataset of 50 rows",
        ),
        (_read_once, "an iterator or generator can be read only once"),
    ],
)
def test_data_that_yields_no_batch_says_why(make, message):
    with pytest.raises(labcoat.InputError) as caught:
        diagnose(mlp(), make(), layers=("data",))
    assert message in str(caught.value), str(caught.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: DataLoader(_rows(100), batch_size=32, drop_last=True),  # 3 full batches
        lambda: DataLoader(_rows(20), batch_size=32),  # one partial batch, kept
        lambda: iter([(torch.rand(8, 64), torch.arange(8) % 10) for _ in range(4)]),
    ],
)
def test_the_same_forms_with_a_batch_to_give_are_read(make):
    report = diagnose(mlp(), make(), layers=("data",))
    assert report.layers_run == ["data"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"effort": "slow"}, "effort"),
        ({"task": "ranking"}, "task"),
        ({"seed": "0"}, "seed"),
        ({"seed": -1}, "`seed` must be an int seed >= 0; got -1"),
        ({"layers": ["data", "vibes"]}, "unknown layer"),
        ({"expect_frozen": [3]}, "expect_frozen"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, message):
    with pytest.raises(labcoat.InputError, match=message):
        diagnose(mlp(), **kwargs)


def test_bad_model_and_optimizer_are_input_errors():
    with pytest.raises(labcoat.InputError, match="model"):
        labcoat.diagnose(
            "not a model",
            digits(),
            nn.CrossEntropyLoss(),
            lambda p: torch.optim.SGD(p, lr=0.1),
            ledger=False,
        )
    with pytest.raises(labcoat.InputError, match="optimizer"):
        labcoat.diagnose(mlp(), digits(), nn.CrossEntropyLoss(), 0.1, ledger=False)


def test_stops_at_first_failing_layer_unless_run_all():
    x, y = digits()
    y = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(0))]
    stopped = diagnose(mlp(), (x, y), run_all=False)
    assert stopped.failed_layer == "data" and stopped.layers_run == ["data"]
    assert stopped.layers_not_run == ["model", "update"]
    everything = diagnose(mlp(), (x, y), run_all=True)
    assert (
        everything.layers_run == ["data", "model", "update"] and everything.failed_layer == "data"
    )


def test_report_is_json_and_readable():
    report = diagnose(mlp(), expect_frozen=())
    d = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert d["ok"] is True and d["failed_layer"] is None
    assert {"check", "layer", "status", "message", "evidence", "falsifies", "predicts"} <= set(
        d["findings"][0]
    )
    text = str(report)
    assert "update.optimizer.coverage" in text and text.splitlines()[-1].startswith("healthy")


def test_every_registered_check_declares_what_it_falsifies():
    from labcoat.doctor import REGISTRY

    for check in REGISTRY:
        assert check.falsifies and check.predicts, check.id
        assert check.id.startswith(check.layer + "."), check.id


def test_rows_from_a_shuffling_loader_are_named_by_their_index_in_its_dataset():
    x, y = digits()
    x[123, 5] = float("nan")
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, drop_last=True)
    report = diagnose(mlp(), loader, layers=("data",))
    assert report.examples["train"] + report.examples["val"] == 768  # 12 full batches of 64
    f = report["data.finite"]
    assert f.status == "fail"
    where = next(v for k, v in f.evidence.items() if k.endswith("inputs"))
    assert where["first_rows"] == [123]

    healthy = diagnose(
        mlp(), DataLoader(TensorDataset(*digits()), batch_size=64, shuffle=True, drop_last=True)
    )
    assert healthy.ok, str(healthy)


@pytest.mark.parametrize(
    "task, targets, message",
    [
        ("sequence", lambda y: y, "'sequence' needs \\(N, T\\) integer token targets"),
        ("classification", lambda y: y.float() / 3, "'classification' needs integer labels"),
    ],
)
def test_declared_task_must_fit_the_targets(task, targets, message):
    x, y = digits()
    with pytest.raises(labcoat.InputError, match=message):
        diagnose(mlp(), (x, targets(y)), task=task)
    assert diagnose(mlp(), (x, y), task="classification", layers=("data",)).ok


def test_experiment_declares_exactly_diagnoses_setup_parameters():
    import dataclasses
    import inspect

    from labcoat.doctor.api import RUN_OPTIONS, Experiment, diagnose

    params = inspect.signature(diagnose).parameters
    setup = {k: p for k, p in params.items() if k not in RUN_OPTIONS}
    fields = {f.name: f for f in dataclasses.fields(Experiment) if f.name != "name"}
    assert list(fields) == list(setup) and set(RUN_OPTIONS) <= set(params)
    for name, f in fields.items():
        assert str(f.type) == str(setup[name].annotation), name
        if setup[name].default is not inspect.Parameter.empty:
            assert f.default == setup[name].default, name
        else:
            assert f.default is dataclasses.MISSING, name


def test_pandas_tables_are_read_as_x_and_y_and_a_text_column_is_refused():
    import warnings

    import pandas as pd
    from sklearn.datasets import load_wine

    frame = load_wine(as_frame=True).frame
    features = frame.drop(columns="target")
    features = (features - features.mean()) / features.std()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(13, 16), nn.ReLU(), nn.Linear(16, 3)).double()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no read-only-array warning from pandas' copy-on-write
        report = diagnose(model, (features, frame["target"]), layers=("data", "model"))
    assert report.examples["train"] + report.examples["val"] == len(frame)
    assert report.ok, report.summary()
    texts = features.assign(colour=pd.Series(["red"] * len(frame)))
    with pytest.raises(labcoat.InputError, match="X"):
        diagnose(model, (texts, frame["target"]), layers=("data",))
