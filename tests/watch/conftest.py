import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    """Small models on a shared machine: one thread is faster and deterministic."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
