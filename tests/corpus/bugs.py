"""Silent bugs reduced from public reports (each cites its thread); each must be caught.

Every case rebuilds the reported mistake on small real data (scikit-learn's digits, breast
cancer and diabetes sets, or generated token sequences) and names the layer where the doctor
must stop. The ladder stops at the first failing layer (``run_all=False``), so a case costs only
the layers up to its own. Where a reduction departs from the report (another framework, a
smaller model), the docstring says how.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_breast_cancer, load_diabetes
from torch import nn
from torch.utils.data import DataLoader, Dataset

from tests.corpus.registry import Verdict, bug, doctor_verdict
from tests.doctor.helpers import (
    Accumulate,
    SchedulerStep,
    Tagger,
    TinyLM,
    diabetes,
    digits,
    lm_loss,
    mlp,
    no_zero_grad_step,
    regressor,
    standard_step,
    tag_data,
)


def verdict(model, data, loss_fn=None, optimizer=None, **kwargs) -> Verdict:
    """The doctor's verdict, stopping at the first failing layer."""
    loss_fn = nn.CrossEntropyLoss() if loss_fn is None else loss_fn
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3) if optimizer is None else optimizer
    return doctor_verdict(model, data, loss_fn, optimizer, run_all=False, **kwargs)


@functools.cache
def _breast_cancer():
    x, y = load_breast_cancer(return_X_y=True)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


def breast_cancer(scaled: bool = True):
    """569 tumours, 30 raw features (areas up to ~4000); ``scaled`` standardises them."""
    x, y = _breast_cancer()
    x = x.clone()
    if scaled:
        x = (x - x.mean(0)) / x.std(0)
    return x, y.clone()


def walk_tokens(n=96, length=8, vocab=16, seed=0):
    """Token sequences that step +1 or +2 (mod V) at random: thousands of distinct sequences,
    each next token half predictable. Returns (inputs, next tokens)."""
    g = torch.Generator().manual_seed(seed)
    steps = torch.randint(1, 3, (n, length), generator=g)
    start = torch.randint(0, vocab, (n, 1), generator=g)
    seq = torch.cat([start, (start + steps.cumsum(1))], dim=1) % vocab
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def binary_mlp(d_in=30, seed=0, out=None):
    torch.manual_seed(seed)
    layers = [nn.Linear(d_in, 32), nn.ReLU(), nn.Linear(32, 1), nn.Flatten(0)]
    if out is not None:
        layers.append(out)
    return nn.Sequential(*layers)


# -- data: labels, inputs and splits -------------------------------------------------------------


@bug(
    "labels_shuffled_separately",
    expect="data",
    source="https://github.com/Borda/kaggle_image-classify/pull/12",
)
def labels_shuffled_separately() -> Verdict:
    """The shuffle was applied after the raw labels were taken: images and labels permuted apart."""
    x, y = digits()
    y = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(1))]
    return verdict(mlp(), (x, y))


@bug(
    "labels_compared_to_unshuffled_source",
    expect="data",
    source="https://github.com/udacity/nd320-c1-emr-data-starter/issues/4",
)
def labels_compared_to_unshuffled_source() -> Verdict:
    """Rows were shuffled into batches but labels were read from the unshuffled source, row by
    row: reduced to a dataset whose labels come from another order of the same table."""
    x, y = digits()
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(7))
    return verdict(mlp(), (x[order], y))


class _LengthSortingCollate:
    """A collate_fn that sorts a batch's inputs (here by their norm, as packed sequences are
    sorted by length) and leaves the targets in the original order."""

    def __call__(self, items):
        xs = torch.stack([x for x, _ in items])
        ys = torch.stack([y for _, y in items])
        order = xs.norm(dim=1).argsort(descending=True)
        return xs[order], ys


@bug(
    "collate_sorts_inputs_not_labels",
    expect="data",
    source="https://github.com/asappresearch/slue-toolkit/issues/37",
)
def collate_sorts_inputs_not_labels() -> Verdict:
    """The collater sorts the collated inputs, so targets and inputs are mismatched."""
    x, y = digits()
    dataset = torch.utils.data.TensorDataset(x, y)
    loader = DataLoader(
        dataset,
        batch_size=32,
        shuffle=True,
        collate_fn=_LengthSortingCollate(),
        generator=torch.Generator().manual_seed(0),
    )
    return verdict(mlp(), loader)


@bug(
    "labels_start_at_one",
    expect="data",
    source="https://github.com/pytorch/pytorch/issues/15666",
)
def labels_start_at_one() -> Verdict:
    """A CIFAR-10 variant labelled 1..10 fed to a 10-way cross-entropy (0..9 expected)."""
    x, y = digits()
    return verdict(mlp(), (x, y + 1))


@bug(
    "target_left_in_features",
    expect="data",
    source="https://github.com/neurodata/SPORF/issues/355",
)
def target_left_in_features() -> Verdict:
    """The target column was copied into the feature matrix: 100% accuracy from one feature."""
    x, y = breast_cancer()
    x = torch.cat([x, y[:, None].float()], dim=1)
    return verdict(binary_mlp(31), (x, y.float()), nn.BCEWithLogitsLoss())


