"""Public Hypothesis strategies and profiles, so trainers can fuzz their own glue (``testing`` extra).

- :mod:`rl_contracts.testing.strategies`: strategies for every input the library validates;
- :mod:`rl_contracts.testing.profiles`: the ``ci``, ``dev`` and ``nightly`` settings profiles.
"""

from .profiles import PROFILE_ENV_VAR, load_profile, register_profiles

__all__ = ["PROFILE_ENV_VAR", "load_profile", "register_profiles"]
