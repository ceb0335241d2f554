"""Public Hypothesis strategies and profiles, so trainers can fuzz their own glue (``testing`` extra).

- :mod:`rl_contracts.testing.strategies`: strategies for every input the library validates;
- :mod:`rl_contracts.testing.profiles`: the ``rl-contracts-ci``, ``-dev``, ``-nightly`` and ``-explore``
  settings profiles;
- :mod:`rl_contracts.testing.pytest_plugin`: the pytest plugin (entry point ``rl_contracts``) that registers
  them and loads the selected one;
- :mod:`rl_contracts.testing.invariants`: :func:`assert_contract_error`, invariant 1 for one raised exception.
"""

from .invariants import assert_contract_error
from .profiles import PROFILE_ENV_VAR, PROFILES, load_profile, register_profiles

__all__ = ["PROFILES", "PROFILE_ENV_VAR", "assert_contract_error", "load_profile", "register_profiles"]
