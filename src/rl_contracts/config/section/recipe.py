"""The whole recipe: one top-level model per NeMo RL algorithm (:data:`RECIPE_MODELS`), and which algorithm a recipe
is for (:func:`~.algorithm.detect_algorithm`).

Each ``examples/run_*.py`` of NeMo RL validates the composed, resolved recipe as its algorithm's ``MasterConfig``
before Ray starts; :data:`RECIPE_MODELS` holds the model of each (stricter, see :mod:`.variants`).  Each model lives
beside its algorithm's own section (:class:`~rl_contracts.config.section.grpo.GRPORecipe` in
:mod:`rl_contracts.config.section.grpo`, ...) and its module is imported on the first lookup, so that checking a
recipe creates the models of its algorithm only.

The generation section (``policy.generation``, or the top-level ``generation`` of an evaluation) is declared open
in the models: it is validated on its own as :class:`~rl_contracts.config.VllmConfig`.
"""

from collections.abc import Iterator, Mapping
from typing import Final

from .algorithm import ALGORITHMS, RUN_SCRIPTS, Algorithm, RecipeModel, detect_algorithm

__all__ = [
    "ALGORITHMS",
    "RECIPE_MODELS",
    "RUN_SCRIPTS",
    "Algorithm",
    "RecipeModel",
    "detect_algorithm",
    "recipe_model",
]


def recipe_model(algorithm: Algorithm) -> type[RecipeModel]:
    """The whole-recipe model of ``algorithm``, its module imported on first use; raises ``KeyError`` for a name
    that is not an :data:`~.algorithm.Algorithm`."""
    if algorithm == "grpo":
        from .grpo import GRPORecipe

        return GRPORecipe
    if algorithm == "grpo-sc":
        from .async_rl import GRPOSingleControllerRecipe

        return GRPOSingleControllerRecipe
    if algorithm == "sft":
        from .supervised import SFTRecipe

        return SFTRecipe
    if algorithm == "dpo":
        from .supervised import DPORecipe

        return DPORecipe
    if algorithm == "rm":
        from .supervised import RMRecipe

        return RMRecipe
    if algorithm == "ppo":
        from .ppo import PPORecipe

        return PPORecipe
    if algorithm == "distillation":
        from .distillation import DistillationRecipe

        return DistillationRecipe
    if algorithm == "xtoken-distillation":
        from .distillation import XTokenDistillationRecipe

        return XTokenDistillationRecipe
    if algorithm == "eval":
        from .eval import EvalRecipe

        return EvalRecipe
    raise KeyError(algorithm)


class _RecipeModels(Mapping[Algorithm, type[RecipeModel]]):
    """:data:`RECIPE_MODELS`: every algorithm, in the order of :data:`~.algorithm.ALGORITHMS`, to its model
    (:func:`recipe_model`)."""

    def __getitem__(self, algorithm: Algorithm) -> type[RecipeModel]:
        return recipe_model(algorithm)

    def __iter__(self) -> Iterator[Algorithm]:
        return iter(ALGORITHMS)

    def __len__(self) -> int:
        return len(ALGORITHMS)


RECIPE_MODELS: Final[Mapping[Algorithm, type[RecipeModel]]] = _RecipeModels()
"""The whole-recipe model of each algorithm, imported on first lookup (:func:`recipe_model`)."""
