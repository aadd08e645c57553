"""Token ids read by another vocabulary than the model's (issue 35): ids past the embedding
name the mismatch when the forward crashes, and a pretrained model whose first loss is far
above a uniform guess on data of its own domain is said to misread the ids, not blamed on its
initialisation."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from tests.doctor.helpers import TinyLM, diagnose, token_data

V = 16


class PretrainedBigram(nn.Module):
    """A 'pretrained' next-token model: its table knows that token i is followed by i + 1."""

    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(V, V)
        with torch.no_grad():
            self.table.weight.copy_(8.0 * F.one_hot((torch.arange(V) + 1) % V, V).float())

    def forward(self, tokens):
        return self.table(tokens)


def lm_loss(out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def own_domain(n=128, length=8):
    g = torch.Generator().manual_seed(0)
    seq = (torch.randint(0, V, (n, 1), generator=g) + torch.arange(length + 1)) % V
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def another_tokenizer(data):
    """The same text encoded by another vocabulary: every id means another token."""
    order = torch.randperm(V, generator=torch.Generator().manual_seed(3))
    return tuple(order[part] for part in data)


def initial(model, data):
    return diagnose(model, data, lm_loss, layers=("model",))["model.loss.initial"]


@pytest.mark.check("doctor.model.loss.initial", planted=True)
def test_a_pretrained_model_reading_another_vocabularys_ids_is_told_so():
    f = initial(PretrainedBigram(), another_tokenizer(own_domain()))
    assert f.status == "warn", f.message
    assert "mean something else" in f.message and "initialisation of this model" in f.message
    assert f.evidence["fresh_init_loss"] < f.evidence["initial_loss"]


@pytest.mark.check("doctor.model.loss.initial", healthy=True)
def test_the_same_model_on_its_own_ids_passes():
    f = initial(PretrainedBigram(), own_domain())
    assert f.status == "pass", f.message


def test_an_over_confident_fresh_init_is_still_named_as_such():
    class Confident(nn.Module):
        def __init__(self):
            torch.manual_seed(0)
            super().__init__()
            self.embed = nn.Embedding(V, 16)
            self.out = nn.Linear(16, V)
            nn.init.normal_(self.out.weight, std=3.0)

            def reset():  # re-initialised the same over-confident way
                nn.init.normal_(self.out.weight, std=3.0)

            self.out.reset_parameters = reset

        def forward(self, tokens):
            return self.out(self.embed(tokens))

    f = initial(Confident(), own_domain())
    assert f.status == "warn" and "over-confident initialisation" in f.message, f.message


def test_ids_past_the_embedding_name_another_vocabulary():
    x, y = token_data(vocab=V)
    report = diagnose(TinyLM(vocab=V), (x + 4, y + 4), lm_loss, layers=("data", "model"))
    failing = [f for f in report.findings if f.failed]
    assert failing and "another vocabulary" in failing[0].message, failing
    assert "has 16 rows" in failing[0].message


def test_a_tied_embedding_is_left_as_given_so_its_over_confident_init_is_named():
    # resetting the output layer would shrink the embedding it shares: no 'trained' verdict
    from tests.corpus.healthy import TiedCausalLM, counting_tokens

    torch.manual_seed(0)
    f = initial(TiedCausalLM(), counting_tokens())
    assert f.status == "warn" and "over-confident initialisation" in f.message, f.message
    assert "fresh_init_loss" not in f.evidence
