"""The change to a recipe that removes one finding, as the rule that reports the finding names it.

A rule with a fix (its registry record's ``fix_safety`` is ``"safe"`` or ``"unsafe"``) attaches a
:class:`SuggestedFix` to the findings it can fix: rename the key (``K1``: the one did-you-mean candidate), move it
(``P28``: to the place NeMo RL reads it from), remove it (``W2``: a dead key), or set the value the rule names
(``P9``: ``train_global_batch_size`` = prompts x generations, ...).  The fix says what changes at the finding's
path of the composed recipe; :mod:`rl_contracts.config.fixes` turns it into an edit of the file of the
``defaults:`` chain that set the value.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

__all__ = ["FixAction", "SuggestedFix"]

FixAction = Literal["rename", "move", "remove", "set"]
"""``rename``: the key, in place; ``move``: the entry, to another path; ``remove``: the entry; ``set``: the value
(the key added to the recipe given when it is absent)."""


class SuggestedFix(BaseModel):
    """One fix of one finding (frozen).

    ``target`` is the new key name (``rename``) or the full dotted path of the new place (``move``), else
    ``None``; ``value`` the new value (``set``); ``description`` says what the fix does in one line, e.g.
    ``"rename gpu_memory_utilisation to gpu_memory_utilization"``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    action: FixAction
    description: str
    target: str | None = None
    value: JsonValue = None
