"""model.grad.custom: a hand-written backward is checked against finite differences in double
precision (issue 35). Planted: a wrong sign, a missing factor, gradients sent to the wrong
input; healthy twins: the right backward, a straight-through estimator (a surrogate on purpose),
torch's own checkpointing."""

import pytest
import torch
from torch import nn

from tests.doctor.helpers import diagnose


class Square(torch.autograd.Function):
    """x ** 2 with a backward chosen by ``bug``."""

    bug = "none"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if Square.bug == "sign":
            return -2 * x * grad
        if Square.bug == "factor":  # d(x^2)/dx written as x
            return x * grad
        return 2 * x * grad


class Product(torch.autograd.Function):
    """a * b; ``swapped`` sends each input the other's gradient."""

    swapped = False

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        if Product.swapped:
            return grad * a, grad * b
        return grad * b, grad * a


class SignSTE(torch.autograd.Function):
    """Binary units: sign forward, the identity (clipped) backward: a surrogate on purpose."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x.abs() <= 1).to(grad.dtype)


class Net(nn.Module):
    def __init__(self, function: str):
        torch.manual_seed(0)
        super().__init__()
        self.function = function
        self.a, self.b = nn.Linear(64, 32), nn.Linear(64, 32)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        h = self.a(x)
        if self.function == "square":
            h = Square.apply(h)
        elif self.function == "product":
            h = Product.apply(h, self.b(x))
        elif self.function == "ste":
            h = SignSTE.apply(h)
        elif self.function == "checkpoint":
            from torch.utils.checkpoint import checkpoint

            h = checkpoint(torch.tanh, h, use_reentrant=True)
        return self.head(h)


def custom(model):
    return diagnose(model, layers=("model",))["model.grad.custom"]


@pytest.fixture
def square_bug():
    def plant(bug):
        Square.bug = bug

    yield plant
    Square.bug = "none"


@pytest.mark.check("doctor.model.grad.custom", planted=True)
@pytest.mark.parametrize("bug, said", [("sign", "wrong sign"), ("factor", "0.5x the true one")])
def test_a_wrong_sign_or_a_missing_factor_fails(square_bug, bug, said):
    square_bug(bug)
    f = custom(Net("square"))
    assert f.status == "fail" and said in f.message, f.message
    assert "Square" in f.message


@pytest.mark.check("doctor.model.grad.custom", planted=True)
def test_gradients_sent_to_the_wrong_input_fail():
    Product.swapped = True
    try:
        f = custom(Net("product"))
    finally:
        Product.swapped = False
    assert f.status == "fail" and "Product" in f.message, f.message
    assert set(f.evidence["wrong"]["Product"]) == {"0", "1"}


@pytest.mark.check("doctor.model.grad.custom", healthy=True)
@pytest.mark.parametrize("function", ["square", "product"])
def test_a_right_backward_passes_and_the_function_is_left_as_it_was(function):
    cls = Square if function == "square" else Product
    apply = cls.apply
    f = custom(Net(function))
    assert f.status == "pass" and cls.__qualname__ in f.evidence["gradcheck_passed"], f.message
    assert cls.apply == apply and "apply" not in cls.__dict__


@pytest.mark.check("doctor.model.grad.custom", healthy=True)
def test_a_straight_through_estimator_is_a_surrogate_on_purpose():
    f = custom(Net("ste"))
    assert f.status == "pass" and f.evidence["surrogate_gradients"] == ["SignSTE"], f.message


def test_no_custom_function_or_only_torchs_own_skips():
    assert custom(Net("none")).status == "skip"
    assert custom(Net("checkpoint")).status == "skip"
