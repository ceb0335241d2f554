"""Assertions of the SPEC §7 invariants that hold for every call, for hand-written and property tests.

:func:`assert_contract_error` checks invariant 1 for one raised exception, so a trainer fuzzing its own glue
(or a test of this library) states it in one line.  Across Ray, pass it what
:func:`~rl_contracts.errors.contract_error` returns for the exception the driver caught.
"""

from __future__ import annotations

import pickle

from ..errors import MAX_MESSAGE_CHARS, ContractError, contract_error

__all__ = ["assert_contract_error"]


def assert_contract_error(error: BaseException | None) -> None:
    """Assert invariant 1 of SPEC §7 for one raised exception; ``AssertionError`` names what does not hold.

    ``error`` must be a :class:`~rl_contracts.errors.ContractError` whose message (``str(error)``, also
    ``error.args[0]``) has at most 2,000 characters, and a ``pickle`` round-trip must give the same class, the
    same message and args, and equal attributes (every attribute of the instance, structured ones included).
    ``None`` (what :func:`~rl_contracts.errors.contract_error` returns when it finds no library error) fails, and
    so does Ray's ``RayTaskError(X)`` wrapper itself, with a hint to unwrap it.

    Example::

        with pytest.raises(ContractError) as info:
            validate_rollout_prompt([1], [2])
        assert_contract_error(info.value)
    """
    assert error is not None, "no library error: contract_error found no ContractError in the exception"
    assert isinstance(error, ContractError), f"{type(error).__name__} escaped: {error!r}"
    carried = contract_error(error)
    found = "nothing" if carried is None else f"a {type(carried).__name__}"
    assert carried is error, (
        f"{type(error).__name__} is a wrapper, not a library class; check contract_error(error) ({found}) instead"
    )
    message = str(error)
    assert message == error.args[0], "str(error) differs from error.args[0]"
    assert len(message) <= MAX_MESSAGE_CHARS, f"the message has {len(message)} characters"
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is type(error), f"pickle gave a {type(clone).__name__}"
    assert (str(clone), clone.args) == (message, error.args), "pickle changed the message"
    assert vars(clone) == vars(error), "pickle changed an attribute"
