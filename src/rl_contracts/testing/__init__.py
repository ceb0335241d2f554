"""Public Hypothesis strategies and profiles, so trainers can fuzz their own glue (``testing`` extra).

- :mod:`rl_contracts.testing.strategies`: strategies for every input the library validates;
- :mod:`rl_contracts.testing.profiles`: the ``ci``, ``dev`` and ``nightly`` settings profiles;
- :mod:`rl_contracts.testing.invariants`: :func:`assert_contract_error`, invariant 1 for one raised exception.
"""

from .invariants import assert_contract_error
from .profiles import PROFILE_ENV_VAR, load_profile, register_profiles

__all__ = ["PROFILE_ENV_VAR", "assert_contract_error", "load_profile", "register_profiles"]