@bug(
    "recoded_target_as_feature",
    expect="data",
    source="https://github.com/mwaskom/seaborn-data/issues/37",
)
def recoded_target_as_feature() -> Verdict:
    """Titanic's 'alive' column is 'survived' recoded as yes/no: a feature that is the label."""
    x, y = breast_cancer()
    alive_no = (1 - y).float()[:, None]
    x = torch.cat([alive_no, x], dim=1)
    return verdict(binary_mlp(31), (x, y.float()), nn.BCEWithLogitsLoss())


@bug(
    "regression_target_identical_to_a_feature",
    expect="data",
    source="https://github.com/openml/OpenML/issues/474",
)
def regression_target_identical_to_a_feature() -> Verdict:
    """OpenML datasets whose target is simply identical to one feature."""
    x, y = diabetes()
    x = torch.cat([x, y[:, None]], dim=1)
    model = regressor()
    model[0] = nn.Linear(11, 32)
    return verdict(model, (x, y), nn.MSELoss())


@bug(
    "test_split_duplicates_training",
    expect="data",
    source="https://github.com/stefyste/RIAWELC/issues/2",
)
def test_split_duplicates_training() -> Verdict:
    """Every held-out image is a byte-for-byte copy of a training image."""
    x, y = digits()
    return verdict(mlp(), (x, y), val_data=(x[:160].clone(), y[:160].clone()))


@bug(
    "integer_normalisation_zeroes_pixels",
    expect="data",
    source="https://github.com/keras-team/keras/issues/255",
)
def integer_normalisation_zeroes_pixels() -> Verdict:
    """Pixels normalised while the array was still an integer type: every pixel became 0."""
    x, y = digits()
    pixels = (x * 240).round().to(torch.uint8)  # 8-bit scans whose brightest pixel is 240
    normalised = torch.div(pixels, 255, rounding_mode="floor").float()
    return verdict(mlp(), (normalised, y))


@bug(
    "missing_targets_left_as_nan",
    expect="data",
    source="https://github.com/Nixtla/neuralforecast/issues/186",
)
def missing_targets_left_as_nan() -> Verdict:
    """Missing values in the target column are passed through; the loss becomes NaN in training."""
    x, y = diabetes()
    y[torch.randperm(len(y), generator=torch.Generator().manual_seed(2))[:20]] = float("nan")
    return verdict(regressor(), (x, y), nn.MSELoss())


@bug(
    "input_batches_hold_nan",
    expect="data",
    source="https://github.com/prs-eth/Marigold/issues/111",
)
def input_batches_hold_nan() -> Verdict:
    """Some input images hold NaN (invalid depth pixels), and the loss turns NaN."""
    x, y = digits()
    x[::37, 5] = float("nan")
    return verdict(mlp(), (x, y))


class _ClassSortedImages(Dataset):
    """Images stored class by class (a folder per class), read in that order."""

    def __init__(self):
        x, y = digits()
        order = torch.argsort(y, stable=True)
        self.x, self.y = x[order], y[order]

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


@bug(
    "class_sorted_data_without_shuffle",
    expect="data",
    source="https://github.com/yaoyao-liu/mini-imagenet-tools/issues/4",
)
def class_sorted_data_without_shuffle() -> Verdict:
    """Images sorted by class and a DataLoader left at shuffle=False: every batch is one class."""
    loader = DataLoader(_ClassSortedImages(), batch_size=32, shuffle=False)
    return verdict(mlp(), loader, layers=("data",))  # it must land there; later layers cannot help


class _NoisyAugmentedDigits(Dataset):
    """Augmentation from a RandomState created once in the dataset: forked workers copy it, so
    every worker draws the same noise sequence."""

    def __init__(self):
        self.x, self.y = digits()
        self.rng = np.random.RandomState(0)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        noise = torch.tensor(self.rng.normal(0, 0.1, self.x.shape[1]), dtype=torch.float32)
        return self.x[i] + noise, self.y[i]


@bug(
    "workers_share_augmentation_seed",
    expect="data",
    source="https://github.com/pytorch/pytorch/issues/5059",
)
def workers_share_augmentation_seed() -> Verdict:
    """np.random in DataLoader workers repeats the same numbers in every worker."""
    loader = DataLoader(
        _NoisyAugmentedDigits(),
        batch_size=32,
        shuffle=True,
        num_workers=2,
        generator=torch.Generator().manual_seed(0),
    )
    return verdict(mlp(), loader, layers=("data",))  # it must land there; later layers cannot help


def _tags_skipping_the_pad_index(out, y, pad_index=0):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), ignore_index=pad_index)


@bug(
    "pad_index_ignores_a_real_tag",
    expect="data",
    source="https://github.com/nyu-mll/jiant/issues/925",
)
def pad_index_ignores_a_real_tag() -> Verdict:
    """jiant's tagger passed its pad index (0) as cross_entropy's ignore_index while 0 was also
    a target tag, so every target of tag 0 was dropped from the loss. Reduced to a GRU tagger
    on generated sentences, padding tagged 0 and tags 0..3 (before, the overfit control
    caught it, saying the tiny batch's tokens were not fitted)."""
    x, y = tag_data()
    y[x == 0] = 0  # padding gets the pad index as its tag
    model = Tagger()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    return verdict(model, (x, y), _tags_skipping_the_pad_index, optimizer)


# -- model: forward, loss and gradients ----------------------------------------------------------


@bug(
    "regression_output_n1_against_targets_n",
    expect="model",
    source="https://github.com/deepset-ai/FARM/issues/229",
)
def regression_output_n1_against_targets_n() -> Verdict:
    """A regression head of width 1 whose (N, 1) output meets (N,) targets in MSELoss: every
    prediction is compared with every target (PyTorch only warns)."""
    x, y = diabetes()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
    return verdict(model, (x, y), nn.MSELoss())


