"""The fixture every operation's unit test takes: a CallContext over a real store opened in
this process (support.OperationContext), closed after the test."""
import pytest
from support import OperationContext


@pytest.fixture
def ctx(tmp_path):
    context = OperationContext(tmp_path)
    yield context
    context.close()
