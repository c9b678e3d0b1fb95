"""Shared pytest setup: the `device` fixture runs a test on "cpu" always and on "cuda" when a
CUDA device is available (no skipped CUDA copies on machines without one)."""

import pytest
import torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
