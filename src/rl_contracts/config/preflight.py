"""Deprecated: preflight moved to :mod:`rl_contracts.config.rules.preflight` (README, "Moved modules").

Importing this module emits a ``DeprecationWarning`` and re-exports the public names of the new module.
"""

import warnings

from .rules import preflight as _moved
from .rules.preflight import *  # noqa: F403

__all__ = list(_moved.__all__)

warnings.warn(
    "rl_contracts.config.preflight moved to rl_contracts.config.rules.preflight; import from there",
    DeprecationWarning,
    stacklevel=2,
)
