"""Test configuration: the Hypothesis profile, and the real-vLLM tier kept out of the core run.

``tests/vllm`` needs the separate vLLM environment that ``.ci/vllm_tier`` builds; that script sets
``RL_CONTRACTS_VLLM_TIER=1``.  Everywhere else the directory is not collected (its tests import vLLM).
"""

import os

from rl_contracts.testing.profiles import load_profile

load_profile()

collect_ignore = [] if os.environ.get("RL_CONTRACTS_VLLM_TIER") == "1" else ["vllm"]
