"""``python -m rl_contracts.cli``: the ``rl-contracts`` console script."""

from . import console_main

__all__: list[str] = []

console_main()
