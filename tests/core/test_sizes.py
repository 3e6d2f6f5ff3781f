"""Byte sizes (briefkit.core.sizes): parsing params.yaml sizes and writing them as a brief does."""
import pytest

from briefkit.core import sizes


def test_binary_and_decimal():
    assert sizes.binary(2 ** 30 * 22.9) == "22.9 GiB"
    assert sizes.decimal(256 * 2 ** 30) == "274.9 GB"
    assert sizes.binary(500) == "500 B"


@pytest.mark.parametrize("n, text", [(256 * 1024, "256 KiB"), (4 * 2 ** 20, "4 MiB"), (1000, "1000 B")])
def test_block(n, text):
    assert sizes.block(n) == text
    assert text.endswith(" B") or sizes.parse_size(text.replace(" ", "")) == n
