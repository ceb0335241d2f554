"""An evaluation recipe (``run_eval.py``): ``eval`` and the evaluation ``env`` (NeMo RL's ``EvalConfig`` and its
pass-through environment config), ``data`` (:data:`EvalDataConfig`: one of eight evaluation data configs, picked by
``dataset_name``) and :class:`EvalRecipe`, the whole recipe.  Its ``generation`` is checked on its own as
:class:`~rl_contracts.config.VllmConfig`."""

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, get_args

from ..._internal.config_scalars import AtLeastOne, ConfigInt, ConfigStr, StrictStr, StrList
from .algorithm import Algorithm, RecipeModel
from .cluster import ClusterConfig
from .policy import TokenizerConfig
from .variants import Omittable, OpenMapping, SectionModel, chosen_by, tag

__all__ = [
    "AIMEEvalDataConfig",
    "DailyOmniEvalDataConfig",
    "EvalConfig",
    "EvalDataConfig",
    "EvalEnvConfig",
    "EvalRecipe",
    "GPQAEvalDataConfig",
    "LocalMathEvalDataConfig",
    "MMAUEvalDataConfig",
    "MMLUEvalDataConfig",
    "MMLUProEvalDataConfig",
    "MathEnvConfig",
    "MathEvalDataConfig",
    "VLMEnvConfig",
]


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


class EvalDataBase(SectionModel):
    """The keys every evaluation data config shares."""

    max_input_seq_length: AtLeastOne
    """Longest prompt in tokens, ≥ 1. Required."""
    prompt_file: ConfigStr | None = None
    """File holding the prompt template; null for none."""
    system_prompt_file: ConfigStr | None = None
    """File holding the system prompt; null for none."""


MMLUName = Literal[
    "mmlu",
    "mmlu_AR-XY",
    "mmlu_BN-BD",
    "mmlu_DE-DE",
    "mmlu_EN-US",
    "mmlu_ES-LA",
    "mmlu_FR-FR",
    "mmlu_HI-IN",
    "mmlu_ID-ID",
    "mmlu_IT-IT",
    "mmlu_JA-JP",
    "mmlu_KO-KR",
    "mmlu_PT-BR",
    "mmlu_ZH-CN",
    "mmlu_SW-KE",
    "mmlu_YO-NG",
]
"""MMLU and its translations, as NeMo RL's evaluation names them."""

MMLU_NAMES: tuple[str, ...] = get_args(MMLUName)


class MMLUEvalDataConfig(EvalDataBase):
    """``data`` of an MMLU evaluation."""

    dataset_name: Annotated[MMLUName, StrictStr]
    """MMLU or one of its translations. Required."""


class MMLUProEvalDataConfig(EvalDataBase):
    """``data`` of an MMLU-Pro evaluation."""

    dataset_name: Annotated[Literal["mmlu_pro"], StrictStr]
    """``"mmlu_pro"``. Required."""


class AIMEEvalDataConfig(EvalDataBase):
    """``data`` of an AIME evaluation."""

    dataset_name: Annotated[Literal["AIME2024", "AIME2025", "AIME2026"], StrictStr]
    """The AIME year. Required."""
    processor: Omittable[ConfigStr] = None
    """Data processor that turns a row into a message log."""
    repeat: Omittable[AtLeastOne] = None
    """Times each problem is evaluated, ≥ 1."""


class GPQAEvalDataConfig(EvalDataBase):
    """``data`` of a GPQA evaluation."""

    dataset_name: Annotated[Literal["gpqa", "gpqa_diamond"], StrictStr]
    """GPQA or GPQA-Diamond. Required."""


class MathEvalDataConfig(EvalDataBase):
    """``data`` of a MATH evaluation."""

    dataset_name: Annotated[Literal["math", "math500"], StrictStr]
    """MATH or MATH-500. Required."""


class MMAUEvalDataConfig(EvalDataBase):
    """``data`` of an MMAU (audio) evaluation."""

    dataset_name: Annotated[Literal["mmau", "TwinkStart/MMAU"], StrictStr]
    """MMAU. Required."""
    split: ConfigStr | None = None
    """Dataset split; null for the default."""
    env_name: Omittable[ConfigStr] = None
    """Environment that scores the responses."""


class DailyOmniEvalDataConfig(EvalDataBase):
    """``data`` of a Daily-Omni evaluation."""

    dataset_name: Annotated[Literal["daily-omni"], StrictStr]
    """``"daily-omni"``. Required."""
    split: ConfigStr | None = None
    """Dataset split; null for the default."""
    env_name: Omittable[ConfigStr] = None
    """Environment that scores the responses."""


class LocalMathEvalDataConfig(EvalDataBase):
    """``data`` of an evaluation on a local math file (any other ``dataset_name``)."""

    dataset_name: ConfigStr
    """Path or name of the local dataset. Required."""
    problem_key: ConfigStr
    """Column of the problem. Required."""
    solution_key: ConfigStr
    """Column of the solution. Required."""
    file_format: Annotated[Literal["csv", "json"], StrictStr]
    """Format of the file. Required."""
    split: ConfigStr | None = None
    """Dataset split; null for the default."""


_EVAL_DATASETS: dict[str, str] = {
    **dict.fromkeys(MMLU_NAMES, "mmlu"),
    "mmlu_pro": "mmlu_pro",
    **dict.fromkeys(("AIME2024", "AIME2025", "AIME2026"), "aime"),
    **dict.fromkeys(("gpqa", "gpqa_diamond"), "gpqa"),
    **dict.fromkeys(("math", "math500"), "math"),
    **dict.fromkeys(("mmau", "TwinkStart/MMAU"), "mmau"),
    "daily-omni": "daily_omni",
}


def _eval_dataset(value: Any) -> str:
    name = value.get("dataset_name") if isinstance(value, Mapping) else None
    return _EVAL_DATASETS.get(name, "local_math") if isinstance(name, str) else "local_math"


EvalDataConfig = Annotated[
    Annotated[MMLUEvalDataConfig, tag("mmlu")]
    | Annotated[MMLUProEvalDataConfig, tag("mmlu_pro")]
    | Annotated[AIMEEvalDataConfig, tag("aime")]
    | Annotated[GPQAEvalDataConfig, tag("gpqa")]
    | Annotated[MathEvalDataConfig, tag("math")]
    | Annotated[MMAUEvalDataConfig, tag("mmau")]
    | Annotated[DailyOmniEvalDataConfig, tag("daily_omni")]
    | Annotated[LocalMathEvalDataConfig, tag("local_math")],
    chosen_by(_eval_dataset),
]
"""``data`` of ``eval``: the data config its ``dataset_name`` names (any other name: a local math file)."""


class EvalRecipe(RecipeModel):
    """An evaluation recipe (``examples/run_eval.py``)."""

    algorithm: ClassVar[Algorithm] = "eval"

    eval: EvalConfig
    """The metric. Required."""
    generation: OpenMapping
    """The generation section: checked on its own as ``VllmConfig``. Required."""
    tokenizer: TokenizerConfig
    """The tokenizer. Required."""
    data: EvalDataConfig
    """The evaluation dataset. Required."""
    env: EvalEnvConfig
    """The verifiers. Required."""
    cluster: ClusterConfig
    """Nodes and GPUs. Required."""