class _DetachedFeatures(nn.Module):
    def __init__(self):
        torch.manual_seed(0)
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(
            self.body(x).detach()
        )  # the detach meant for a side branch cuts the body off


@bug(
    "detach_cuts_the_body_off",
    expect="model",
    source="https://github.com/yifita/deep_cage/issues/16",
)
def detach_cuts_the_body_off() -> Verdict:
    """A `.detach()` left in the forward pass: what is upstream of it never gets a gradient."""
    return verdict(_DetachedFeatures(), digits())


def _loss_from_item(out, y):
    value = F.cross_entropy(out, y).item()  # e.g. to move it off the GPU
    return torch.tensor(value, requires_grad=True)  # silences 'does not require grad'


@bug(
    "loss_rebuilt_from_item",
    expect="model",
    source="https://github.com/isayev/ReLeaSE/issues/39",
)
def loss_rebuilt_from_item() -> Verdict:
    """The loss went through `.item()` and back into a tensor with requires_grad=True: backward
    runs without error and every parameter's gradient is None."""
    return verdict(mlp(), digits(), _loss_from_item)


class _NoGradEncoder(nn.Module):
    def __init__(self):
        torch.manual_seed(0)
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        with torch.no_grad():  # meant to save memory in a block that should have trained
            h = self.encoder(x)
        return self.head(h)


@bug(
    "no_grad_inside_forward",
    expect="model",
    source="https://github.com/miguelvr/dropblock/issues/41",
)
def no_grad_inside_forward() -> Verdict:
    """torch.no_grad() around part of the graph: that part never trains."""
    return verdict(_NoGradEncoder(), digits())


class _StatesViewedAsBatch(nn.Module):
    """A GRU's final states (layers, batch, hidden) flattened with .view(batch, -1) instead of
    a permute: rows of different examples are glued together."""

    def __init__(self):
        torch.manual_seed(0)
        super().__init__()
        self.rnn = nn.GRU(8, 16, num_layers=2)
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        seq = x.reshape(len(x), 8, 8).transpose(0, 1)  # (time, batch, features)
        _, h = self.rnn(seq)  # (layers, batch, hidden)
        return self.out(h.view(x.shape[0], -1))


@bug(
    "states_viewed_across_the_batch",
    expect="model",
    source="https://github.com/OpenNMT/OpenNMT-py/issues/1521",
)
def states_viewed_across_the_batch() -> Verdict:
    """view((-1, total_hidden)) on (layers, batch, hidden) mixes elements of the batch."""
    return verdict(_StatesViewedAsBatch(), digits())


class _BidirectionalStatesViewed(nn.Module):
    """A bidirectional GRU's final hidden state (2, batch, hidden) turned into (batch, 2*hidden)
    with .view: the rows mix the forward state of one example with that of another."""

    def __init__(self):
        torch.manual_seed(0)
        super().__init__()
        self.rnn = nn.GRU(8, 16, batch_first=True, bidirectional=True)
        self.out = nn.Linear(32, 10)

    def forward(self, x):
        _, hidden = self.rnn(x.reshape(len(x), 8, 8))  # hidden is not batch-first
        return self.out(
            hidden.view(len(x), -1)
        )  # meant: hidden.transpose(0, 1).reshape(len(x), -1)


@bug(
    "bidirectional_hidden_viewed_as_batch",
    expect="model",
    source="https://github.com/timbmg/Sentence-VAE/issues/15",
)
def bidirectional_hidden_viewed_as_batch() -> Verdict:
    """The hidden state's second dimension is the batch, even with batch_first=True."""
    return verdict(_BidirectionalStatesViewed(), digits())


class _FunctionalDropout(nn.Module):
    def __init__(self):
        torch.manual_seed(0)
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 64), nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.dropout(torch.relu(self.fc1(x)), p=0.5))  # training= left at True


@bug(
    "functional_dropout_in_eval",
    expect="model",
    source="https://github.com/pytorch/pytorch/issues/26338",
)
def functional_dropout_in_eval() -> Verdict:
    """F.dropout without training=self.training stays on after model.eval()."""
    return verdict(_FunctionalDropout(), digits())


class _OwnTrainingFlag(nn.Module):
    def __init__(self):
        torch.manual_seed(0)
        super().__init__()
        self.is_training = True  # set once, never tied to train()/eval()
        self.fc1, self.fc2 = nn.Linear(64, 64), nn.Linear(64, 10)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if self.is_training:
            h = h * (torch.rand_like(h) > 0.5) * 2.0
        return self.fc2(h)


@bug(
    "own_training_flag_keeps_dropout_on",
    expect="model",
    source="https://github.com/d2l-ai/d2l-en/issues/1093",
)
def own_training_flag_keeps_dropout_on() -> Verdict:
    """A model's own is_training attribute stays True, so the test accuracy has dropout on."""
    return verdict(_OwnTrainingFlag(), digits())


@bug(
    "decoder_without_causal_mask",
    expect="model",
    source="https://github.com/alex-matton/causal-transformer-decoder/issues/1",
)
def decoder_without_causal_mask() -> Verdict:
    """No causal target mask during training: the network can copy future tokens."""
    model = TinyLM(causal=False)
    return verdict(model, walk_tokens(), lm_loss)


