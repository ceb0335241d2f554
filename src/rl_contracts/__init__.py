"""Typed, fail-closed contracts for the glue between RL trainers and vLLM.

``import rl_contracts`` exposes the version and the error classes only, and imports neither torch nor vLLM.
The drop-in replacement for ``nemo_rl.models.generation.vllm.utils`` is :mod:`rl_contracts.vllm_utils`.
"""

from . import errors
from .errors import BaselineError as BaselineError
from .errors import ChatResponseContractError as ChatResponseContractError
from .errors import ConfigContractError as ConfigContractError
from .errors import ContractError as ContractError
from .errors import ContractTypeError as ContractTypeError
from .errors import CounterSnapshotError as CounterSnapshotError
from .errors import EnvelopeError as EnvelopeError
from .errors import ForbiddenTokenError as ForbiddenTokenError
from .errors import LogprobContractError as LogprobContractError
from .errors import LogprobMismatchError as LogprobMismatchError
from .errors import PlaceholderRemapError as PlaceholderRemapError
from .errors import PlaceholderTypeError as PlaceholderTypeError
from .errors import PromptFormatError as PromptFormatError
from .errors import RecipeError as RecipeError
from .errors import RecipeLoadError as RecipeLoadError
from .errors import RolloutBatchError as RolloutBatchError
from .errors import RolloutPromptError as RolloutPromptError
from .errors import RolloutPromptMismatchError as RolloutPromptMismatchError
from .errors import RolloutWeightVersionError as RolloutWeightVersionError
from .errors import RoutedExpertsError as RoutedExpertsError
from .errors import RouteStitchError as RouteStitchError
from .errors import SamplingParamsError as SamplingParamsError
from .errors import SpliceError as SpliceError
from .errors import TokenizerMismatchError as TokenizerMismatchError
from .errors import TurnTokenMismatchError as TurnTokenMismatchError
from .errors import UnsupportedConfigError as UnsupportedConfigError
from .errors import WeightVersionError as WeightVersionError

__version__ = "0.4.0"

# The error classes of :mod:`.errors`, not its helpers (``contract_error``, ``MAX_MESSAGE_CHARS``).
__all__ = ["__version__", *(name for name in errors.__all__ if name.endswith("Error"))]
