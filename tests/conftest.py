"""Load the Hypothesis profile named by RL_CONTRACTS_HYPOTHESIS_PROFILE (default ``ci``)."""

from rl_contracts.testing.profiles import load_profile

load_profile()