class _DecoderFlagIgnored(TinyLM):
    """A causal-LM class whose decoder flag is accepted but never reaches the attention."""

    def __init__(self, is_decoder=True):
        super().__init__(causal=False)
        self.is_decoder = is_decoder


@bug(
    "decoder_flag_not_wired_to_attention",
    expect="model",
    source="https://github.com/huggingface/transformers/issues/48745",
)
def decoder_flag_not_wired_to_attention() -> Verdict:
    """CausalLM classes that attend to future tokens: the loss collapses on random tokens."""
    return verdict(_DecoderFlagIgnored(), walk_tokens(), lm_loss)


@bug(
    "spectral_norm_evaluated_before_training",
    expect="model",
    source="https://github.com/pytorch/pytorch/issues/51800",
)
def spectral_norm_evaluated_before_training() -> Verdict:
    """spectral_norm initialises its singular vectors on the first train-mode forward; used in
    eval mode first, its outputs are orders of magnitude too large (issue 9, class c)."""
    torch.manual_seed(0)
    sn = nn.utils.spectral_norm
    model = nn.Sequential(
        sn(nn.Linear(64, 64)), nn.ReLU(), sn(nn.Linear(64, 64)), nn.ReLU(), sn(nn.Linear(64, 10))
    )
    return verdict(model, digits())


@bug(
    "norm_over_a_single_element",
    expect="overfit",
    source="https://github.com/pytorch/pytorch/issues/19250",
)
def norm_over_a_single_element() -> Verdict:
    """InstanceNorm/GroupNorm with one element per group silently outputs all zeros. In float
    arithmetic the output is rounding noise (~1e-5), not exact zeros, so the model layer's
    exact tests still see gradients and input dependence; the positive control fails."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.GroupNorm(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return verdict(model, digits())


def _log_of_sigmoid_bce(out, y):
    p = torch.sigmoid(out)
    return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()


@bug(
    "hand_written_bce_logs_zero",
    expect="model",
    source="https://github.com/Alibaba-MIIL/ASL/pull/6",
)
def hand_written_bce_logs_zero() -> Verdict:
    """log(sigmoid(z)) written out by hand: large logits give log(0) and a NaN loss (raw tumour
    features reach ~4000, so the untrained model's logits are large)."""
    x, y = breast_cancer(scaled=False)
    return verdict(binary_mlp(), (x, y.float()), _log_of_sigmoid_bce)


@bug(
    "cross_entropy_over_one_output",
    expect="model",
    source="https://github.com/darioizzo/dcgp/issues/86",
)
def cross_entropy_over_one_output() -> Verdict:
    """Cross-entropy over a single output is constant (one class is always right): the loss is
    0 and nothing learns. Reported for dcgp's networks; reduced to nn.CrossEntropyLoss over a
    one-unit head with 0/1 float targets."""
    x, y = breast_cancer()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(30, 32), nn.ReLU(), nn.Linear(32, 1))
    return verdict(model, (x, y.float()[:, None]), nn.CrossEntropyLoss())


@bug(
    "negative_weights_kill_every_relu",
    expect="model",
    source="https://discuss.pytorch.org/t/cross-entropy-loss-is-not-decreasing/43814/16",
)
def negative_weights_kill_every_relu() -> Verdict:
    """Parameters all negative behind a ReLU on non-negative pixels: every unit is dead and the
    loss sits at ln C with zero gradients. Reduced with an initialisation that starts there."""
    model = mlp()
    with torch.no_grad():
        model[0].weight.abs_().neg_()
        model[0].bias.fill_(-0.1)
    return verdict(model, digits())


class _Then(nn.Module):
    """The digits MLP with ``last`` applied to its logits."""

    def __init__(self, last):
        super().__init__()
        self.body, self.last = mlp(), last

    def forward(self, x):
        return self.last(self.body(x))


@bug(
    "nll_loss_on_raw_logits",
    expect="model",
    source="https://github.com/yanx27/Pointnet_Pointnet2_pytorch/issues/30",
)
def nll_loss_on_raw_logits() -> Verdict:
    """PointNet's classification loss called nll_loss on outputs without a log_softmax: NLL of
    logits is -logit[y], unbounded below, so the loss goes negative and keeps falling by
    inflating the logits. Reduced to an MLP on digits whose logits go to F.nll_loss (before,
    the overfit control caught it, with a loss 'far from its floor')."""
    return verdict(_Then(nn.Identity()), digits(), F.nll_loss)


@bug(
    "softmax_into_nll_loss",
    expect="model",
    source="https://github.com/AnubhavGupta3377/Text-Classification-Models-Pytorch/issues/9",
)
def softmax_into_nll_loss() -> Verdict:
    """The text classifiers ended in a softmax and trained with nn.NLLLoss, which takes
    log-probabilities: the loss is minus a probability, always negative, and its gradient
    vanishes as the softmax saturates (also jamesli1618/Obj-GAN#30). Reduced to the digits MLP
    with a softmax head."""
    return verdict(_Then(nn.Softmax(dim=1)), digits(), nn.NLLLoss())


