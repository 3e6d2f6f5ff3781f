"""`make test` runs pytest in parallel (pytest-xdist, ``--dist loadgroup``): the tests that share a
module-scoped fixture are marked with one group (tests/conftest.py) so that they run on one worker, in
file order. xdist reads the group from the node id, which it extends with ``@<group>``; a pytest that
keeps it from doing so (9.2, pytest-xdist issue 1386) spreads such tests over workers without a word,
and a later test then finds a fresh fixture instead of what the earlier ones left."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def shared() -> list[str]:
    return []


def test_tests_sharing_a_module_fixture_carry_their_group(shared, request):
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("run without --dist loadgroup (make test and make test-fast use it)")
    assert request.node.get_closest_marker("xdist_group").args == (__name__,)
    assert request.node.nodeid.endswith(f"@{__name__}"), request.node.nodeid
