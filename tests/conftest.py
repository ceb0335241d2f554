"""Test configuration: the real-vLLM tier kept out of the core run.

The Hypothesis profile comes from the ``rl_contracts`` pytest plugin (the package's ``pytest11`` entry point), as
in any trainer's project: ``pyproject.toml`` selects ``rl-contracts-ci`` with the ini option
``rl_contracts_hypothesis_profile``; ``RL_CONTRACTS_HYPOTHESIS_PROFILE`` or ``--hypothesis-profile`` override it.

``tests/vllm`` needs the separate vLLM environment that ``.ci/vllm_tier`` builds; that script sets
``RL_CONTRACTS_VLLM_TIER=1``.  Everywhere else the directory is not collected (its tests import vLLM).
"""

import os

collect_ignore = [] if os.environ.get("RL_CONTRACTS_VLLM_TIER") == "1" else ["vllm"]
