"""The fake studio and a client of it; sleeps are recorded, not slept."""

import pytest

from studio.client import StudioClient
from tests.client.fake import FakeStudio


@pytest.fixture
def fake():
    server = FakeStudio()
    yield server
    server.close()


@pytest.fixture
def slept():
    return []


@pytest.fixture
def client(fake, slept):
    return StudioClient(fake.url, "acme", token="tok-1", timeout=5, sleep=slept.append)


@pytest.fixture(scope="session")
def example():
    """examples/openai_tool_loop.py as a module."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "openai_tool_loop.py"
    spec = importlib.util.spec_from_file_location("openai_tool_loop", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