class _CellsInAList(nn.Module):
    """Recurrent cells appended to a plain Python list: they run in forward, get gradients in
    backward, and are not parameters of the model."""

    def __init__(self, layers=2, hidden=32):
        super().__init__()
        torch.manual_seed(0)
        self.inp = nn.Linear(8, hidden)
        self.cells = [nn.LSTMCell(hidden, hidden) for _ in range(layers)]
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):
        states = [None] * len(self.cells)
        for row in x.view(len(x), 8, 8).unbind(1):  # the digit read one row at a time
            h = torch.relu(self.inp(row))
            for i, cell in enumerate(self.cells):
                states[i] = cell(h, states[i])
                h = states[i][0]
        return self.out(h)


@bug(
    "recurrent_cells_kept_in_a_list",
    expect="model",
    source="https://github.com/ikostrikov/pytorch-meta-optimizer/issues/11",
)
def recurrent_cells_kept_in_a_list() -> Verdict:
    """The meta-optimizer appended its LayerNormLSTMCells to a plain list, so model.parameters()
    never held their weights and the optimizer never trained them (also pytorch/pytorch#715,
    asyml/texar-pytorch#72). Reduced to nn.LSTMCells reading a digit row by row."""
    return verdict(_CellsInAList(), digits())


class _PeepholeTensors(nn.Module):
    """A gated layer whose peephole weights are plain tensors with requires_grad=True."""

    def __init__(self, hidden=32):
        super().__init__()
        torch.manual_seed(0)
        self.inp = nn.Linear(64, hidden)
        self.gate = nn.Linear(64, hidden)
        self.w_peephole = torch.randn(hidden, requires_grad=True)  # not an nn.Parameter
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):
        c = torch.tanh(self.inp(x))
        gated = torch.sigmoid(self.gate(x) + self.w_peephole * c) * c
        return self.out(gated)


@bug(
    "peephole_weights_as_plain_tensors",
    expect="model",
    source="https://github.com/automan000/Convolutional_LSTM_PyTorch/issues/17",
)
def peephole_weights_as_plain_tensors() -> Verdict:
    """ConvLSTM's peephole weights Wci, Wcf, Wco were tensors with requires_grad=True, not
    nn.Parameters: Adam(model.parameters()) never updates them and torch.save drops them.
    Reduced to one gated dense layer with a peephole vector on digits."""
    return verdict(_PeepholeTensors(), digits())


class _LayersMadeInForward(nn.Module):
    """nn.Linear layers constructed inside forward: fresh random weights on every call."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(torch.relu(nn.Linear(64, 32)(x)))


@bug(
    "layers_constructed_in_forward",
    expect="model",
    source="https://github.com/pytorch/pytorch/issues/1291",
)
def layers_constructed_in_forward() -> Verdict:
    """Layers built in forward (torch.nn.Linear(D_in, H)(x)) are new random weights on every
    call and none is among model.parameters(). The report built every layer there, leaving no
    parameters at all (which the optimizer refuses); here the head is registered, so the setup
    runs and quietly trains only the head. model.eval_deterministic also fails on it (two eval
    passes differ), though its message blames dropout left on."""
    return verdict(_LayersMadeInForward(), digits())


# -- update: one optimizer step ------------------------------------------------------------------


@bug(
    "zero_grad_missing",
    expect="update",
    source="https://github.com/wenet-e2e/wekws/pull/73",
)
def zero_grad_missing() -> Verdict:
    """optimizer.step() is called but optimizer.zero_grad() never is."""
    return verdict(mlp(), digits(), step=no_zero_grad_step)


class _ZeroGradPerEpoch:
    """zero_grad() at the start of each epoch (every 25 batches) instead of each iteration."""

    def __init__(self, batches_per_epoch=25):
        self.calls, self.every = 0, batches_per_epoch

    def __call__(self, model, batch, optimizer, loss_fn):
        if self.calls % self.every == 0:
            optimizer.zero_grad()
        self.calls += 1
        x, y = batch
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss


@bug(
    "zero_grad_once_per_epoch",
    expect="update",
    source="https://github.com/pytorch/pytorch/issues/47175",
)
def zero_grad_once_per_epoch() -> Verdict:
    """Calling zero_grad() at the beginning of each epoch instead of each iteration."""
    return verdict(mlp(), digits(), step=_ZeroGradPerEpoch())


@bug(
    "accumulation_zero_grad_each_call",
    expect="update",
    source="https://github.com/huggingface/accelerate/issues/616",
)
def accumulation_zero_grad_each_call() -> Verdict:
    """accelerate's gradient-accumulation example zeroed the gradients at the top of every
    micro-batch, so only the last of the accumulated micro-batches reached optimizer.step()
    (also tientrandinh/Revisiting-Reverse-Distillation#12, gaozhihan/PreDiff#32)."""
    return verdict(mlp(), digits(), step=Accumulate(k=4, zero_grad_first=True))


class _AccumulationLongerThanEpoch:
    """optimizer.step() when the batch index within the epoch reaches the accumulation count, but
    an epoch has fewer batches than that: the condition never holds."""

    def __init__(self, accumulation=16, batches_per_epoch=10):
        self.k, self.per_epoch, self.calls = accumulation, batches_per_epoch, 0

    def __call__(self, model, batch, optimizer, loss_fn):
        step_in_epoch = self.calls % self.per_epoch
        self.calls += 1
        x, y = batch
        loss = loss_fn(model(x), y) / self.k
        loss.backward()
        if (step_in_epoch + 1) % self.k == 0:
            optimizer.step()
            optimizer.zero_grad()
        return loss


@bug(
    "accumulation_never_steps",
    expect="update",
    source="https://github.com/huggingface/transformers/issues/2995",
)
def accumulation_never_steps() -> Verdict:
    """run_glue.py stepped the optimizer when (step + 1) % gradient_accumulation_steps == 0 with
    ``step`` the batch index within an epoch: with fewer batches per epoch than accumulation
    steps, optimizer.step() never ran."""
    return verdict(mlp(), digits(), step=_AccumulationLongerThanEpoch())


@bug(
    "layer_replaced_after_optimizer",
    expect="update",
    source="https://github.com/microsoft/nni/issues/4521",
)
def layer_replaced_after_optimizer() -> Verdict:
    """Pruning's speed-up replaced layers after the optimizer was built: the optimizer holds the
    old parameters and the new layer never trains."""
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    torch.manual_seed(1)
    model[2] = nn.Linear(32, 10)  # the smaller, rebuilt layer
    return verdict(model, digits(), optimizer=optimizer)


@bug(
    "optimizer_holds_another_instance",
    expect="update",
    source="https://github.com/NVIDIA/Megatron-LM/issues/174",
)
def optimizer_holds_another_instance() -> Verdict:
    """The optimizer was built on a randomly initialised model; the model actually trained was
    loaded afterwards as a new instance, so the optimizer updates tensors nobody uses."""
    first = mlp(seed=0)
    optimizer = torch.optim.Adam(first.parameters(), lr=1e-3)
    model = mlp(seed=1)  # 'loaded from the checkpoint'
    return verdict(model, digits(), optimizer=optimizer)


@bug(
    "linear_schedule_with_zero_training_steps",
    expect="update",
    source="https://github.com/huggingface/transformers/pull/5316",
)
def linear_schedule_with_zero_training_steps() -> Verdict:
    """A linear warm-up/decay schedule given num_training_steps=0 (computed from a loader
    length that came out 0): every learning rate is 0 from the first step on."""
    model = mlp()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    warmup, total = 0, 0

    def linear(step):
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear)
    return verdict(model, digits(), optimizer=optimizer, step=SchedulerStep(scheduler))


