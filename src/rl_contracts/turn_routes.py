"""Router replay over a multi-turn trajectory: per-turn routes stitched into one route tensor (NeMo RL #3485).

vLLM never forwards a turn's last generated token in that turn (it stops first), so that token's route is computed
only when the next turn prefills it.  Aligning each turn on its own (:func:`~rl_contracts.routed_experts.
pad_and_align_routed_expert_indices`) is valid per turn, but concatenating the results replays the default route
``arange(K)`` for every turn's last token.  :func:`stitch_turn_routes` takes each token's route from the first turn
whose routes hold it, so the next turn's prefill supplies the missing one, and refuses a trajectory that still has
a token without a route before its last token.

This module imports torch when it is imported, and never imports vLLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import torch

from .checks import is_sequence, require_int, require_sequence, token_ids
from .errors import ContractTypeError, RoutedExpertsError, RouteStitchError
from .protocols import CompletionOutputLike, RequestOutputLike
from .routed_experts import (
    R3_MISSING_ROUTE_SENTINEL,
    ROUTED_EXPERTS_FALLBACK_DTYPE,
    pad_and_align_routed_expert_indices,
)

__all__ = ["stitch_turn_routes"]


def _turn_ids(turn: int, request_output: object, completion_output: object) -> tuple[list[int], list[int]]:
    """The prompt vLLM prefilled and the ids it generated in one turn."""
    prompt, generated = (
        getattr(request_output, "prompt_token_ids", None),
        getattr(completion_output, "token_ids", None),
    )
    if prompt is None or generated is None:
        missing = "prompt_token_ids" if prompt is None else "token_ids"
        raise RouteStitchError(
            f"turn {turn}: the output has no {missing}, so its routes cannot be placed in the trajectory",
            turn=turn,
        )
    return token_ids(prompt, f"turns[{turn}] prompt_token_ids"), token_ids(
        generated, f"turns[{turn}] token_ids"
    )


def _turn_routes(
    turn: int,
    request_output: object,
    completion_output: object,
    length: int,
    start: int,
    device: torch.device | str,
    dtype: torch.dtype,
) -> torch.Tensor:
    """One turn's routes aligned to its own sequence (``[length, L, K]``), with the turn in any error."""
    try:
        routes = pad_and_align_routed_expert_indices(
            request_output,
            completion_output,
            valid_length=length,
            padded_length=length,
            device=device,
            require_complete_routed_experts=True,
            routed_experts_dtype=dtype,
            routes_start=start,
        )
    except RoutedExpertsError as error:
        attributes = {name: getattr(error, name) for name in RoutedExpertsError.attribute_names}
        raise RouteStitchError(f"turn {turn}: {error.message}", **attributes, turn=turn) from error
    if routes is None:
        raise RouteStitchError(
            f"turn {turn}: the output carries no routed_experts; request them in every turn "
            "(enable_return_routed_experts)",
            turn=turn,
        )
    return routes


def _starts(routes_start: object, turns: int) -> list[int]:
    if is_sequence(routes_start):
        starts = [require_int(value, f"routes_start[{i}]") for i, value in enumerate(routes_start)]
        if len(starts) != turns:
            raise RouteStitchError(
                f"routes_start holds {len(starts)} values for {turns} turns; give one per turn, or one int for all"
            )
        return starts
    return [require_int(routes_start, "routes_start")] * turns


