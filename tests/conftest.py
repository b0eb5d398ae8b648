"""Fixtures shared by the core tests."""
import pytest

from coretorch.testing import available_devices


@pytest.fixture(params=available_devices())
def device(request):
    """Every installed and available device type ("cpu" first): a test taking ``device`` runs on each."""
    return request.param