@bug(
    "epoch_scheduler_stepped_every_batch",
    expect="overfit",
    source="https://github.com/Lornatang/SRGAN-PyTorch/issues/1",
)
def epoch_scheduler_stepped_every_batch() -> Verdict:
    """StepLR(step_size=epochs // 2, gamma=0.1) meant per epoch but stepped after every batch:
    the learning rate is near zero after a few dozen steps and the model stops learning (also
    ivadomed/ivadomed#55)."""
    model = mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10 // 2, gamma=0.1)
    return verdict(model, digits(), optimizer=optimizer, step=SchedulerStep(scheduler))


class _StagedBackbone(nn.Module):
    """mmdetection's backbone pattern: frozen_stages is applied inside an overridden train()."""

    def __init__(self, frozen_stages=1):
        super().__init__()
        self.frozen_stages = frozen_stages
        self.stem = nn.Linear(64, 64)
        self.layer1 = nn.Linear(64, 64)

    def _freeze_stages(self):
        for stage in [self.stem, self.layer1][: self.frozen_stages]:
            stage.eval()
            for p in stage.parameters():
                p.requires_grad = False

    def train(self, mode=True):
        super().train(mode)
        self._freeze_stages()
        return self

    def forward(self, x):
        return torch.relu(self.layer1(torch.relu(self.stem(x))))


class _Detector(nn.Module):
    def __init__(self):
        torch.manual_seed(0)
        super().__init__()
        self.backbone = _StagedBackbone()
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.backbone(x))


@bug(
    "frozen_stages_only_inside_train",
    expect="update",
    source="https://github.com/open-mmlab/mmdetection/issues/10881",
)
def frozen_stages_only_inside_train() -> Verdict:
    """The backbone's stages are frozen in train(), which a hand-written loop never calls: the
    'frozen' stem trains (issue 9, class d)."""
    model = _Detector()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    return verdict(model, digits(), optimizer=optimizer, expect_frozen=["backbone.stem.*"])


@bug(
    "freeze_overwritten_by_later_loop",
    expect="update",
    source="https://github.com/ultralytics/yolov5/issues/1213",
)
def freeze_overwritten_by_later_loop() -> Verdict:
    """Layers are frozen, then a later loop sets requires_grad=True on every parameter."""
    model = mlp()
    for p in model[0].parameters():
        p.requires_grad = False
    for p in model.parameters():  # 'train all layers' a few lines further down
        p.requires_grad = True
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return verdict(model, digits(), optimizer=optimizer, expect_frozen=["0.*"])


class _ZeroGradToZeros:
    """A loop that zeroes gradients to zero tensors (set_to_none=False), so parameters frozen
    after the optimizer was built keep a zero .grad and weight decay still moves them."""

    def __call__(self, model, batch, optimizer, loss_fn):
        x, y = batch
        optimizer.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss


@bug(
    "frozen_parameters_moved_by_weight_decay",
    expect="update",
    source="https://github.com/facebookresearch/fairseq/issues/4702",
)
def frozen_parameters_moved_by_weight_decay() -> Verdict:
    """requires_grad=False set after a first step, yet the parameters are still updated."""
    x, y = digits()
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=0.01)
    loss = F.cross_entropy(model(x[:32]), y[:32])  # a first step before freezing
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)
    for p in model[0].parameters():
        p.requires_grad = False
    return verdict(model, (x, y), optimizer=optimizer, step=_ZeroGradToZeros())


