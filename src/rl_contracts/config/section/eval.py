"""``eval`` and the evaluation ``env``: what ``run_eval.py`` measures (NeMo RL's ``EvalConfig`` and its pass-through
environment config).  An evaluation recipe's ``generation`` is checked on its own as
:class:`~rl_contracts.config.VllmConfig`, its ``data`` by :data:`~.data.EvalDataConfig`."""

from typing import Any, ClassVar

from ..._internal.config_scalars import AtLeastOne, ConfigInt, ConfigStr, StrList
from .variants import SectionModel

__all__ = ["EvalConfig", "EvalEnvConfig", "MathEnvConfig", "VLMEnvConfig"]


class EvalConfig(SectionModel):
    """``eval``: the metric and how often each prompt is tried."""

    metric: ConfigStr
    """Metric (``"pass@k"``, ``"cons@k"``). Required."""
    num_tests_per_prompt: AtLeastOne
    """Attempts per prompt, ≥ 1. Required."""
    seed: ConfigInt
    """Random seed. Required."""
    k_value: AtLeastOne
    """k of ``pass@k``/``cons@k``, ≥ 1. Required."""
    save_path: ConfigStr | None
    """Folder the results are saved to; null to not save. Required, may be null."""


class MathEnvConfig(SectionModel):
    """``env.math``: the math verifier."""

    num_workers: AtLeastOne
    """Verifier worker processes, ≥ 1. Required."""
    stop_strings: StrList | None = None
    """Strings that end a response; null for none."""
    verifier_type: ConfigStr | None = None
    """Verifier; null for the default."""
    math_verify_impl: ConfigStr | None = None
    """Implementation of the math verifier; null for the default."""


class VLMEnvConfig(SectionModel):
    """``env.mmau``: the VLM (audio) verifier."""

    num_workers: AtLeastOne
    """Verifier worker processes, ≥ 1. Required."""
    stop_strings: StrList | None = None
    """Strings that end a response; null for none."""
    reward_functions: list[dict[ConfigStr, Any]]
    """Reward functions and their options. Required."""


class EvalEnvConfig(SectionModel):
    """``env`` of an evaluation: the verifiers by environment name (other environments are open)."""

    open_keys: ClassVar[bool] = True

    math: MathEnvConfig | None = None
    """The math verifier."""
    mmau: VLMEnvConfig | None = None
    """The MMAU verifier."""