def stitch_turn_routes(
    turns: Sequence[tuple[RequestOutputLike, CompletionOutputLike]],
    *,
    device: torch.device | str,
    padded_length: int | None = None,
    routed_experts_dtype: torch.dtype = ROUTED_EXPERTS_FALLBACK_DTYPE,
    routes_start: int | Sequence[int] = 0,
) -> torch.Tensor:
    """The routes of a whole multi-turn trajectory, ``[padded_length, L, K]``, from each turn's vLLM output.

    ``turns[k]`` is turn ``k``'s ``(RequestOutput, CompletionOutput)``: the choice the trajectory continued.  Token
    in, token out: turn ``k``'s ``prompt_token_ids`` start with turn ``k - 1``'s prompt and generated ids, so
    token ``t`` of any turn is token ``t`` of the trajectory (the last turn's prompt plus its generated ids, ``N``
    tokens).  Each turn's routes are aligned as :func:`~rl_contracts.routed_experts.
    pad_and_align_routed_expert_indices` aligns them in strict mode (``routes_start`` per turn, or one for all:
    vLLM's ``routed_experts_prompt_start``, so a turn may return only its new rows); then row ``t`` takes the route
    of the first turn that holds one for token ``t``, so turn ``k + 1``'s prefill supplies the route of turn
    ``k``'s last generated token.  Rows ``[N - 1, padded_length)`` hold the default route ``arange(K)`` (the final
    token and padding), as in pad-and-align.  Routes of the same token from two turns are not compared; the first
    wins.

    Guarantee: every row before the trajectory's last token holds a route some turn returned; none is ``-1`` or a
    default route put there for a turn's missing final token.

    Raises:
        ContractTypeError: ``turns`` is not a sequence of pairs, ids are not ints, a length is not an int.
        RouteStitchError (a ``RoutedExpertsError``): a turn without ids or routes, a prompt that does not extend
            the previous turn's ids (``.position``: the first differing token), turns that disagree on ``[L, K]``,
            what pad-and-align raises for a turn, ``padded_length < N``, or a token before the last one that no
            turn routed: ``.turn`` is the turn that introduced it and ``.position`` its index in the trajectory.
    """
    items = require_sequence(
        turns, "turns", "a sequence of (RequestOutput, CompletionOutput) pairs, one per turn"
    )
    if not items:
        raise RouteStitchError("turns is empty: a trajectory has at least one turn")
    starts = _starts(routes_start, len(items))
    trajectory: list[int] = []
    lengths: list[int] = []
    aligned: list[torch.Tensor] = []
    for turn, item in enumerate(items):
        if not is_sequence(item) or len(item) != 2:
            raise ContractTypeError.for_value(
                f"turns[{turn}]", "a (RequestOutput, CompletionOutput) pair", item
            )
        prompt, generated = _turn_ids(turn, item[0], item[1])
        if prompt[: len(trajectory)] != trajectory:
            position = next(
                (i for i, (a, b) in enumerate(zip(trajectory, prompt, strict=False)) if a != b), len(prompt)
            )
            raise RouteStitchError(
                f"turn {turn}: its prompt_token_ids differ from turn {turn - 1}'s prompt and generated ids at "
                f"token {position}, so its routes do not belong to the same trajectory (token in, token out keeps "
                "every earlier id)",
                turn=turn,
                position=position,
            )
        trajectory = prompt + generated
        lengths.append(len(trajectory))
        aligned.append(
            _turn_routes(turn, item[0], item[1], len(trajectory), starts[turn], device, routed_experts_dtype)
        )
    shapes = {tuple(routes.shape[1:]) for routes in aligned}
    if len(shapes) > 1:
        raise RouteStitchError(
            f"the turns' routes disagree on [num_moe_layers, topk]: {sorted(shapes)}; every turn must come from "
            "the same model",
            turn=next(
                k
                for k, routes in enumerate(aligned)
                if tuple(routes.shape[1:]) != tuple(aligned[0].shape[1:])
            ),
        )
    return _stitched(aligned, lengths, padded_length)


def _stitched(aligned: list[torch.Tensor], lengths: list[int], padded_length: int | None) -> torch.Tensor:
    """Row ``t`` from the first turn with a route for it; default rows from the last token on; every earlier row
    checked."""
    total = lengths[-1]
    padded = total if padded_length is None else require_int(padded_length, "padded_length")
    if padded < total:
        raise RouteStitchError(
            f"padded_length={padded} is shorter than the trajectory's {total} tokens", padded_length=padded
        )
    first = aligned[0]
    layers, top_k = int(first.shape[1]), int(first.shape[2])
    result = torch.full(
        (padded, layers, top_k), R3_MISSING_ROUTE_SENTINEL, dtype=first.dtype, device=first.device
    )
    routed = max(total - 1, 0)
    filled = torch.zeros(routed, dtype=torch.bool, device=first.device)
    for routes, length in zip(aligned, lengths, strict=True):
        rows = routes[: length - 1]
        real = (
            ~(rows == R3_MISSING_ROUTE_SENTINEL).flatten(1).all(dim=1)
            if layers * top_k
            else torch.ones(rows.shape[0], dtype=torch.bool, device=rows.device)
        )
        take = real & ~filled[: rows.shape[0]]
        result[: rows.shape[0]][take] = rows[take]
        filled[: rows.shape[0]] |= real
    result[routed:] = torch.arange(top_k, dtype=first.dtype, device=first.device)
    missing = torch.nonzero(~filled)
    if missing.numel():
        _raise_missing(int(missing[0, 0]), lengths)
    return result


def _raise_missing(position: int, lengths: list[int]) -> NoReturn:
    turn = next(k for k, length in enumerate(lengths) if position < length)
    last_of_turn = position == lengths[turn] - 1
    why = (
        f"it is turn {turn}'s last generated token, whose route only turn {turn + 1}'s prefill computes; that turn's "
        "routes do not hold it (routes_start past it, or rows missing)"
        if last_of_turn
        else "no turn's routes hold it (rows missing, or omitted by routes_start)"
    )
    raise RouteStitchError(
        f"turn {turn}: token {position} of the trajectory has no route: {why}. Router replay would use the "
        "learner's own router (or a default route) for a token the engine routed; request routes for every token "
        "before the trajectory's last",
        turn=turn,
        position=position,
    )