# -- overfit: the positive control ---------------------------------------------------------------


class _SoftmaxHead(nn.Module):
    def __init__(self):
        torch.manual_seed(0)
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten())
        self.fc = nn.Linear(8 * 64, 10)

    def forward(self, x):
        return torch.softmax(self.fc(self.conv(x.reshape(len(x), 1, 8, 8))), dim=1)


@bug(
    "softmax_before_cross_entropy",
    expect="overfit",
    source="https://discuss.pytorch.org/t/cross-entropy-loss-is-not-decreasing/43814/16",
)
def softmax_before_cross_entropy() -> Verdict:
    """A softmax layer before nn.CrossEntropyLoss, which applies log-softmax itself."""
    return verdict(_SoftmaxHead(), digits())


@bug(
    "sigmoid_before_bce_with_logits",
    expect="overfit",
    source="https://github.com/yudi-mars/daisyRec/pull/15",
)
def sigmoid_before_bce_with_logits() -> Verdict:
    """A sigmoid before BCEWithLogitsLoss: outputs in (0.5, 0.73), no example can be a 0."""
    x, y = breast_cancer()
    return verdict(binary_mlp(out=nn.Sigmoid()), (x, y.float()), nn.BCEWithLogitsLoss())


@bug(
    "relu_on_the_regression_output",
    expect="overfit",
    source="https://github.com/ProteomicsML/ProteomicsML/pull/203",
)
def relu_on_the_regression_output() -> Verdict:
    """A ReLU after the final regression layer cannot output the negative (standardised)
    targets, and once its input is negative it passes no gradient."""
    x, y = diabetes()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), nn.ReLU(), nn.Flatten(0))
    return verdict(model, (x, y), nn.MSELoss())


@bug(
    "raw_pixels_0_to_255",
    expect="overfit",
    source="https://github.com/hill-a/stable-baselines/issues/328",
)
def raw_pixels_0_to_255() -> Verdict:
    """Images fed to the network in 0..255, never scaled to 0..1, with a plain SGD step sized
    for scaled inputs."""
    x, y = digits()
    model = mlp()
    return verdict(model, (x * 255, y), optimizer=torch.optim.SGD(model.parameters(), lr=0.01))


@bug(
    "unnormalised_intensities_blow_up",
    expect="overfit",
    source="https://github.com/mlmed/torchxrayvision/issues/9",
)
def unnormalised_intensities_blow_up() -> Verdict:
    """Unnormalised inputs with default initialisation blow training up after the first
    iteration (the report saw inf and NaN). Reduced to raw diabetes measurements (ages, blood
    pressures in the hundreds): the loss jumps from 2e4 to 1e14 in one SGD step, but dying ReLU
    units keep it finite in three steps, so the update layer only warns about the step size
    and the positive control fails."""
    x, y = load_diabetes(return_X_y=True, scaled=False)
    model = regressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = (torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32))
    return verdict(model, data, nn.MSELoss(), optimizer=optimizer)


# -- shuffle: the negative control ---------------------------------------------------------------


class _CopyLM(TinyLM):
    """A causal LM trained with labels equal to its inputs and a loss that does not shift them
    (BartForCausalLM's loss): it learns to predict the current token."""


@bug(
    "causal_lm_labels_not_shifted",
    expect="shuffle",
    source="https://github.com/macrocosm-os/pretraining/pull/64",
)
def causal_lm_labels_not_shifted() -> Verdict:
    """labels = input_ids with a loss that never shifts them: the model copies its input."""
    x, _ = walk_tokens()
    return verdict(_CopyLM(), (x, x.clone()), lm_loss)


def _accuracy_of_targets(out, y):
    predicted = y  # meant: out.argmax(1); a rename left the targets in its place
    return float((predicted == y).float().mean())


@bug(
    "metric_always_one",
    expect="shuffle",
    source="https://github.com/lazypoet/Brain-Tumor-MRI-Segmentation/issues/1",
)
def metric_always_one() -> Verdict:
    """Accuracy is 1 from the beginning: the metric compares the targets with themselves."""
    return verdict(mlp(), digits(), metric=_accuracy_of_targets)


def _argmax_over_one_logit(out, y):
    return float((out.argmax(dim=1) == y.reshape(-1)).float().mean())


@bug(
    "accuracy_from_argmax_of_one_logit",
    expect="shuffle",
    source="https://github.com/tflearn/tflearn/issues/255",
)
def accuracy_from_argmax_of_one_logit() -> Verdict:
    """An accuracy written for 2-D outputs applied to a binary model's single logit: argmax
    over one column is always 0, so the metric is the share of negatives whatever the model."""
    x, y = breast_cancer()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(30, 32), nn.ReLU(), nn.Linear(32, 1))
    data = (x, y.float()[:, None])
    return verdict(model, data, nn.BCEWithLogitsLoss(), metric=_argmax_over_one_logit)


# -- watch: invariants while a run trains ----------------------------------------------------------


def watch_verdict(
    model,
    optimizer,
    data,
    loss_fn,
    *,
    steps=40,
    step=standard_step,
    batch_size=32,
    observe_batch=False,
    **options,
) -> Verdict:
    """Train ``steps`` batches under labcoat.watch (every=1); the first alert's kind is where."""
    import labcoat

    x, y = data
    with labcoat.watch(model, optimizer, ledger=False, every=1, **options) as w:
        for i in range(steps):
            rows = slice((i * batch_size) % len(x), (i * batch_size) % len(x) + batch_size)
            batch = (x[rows], y[rows])
            loss = step(model, batch, optimizer, loss_fn)
            if observe_batch:
                w.observe(step=i, loss=loss, batch=batch[0])
            else:
                w.observe(step=i, loss=loss)
    kinds = [a.check for a in w.alerts]
    return Verdict(bool(kinds), kinds[0] if kinds else None, ", ".join(sorted(set(kinds))))


@bug(
    "watch_schedule_with_zero_training_steps",
    expect="lr_zero",
    engine="watch",
    source="https://github.com/huggingface/transformers/pull/5316",
)
def watch_schedule_with_zero_training_steps() -> Verdict:
    """The zero-length linear schedule, watched while it trains at learning rate 0."""
    model = mlp()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.0)
    return watch_verdict(
        model, optimizer, digits(), nn.CrossEntropyLoss(), step=SchedulerStep(scheduler)
    )


@bug(
    "watch_frozen_parameters_moved_by_weight_decay",
    expect="frozen_moved",
    engine="watch",
    source="https://github.com/facebookresearch/fairseq/issues/4702",
)
def watch_frozen_parameters_moved_by_weight_decay() -> Verdict:
    """Parameters frozen after a first step keep a zero gradient and weight decay moves them."""
    x, y = digits()
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=0.01)
    F.cross_entropy(model(x[:32]), y[:32]).backward()
    optimizer.step()
    for p in model[0].parameters():
        p.requires_grad = False
    return watch_verdict(
        model, optimizer, (x, y), nn.CrossEntropyLoss(), step=_ZeroGradToZeros(), steps=10
    )


@bug(
    "watch_hand_written_bce_logs_zero",
    expect="nonfinite",
    engine="watch",
    source="https://github.com/Alibaba-MIIL/ASL/pull/6",
)
def watch_hand_written_bce_logs_zero() -> Verdict:
    """log(sigmoid(z)) by hand on large logits: the loss is NaN from the first step."""
    x, y = breast_cancer(scaled=False)
    model = binary_mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    return watch_verdict(model, optimizer, (x, y.float()), _log_of_sigmoid_bce, steps=10)


class _SkipStepOnLargeGradNorm:
    """Skip optimizer.step() when the gradient norm exceeds a limit; the limit (set for another
    model's scale) is below this model's usual norm, so every step is skipped."""

    def __init__(self, max_norm=0.05):
        self.max_norm = max_norm

    def __call__(self, model, batch, optimizer, loss_fn):
        x, y = batch
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        if norm <= self.max_norm:
            optimizer.step()
        return loss


@bug(
    "watch_step_skipped_on_grad_norm",
    expect="no_step",
    engine="watch",
    source="https://github.com/Haian-Jin/LVSM/pull/19",
)
def watch_step_skipped_on_grad_norm() -> Verdict:
    """'grad norm too large, skipping optimizer step': the loop and the logging go on while
    nothing is updated, and the watch's hooks, which live in optimizer.step(), fall silent."""
    model = mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return watch_verdict(
        model, optimizer, digits(), nn.CrossEntropyLoss(), step=_SkipStepOnLargeGradNorm(), steps=80
    )


@bug(
    "watch_workers_repeat_batches",
    expect="repeat_batch",
    engine="watch",
    source="https://github.com/facebookresearch/fairseq/issues/1383",
)
def watch_workers_repeat_batches() -> Verdict:
    """Workers that yield the same data: each batch arrives once per worker, a few steps apart.
    Reduced to the batches such a loader yields with two workers (every batch twice, one
    step apart) rather than forking workers in a test."""
    x, y = digits()
    x = torch.cat([x[i * 32 : (i + 1) * 32].repeat(2, 1) for i in range(20)])
    y = torch.cat([y[i * 32 : (i + 1) * 32].repeat(2) for i in range(20)])
    model = mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return watch_verdict(model, optimizer, (x, y), nn.CrossEntropyLoss(), observe_batch=True)


class _ValidateMidEpoch:
    """Validation every ``every`` calls with model.eval(); the loop set model.train() only
    before its first epoch, so training goes on in eval mode after the first validation."""

    def __init__(self, val_x, every=10):
        self.val_x, self.every, self.calls = val_x, every, 0

    def __call__(self, model, batch, optimizer, loss_fn):
        loss = standard_step(model, batch, optimizer, loss_fn)
        self.calls += 1
        if self.calls % self.every == 0:
            model.eval()
            with torch.no_grad():
                model(self.val_x)
        return loss


@bug(
    "watch_validation_leaves_eval_mode",
    expect="eval_mode",
    engine="watch",
    source="https://github.com/joeynmt/joeynmt/issues/184",
)
def watch_validation_leaves_eval_mode() -> Verdict:
    """joeynmt validated mid-epoch through a prediction function that calls model.eval(), and
    model.train() ran only at the start of each epoch: the rest of every epoch trained with
    dropout off (also wkentaro/pytorch-fcn#56, pytorch/tutorials#1624). Reduced to a dropout
    and batch-norm MLP on digits whose step validates every 10 calls."""
    x, y = digits()
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 10)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = _ValidateMidEpoch(x[700:])
    return watch_verdict(model, optimizer, (x[:700], y[:700]), nn.CrossEntropyLoss(), step=step)
