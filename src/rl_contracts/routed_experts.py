"""Router replay (R3): carry dtype, range-checked conversion and pad-and-align of routed experts (SPEC §3.1–3.3).

Routes are ``[S, L, K]`` tensors: entry ``[s, l, :]`` holds the experts token ``s`` was routed to in MoE layer ``l``.
vLLM returns them as a numpy uint8 array (uint16 beyond 256 experts) holding the prompt's and the response's rows,
one per token except the last.  This module converts them to a narrow signed *carry dtype*, checking every id
before any narrowing cast, and aligns them to the padded training sequence with explicit ``-1`` sentinel rows for
routes that were not captured.

This module imports torch and numpy when it is imported, and never imports vLLM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, NoReturn, TypedDict, overload

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ._internal.messages import render, render_list, render_name, type_name
from ._internal.optional_torch import torch
from ._internal.routes import (
    CARRY_DTYPE_NAMES,
    ENVIRONMENT_ERRORS,
    WIRE_DTYPE_NAMES,
    carry_dtype,
    nested_ids,
    non_negative,
    torch_device,
)
from .checks import int_or_none, is_sequence, require_bool, require_int, require_sequence, token_ids
from .errors import ContractTypeError, RoutedExpertsError, RouteStitchError
from .protocols import CompletionOutputLike, RequestOutputLike

__all__ = [
    "G_ROUTED_EXPERTS_RANGE_CHECKED",
    "R3_MISSING_ROUTE_SENTINEL",
    "ROUTED_EXPERTS_DTYPE_NAMES",
    "ROUTED_EXPERTS_FALLBACK_DTYPE",
    "RouteStats",
    "RoutingAgreement",
    "as_routed_experts_tensor",
    "get_num_routed_experts",
    "pad_and_align_routed_expert_indices",
    "resolve_routed_experts_dtype",
    "routing_agreement",
    "stitch_turn_routes",
]

R3_MISSING_ROUTE_SENTINEL: int = -1
"""Fills every slot of a row that means "no route captured for this token"."""

ROUTED_EXPERTS_FALLBACK_DTYPE: torch.dtype = torch.int16
"""The default carry dtype everywhere."""

ROUTED_EXPERTS_DTYPE_NAMES: Mapping[torch.dtype, str] = WIRE_DTYPE_NAMES
"""The wire dtypes of the routed-experts envelope and their names (read-only)."""

G_ROUTED_EXPERTS_RANGE_CHECKED: bool = False
"""Informational only: becomes ``True`` after the first successful id-range check; never disables a check."""

_INT32_EXPERTS_LIMIT = 2**31
_MAX_BYTES = 2**63 - 1  # torch's storage-size arithmetic is int64

_TORCH_INT_DTYPES: Mapping[torch.dtype, np.dtype[np.integer]] = MappingProxyType(
    {
        torch.int8: np.dtype(np.int8),
        torch.int16: np.dtype(np.int16),
        torch.int32: np.dtype(np.int32),
        torch.int64: np.dtype(np.int64),
        torch.uint8: np.dtype(np.uint8),
        torch.uint16: np.dtype(np.uint16),
        torch.uint32: np.dtype(np.uint32),
        torch.uint64: np.dtype(np.uint64),
    }
)
_TORCH_NO_REDUCTIONS = frozenset({torch.uint16, torch.uint32, torch.uint64})  # torch implements no min/max

_RouteSource = np.ndarray | torch.Tensor
"""A validated source of expert ids, not yet cast: an integer (or empty) numpy array or dense torch tensor, or an
object array of exact Python ints that numpy could not hold in an integer dtype (always out of range)."""


class RouteStats(TypedDict):
    """Route counts of one :func:`pad_and_align_routed_expert_indices` call (SPEC §3.3 step 7)."""

    actual_routes: int
    """``R``, the number of combined route rows the backend returned."""
    expected_routes: int
    """``E = min(max(valid_length - 1, 0), padded_length)``; the last valid token has no route."""
    missing_routes: int
    """Rows in ``[0, E)`` that hold the ``-1`` sentinel because no route was returned for them."""
    surplus_routes: int
    """Rows beyond the one tolerated final-token route; they are discarded."""


@dataclass(frozen=True)
class _Context:
    """Where a conversion runs: the suffix appended to error messages and the attributes the errors carry."""

    suffix: str = ""
    attributes: dict[str, int | None] = field(default_factory=dict)

    def error(self, message: str, **attributes: object) -> RoutedExpertsError:
        return RoutedExpertsError(message + self.suffix, **{**self.attributes, **attributes})


_NO_CONTEXT = _Context()


def resolve_routed_experts_dtype(num_experts: int | None) -> torch.dtype:
    """Return the narrowest signed carry dtype that holds expert ids ``0 … num_experts-1`` and the sentinel -1.

    ``None`` gives the fallback ``torch.int16``; 1–128 give ``int8``; 129–32768 ``int16``; 32769–2**31 ``int32``.

    Raises:
        ContractTypeError: ``num_experts`` is a bool or another non-int.
        RoutedExpertsError: ``num_experts <= 0``, or ``> 2**31`` (int32 cannot hold every id).

    Divergence: the reference returns int8 for ``num_experts <= 0``, int32 above 2**31, and accepts bools.

    >>> resolve_routed_experts_dtype(256)
    torch.int16
    """
    if num_experts is None:
        return ROUTED_EXPERTS_FALLBACK_DTYPE
    n = require_int(num_experts, "num_experts", low=1, error=RoutedExpertsError)
    if n > _INT32_EXPERTS_LIMIT:
        raise RoutedExpertsError(
            f"num_experts must be <= 2**31 for the int32 carry dtype, got {render(n)}",
            max_id=n - 1,
            dtype_name="int32",
            limit=_INT32_EXPERTS_LIMIT - 1,
        )
    if n <= 128:
        return torch.int8
    return torch.int16 if n <= 32768 else torch.int32


def get_num_routed_experts(hf_config: object) -> int | None:
    """Return the routed-expert count of a Hugging Face model config, or ``None`` for a dense model.

    Reads ``num_experts``, ``n_routed_experts`` and ``num_local_experts`` (in that order) on ``hf_config``, then
    on ``hf_config.text_config`` when present (vision-language models), and returns the first value that is an
    int (not a bool) and > 0.  Missing attributes count as ``None``; never raises for a well-behaved object.

    Divergence: the reference accepts ``True`` as 1.
    """
    configs = [hf_config]
    text_config = getattr(hf_config, "text_config", None)
    if text_config is not None:
        configs.append(text_config)
    for config in configs:
        for name in ("num_experts", "n_routed_experts", "num_local_experts"):
            value = getattr(config, name, None)
            count = int_or_none(value)
            if count is not None and count > 0:
                return count
    return None


def _not_integer(context: _Context, found: str) -> RoutedExpertsError:
    return context.error(f"routed_experts must hold integer expert ids, got dtype {found}")


def _integer_source(value: object, context: _Context) -> _RouteSource:
    """Convert ``value`` without changing any id to an integer numpy array or dense tensor (§3.2 step 2).

    Numpy arrays stay numpy arrays; tensors are used as they are (detached); nested lists and tuples go through
    numpy (no per-element Python loop, no warning for lists of arrays) and keep ids numpy cannot hold in one
    integer dtype exact (:func:`~rl_contracts._internal.routes.nested_ids`); anything else goes through
    ``torch.as_tensor``.  A source with zero elements is accepted whatever its dtype.
    """
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided or value.is_nested:
            raise context.error(f"routed_experts must be a dense (strided) tensor, got layout {value.layout}")
        if value.device.type == "meta":
            raise context.error("routed_experts is a tensor on the meta device, which holds no expert ids")
        tensor = value.detach()
        if tensor.dtype not in _TORCH_INT_DTYPES and tensor.numel() > 0:
            raise _not_integer(context, render_name(tensor.dtype))
        return tensor
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)  # drops subclasses such as masked arrays: every stored id is checked
        if array.dtype.kind not in ("i", "u") and array.size > 0:
            raise _not_integer(context, render_name(array.dtype))
        return array
    try:
        if not isinstance(value, list | tuple):
            return _integer_source(torch.as_tensor(value), context)
        array, holds_bool = nested_ids(value)
    except ENVIRONMENT_ERRORS:
        raise
    except (TypeError, ValueError, RuntimeError, OverflowError, IndexError) as exc:
        if isinstance(exc, RoutedExpertsError):
            raise
        raise _not_integer(
            context, f"unknown ({type_name(value)} does not convert to an array: {render_name(exc)})"
        ) from None
    if holds_bool:
        raise _not_integer(context, "bool (a bool element among the integer expert ids)")
    if array.dtype.kind not in ("i", "u", "O") and array.size > 0:
        raise _not_integer(context, render_name(array.dtype))
    return array


def _exact_bounds(source: _RouteSource, need_min: bool, need_max: bool) -> tuple[int | None, int | None]:
    """Exact ``(min_id, max_id)`` of a non-empty integer source (``None`` where not needed), in one pass each.

    Torch implements no reductions on uint16/32/64; those tensors are reduced by numpy on the host.
    """
    if isinstance(source, torch.Tensor) and source.dtype in _TORCH_NO_REDUCTIONS:
        source = source.cpu().numpy()
    if isinstance(source, torch.Tensor):
        if need_min and need_max:
            low, high = torch.aminmax(source)
            return int(low.item()), int(high.item())
        return (int(source.min().item()) if need_min else None), (
            int(source.max().item()) if need_max else None
        )
    return (int(source.min()) if need_min else None), (int(source.max()) if need_max else None)


def _check_id_range(source: _RouteSource, dtype: torch.dtype, context: _Context) -> None:
    """Raise unless every id of ``source`` lies in ``[-1, iinfo(dtype).max]`` (§3.2 step 3); runs on every call.

    A bound is reduced only when the source dtype does not already prove it (uint8 ids always fit int16, unsigned
    ids are never below -1), so the check never depends on the flag or on earlier calls.
    """
    global G_ROUTED_EXPERTS_RANGE_CHECKED
    if (source.numel() if isinstance(source, torch.Tensor) else source.size) == 0:
        return
    limit = int(torch.iinfo(dtype).max)
    if isinstance(source, np.ndarray) and source.dtype.kind == "O":
        need_min = need_max = True  # exact Python ints: no dtype bounds them
    else:
        info = np.iinfo(_TORCH_INT_DTYPES[source.dtype] if isinstance(source, torch.Tensor) else source.dtype)
        need_min, need_max = int(info.min) < R3_MISSING_ROUTE_SENTINEL, int(info.max) > limit
    min_id, max_id = _exact_bounds(source, need_min, need_max)
    if max_id is not None and max_id > limit:
        raise context.error(
            f"routed expert id {render(max_id)} exceeds the resolved carry dtype {dtype} (max {limit}); the "
            "model's expert count was likely mis-detected (see "
            "rl_contracts.routed_experts.resolve_routed_experts_dtype).",
            max_id=max_id,
            dtype_name=CARRY_DTYPE_NAMES[dtype],
            limit=limit,
        )
    if min_id is not None and min_id < R3_MISSING_ROUTE_SENTINEL:
        raise context.error(
            f"routed expert id {render(min_id)} is below the missing-route sentinel -1; routed_experts must "
            "hold expert ids >= 0 or the sentinel -1.",
            min_id=min_id,
            dtype_name=CARRY_DTYPE_NAMES[dtype],
            limit=limit,
        )
    G_ROUTED_EXPERTS_RANGE_CHECKED = True


def _wraps_zero_copy(array: np.ndarray) -> bool:
    """Whether ``torch.from_numpy`` shares ``array`` without a copy, an error or a warning (vLLM's arrays do)."""
    return (
        array.dtype.kind in ("i", "u")
        and array.dtype.isnative
        and array.flags.writeable
        and all(stride >= 0 for stride in array.strides)
    )


def _copy_cast(destination: torch.Tensor, source: _RouteSource) -> None:
    """Copy ``source`` (same shape) into ``destination`` with one cast, on any device.

    Tensors and well-behaved numpy arrays are copied by torch (multi-threaded, straight to the device); other numpy
    arrays (read-only, non-native byte order, negative strides) are cast by numpy on the host.
    """
    if destination.numel() == 0:
        return
    if isinstance(source, np.ndarray) and _wraps_zero_copy(source):
        source = torch.from_numpy(source)
    if isinstance(source, torch.Tensor):
        destination.copy_(source)
    elif destination.device.type == "cpu":
        np.copyto(destination.numpy(), source)
    else:
        staging = torch.empty(tuple(destination.shape), dtype=destination.dtype)
        np.copyto(staging.numpy(), source)
        destination.copy_(staging)


def as_routed_experts_tensor(
    value: object, *, device: torch.device | str, dtype: torch.dtype
) -> torch.Tensor:
    """Convert backend routed-expert ids (numpy, tensor or nested lists) to a new ``dtype`` tensor on ``device``.

    Every id is range-checked before the cast, on every call, so a narrowing cast can never wrap: ids must lie in
    ``[-1, iinfo(dtype).max]``.  Numpy uint8/uint16 arrays (what vLLM returns) are checked on numpy; uint16/32/64
    tensors are checked without torch reductions.  A source with zero elements gives an empty tensor whatever its
    dtype.  The result never shares memory with ``value``.

    Raises:
        RoutedExpertsError: ``dtype`` is not int8/int16/int32/int64; ``value`` holds bools, floats or complex
            numbers, or does not convert; an id exceeds the carry dtype or is below -1 (``.min_id``, ``.max_id``,
            ``.dtype_name``, ``.limit``).
        ContractTypeError: ``device`` is neither a ``torch.device`` nor a string.

    Divergence: the reference checks the range once per process, checks only the maximum, and accepts float and
    bool input.  Here ``G_ROUTED_EXPERTS_RANGE_CHECKED`` is informational and never disables a check.

    >>> as_routed_experts_tensor(np.array([[[3, 1]]], np.uint8), device="cpu", dtype=torch.int8).tolist()
    [[[3, 1]]]
    """
    carry = carry_dtype(dtype)
    target = torch_device(device)
    source = _integer_source(value, _NO_CONTEXT)
    _check_id_range(source, carry, _NO_CONTEXT)
    result = torch.empty(tuple(source.shape), dtype=carry, device=target)
    _copy_cast(result, source)
    return result


@overload
def pad_and_align_routed_expert_indices(
    request_output: object,
    completion_output: object,
    *,
    valid_length: int,
    padded_length: int,
    device: torch.device | str,
    require_complete_routed_experts: bool = False,
    allow_missing_routed_experts_fallback: bool = True,
    return_stats: Literal[False] = False,
    routed_experts_dtype: torch.dtype = ROUTED_EXPERTS_FALLBACK_DTYPE,
    routes_start: int = 0,
) -> torch.Tensor | None: ...
@overload
def pad_and_align_routed_expert_indices(
    request_output: object,
    completion_output: object,
    *,
    valid_length: int,
    padded_length: int,
    device: torch.device | str,
    require_complete_routed_experts: bool = False,
    allow_missing_routed_experts_fallback: bool = True,
    return_stats: Literal[True],
    routed_experts_dtype: torch.dtype = ROUTED_EXPERTS_FALLBACK_DTYPE,
    routes_start: int = 0,
) -> tuple[torch.Tensor | None, RouteStats]: ...
@overload
def pad_and_align_routed_expert_indices(
    request_output: object,
    completion_output: object,
    *,
    valid_length: int,
    padded_length: int,
    device: torch.device | str,
    require_complete_routed_experts: bool = False,
    allow_missing_routed_experts_fallback: bool = True,
    return_stats: bool = False,
    routed_experts_dtype: torch.dtype = ROUTED_EXPERTS_FALLBACK_DTYPE,
    routes_start: int = 0,
) -> torch.Tensor | tuple[torch.Tensor | None, RouteStats] | None: ...


def pad_and_align_routed_expert_indices(
    request_output: object,
    completion_output: object,
    *,
    valid_length: int,
    padded_length: int,
    device: torch.device | str,
    require_complete_routed_experts: bool = False,
    allow_missing_routed_experts_fallback: bool = True,
    return_stats: bool = False,
    routed_experts_dtype: torch.dtype = ROUTED_EXPERTS_FALLBACK_DTYPE,
    routes_start: int = 0,
) -> torch.Tensor | tuple[torch.Tensor | None, RouteStats] | None:
    """Return routes aligned to the full prompt+response sequence: ``[padded_length, L, K]`` in the carry dtype.

    The routes are ``request_output.prompt_routed_experts`` (legacy vLLM 0.21.x, optional) followed by
    ``completion_output.routed_experts`` (current vLLM: numpy uint8/uint16 with prompt + generated - 1 rows);
    combined row ``r`` belongs to token ``routes_start + r``.  With ``E = min(max(valid_length - 1, 0),
    padded_length)`` and ``R`` combined rows, the output rows are, in order: ``[0, min(routes_start, E))`` all -1
    (omitted routes); ``[routes_start, min(E, routes_start + R))`` copied; the rest of ``[0, E)`` all -1 (missing
    routes); ``[E, padded_length)`` the default route ``arange(K)`` in every layer (final valid token and padding).
    One surplus final-token route is normal and discarded.  Returns ``None`` (or ``(None, stats)``) when neither
    part is present; with ``return_stats=True`` also returns a :class:`RouteStats`.

    The output is allocated once on ``device``; every row class is filled with one slice operation and each part
    is range-checked and cast in a single copy (numpy sources are cast by numpy, no intermediate tensors).

    Raises:
        ContractTypeError: a length or ``routes_start`` that is not an int, a flag that is not a bool, a ``device``
            that is neither a ``torch.device`` nor a string.
        RoutedExpertsError: a negative length or ``routes_start``; an unsupported carry dtype; a part that is not
            integer, out of range (checked on every call), or not 3-D; parts that disagree on ``[L, K]``; a top-k
            whose default route does not fit the carry dtype; in strict mode
            (``require_complete_routed_experts=True``), missing routes without the fallback, or more than one
            surplus route.  Messages carry the route counts; the count errors carry ``.routes``, ``.expected``,
            ``.valid_length``, ``.padded_length``, ``.num_cached_tokens`` and ``.routes_start``.

    Divergence: the reference treats a negative ``valid_length`` as 0, lets torch raise ``RuntimeError`` when the
    parts disagree on ``[L, K]``, and checks the id range only once per process.

    >>> from types import SimpleNamespace
    >>> out = SimpleNamespace(routed_experts=np.array([[[2, 1]], [[0, 3]]], np.uint8))
    >>> pad_and_align_routed_expert_indices(None, out, valid_length=3, padded_length=4, device="cpu").tolist()
    [[[2, 1]], [[0, 3]], [[0, 1]], [[0, 1]]]
    """
    alignment = _Alignment.checked(
        request_output,
        valid_length=valid_length,
        padded_length=padded_length,
        routes_start=routes_start,
        strict=require_complete_routed_experts,
        fallback=allow_missing_routed_experts_fallback,
        with_stats=return_stats,
        carry=routed_experts_dtype,
        device=device,
    )
    parts = _route_parts(request_output, completion_output, alignment)
    stats = _route_stats(
        alignment.expected,
        alignment.start,
        sum(int(source.shape[0]) for _, source in parts) if parts else None,
    )
    if not parts:
        return (None, stats) if alignment.with_stats else None
    _check_route_counts(stats, alignment)
    result = _fill_rows(parts, stats, alignment)
    return (result, stats) if alignment.with_stats else result


@dataclass(frozen=True)
class _Alignment:
    """The checked arguments of one pad-and-align call, and the facts its error messages and attributes carry."""

    valid: int
    padded: int
    start: int
    strict: bool
    fallback: bool
    with_stats: bool
    carry: torch.dtype
    device: torch.device
    cached: object
    """``request_output.num_cached_tokens`` as read (quoted in messages only)."""

    @classmethod
    def checked(
        cls,
        request_output: object,
        *,
        valid_length: object,
        padded_length: object,
        routes_start: object,
        strict: object,
        fallback: object,
        with_stats: object,
        carry: object,
        device: object,
    ) -> _Alignment:
        """Check every argument (§3.3 step 1), in the order of the signature."""
        valid = non_negative(valid_length, "valid_length", "valid_length")
        padded = non_negative(padded_length, "padded_length", "padded_length", valid_length=valid)
        start = non_negative(
            routes_start, "routes_start", "routes_start", valid_length=valid, padded_length=padded
        )
        return cls(
            valid=valid,
            padded=padded,
            start=start,
            strict=require_bool(strict, "require_complete_routed_experts"),
            fallback=require_bool(fallback, "allow_missing_routed_experts_fallback"),
            with_stats=require_bool(with_stats, "return_stats"),
            carry=carry_dtype(carry),
            device=torch_device(device),
            cached=getattr(request_output, "num_cached_tokens", None),
        )

    @property
    def expected(self) -> int:
        """``E``: the last valid token has no route, and no route lies beyond the padding."""
        return min(max(self.valid - 1, 0), self.padded)

    @property
    def counts(self) -> str:
        return (
            f"valid_length={render(self.valid)}, padded_length={render(self.padded)}, "
            f"num_cached_tokens={render(self.cached)}"
        )

    @property
    def facts(self) -> str:
        """The context appended to conversion and shape errors."""
        start = f", routes_start={render(self.start)}" if self.start else ""
        return f"expected={render(self.expected)}, {self.counts}{start}"

    def attributes(self, routes: int | None) -> dict[str, int | None]:
        return {
            "routes": routes,
            "valid_length": self.valid,
            "padded_length": self.padded,
            "routes_start": self.start,
            "expected": self.expected,
            "num_cached_tokens": int_or_none(self.cached),
        }


def _route_parts(
    request_output: object, completion_output: object, alignment: _Alignment
) -> list[tuple[str, _RouteSource]]:
    """The present route parts, prompt first, each converted, range-checked and 3-D, agreeing on ``[L, K]``.

    §3.3 steps 2-4; the parts are not yet cast, so each is copied exactly once, into the output.
    """
    parts: list[tuple[str, _RouteSource]] = []
    for name, owner in (("prompt_routed_experts", request_output), ("routed_experts", completion_output)):
        value = getattr(owner, name, None)
        if value is not None:
            context = _Context(f" [{name}: {alignment.facts}]", alignment.attributes(None))
            source = _integer_source(value, context)
            _check_id_range(source, alignment.carry, context)
            parts.append((name, source))
    for name, source in parts:
        if source.ndim != 3:
            raise _Context(f" [{alignment.facts}]", alignment.attributes(None)).error(
                "vLLM routed_experts must have shape [tokens, num_moe_layers, topk], got "
                f"{render(tuple(source.shape))} ({name})"
            )
    if len(parts) == 2 and tuple(parts[0][1].shape[1:]) != tuple(parts[1][1].shape[1:]):
        routes = sum(int(source.shape[0]) for _, source in parts)
        raise RoutedExpertsError(
            "prompt_routed_experts and routed_experts disagree on [num_moe_layers, topk]: "
            f"{render_list(parts[0][1].shape[1:])} vs {render_list(parts[1][1].shape[1:])} "
            f"[routes={routes}, {alignment.facts}]",
            **alignment.attributes(routes),
        )
    return parts


def _route_stats(expected: int, start: int, routes: int | None) -> RouteStats:
    """The route counts of §3.3 steps 5-7 for ``routes`` combined rows starting at token ``start``.

    ``routes=None`` (no part present) counts nothing as missing or surplus.
    """
    if routes is None:
        return {"actual_routes": 0, "expected_routes": expected, "missing_routes": 0, "surplus_routes": 0}
    return {
        "actual_routes": routes,
        "expected_routes": expected,
        "missing_routes": min(start, expected) + max(expected - start - routes, 0),
        "surplus_routes": min(routes, max(start + routes - (expected + 1), 0)),
    }


def _check_route_counts(stats: RouteStats, alignment: _Alignment) -> None:
    """Strict mode (§3.3 steps 8-9): missing routes without the fallback, or more than one surplus route."""
    if not alignment.strict:
        return
    routes, expected = stats["actual_routes"], stats["expected_routes"]
    head = f"routes={routes}, " + (f"routes_start={render(alignment.start)}, " if alignment.start else "")
    if stats["missing_routes"] > 0 and not alignment.fallback:
        raise RoutedExpertsError(
            f"vLLM returned incomplete routed_experts for router replay: {head}"
            f"expected_at_least={render(expected)}, {alignment.counts}. This usually means the generation "
            "backend did not return routed experts for every non-final token in the prompt+response sequence.",
            **alignment.attributes(routes),
        )
    if stats["surplus_routes"] > 0:
        raise RoutedExpertsError(
            f"vLLM returned too many routed_experts routes for router replay: {head}"
            f"expected={render(expected)}, max_allowed={render(expected + 1)}, {alignment.counts}. Router "
            "replay allows at most one surplus final-token route.",
            **alignment.attributes(routes),
        )


def _fill_rows(
    parts: list[tuple[str, _RouteSource]], stats: RouteStats, alignment: _Alignment
) -> torch.Tensor:
    """Allocate the output once and fill its four row classes (§3.3 step 10), each with one slice operation.

    Raises ``RoutedExpertsError`` first when the default route ``arange(K)`` does not fit the carry dtype or the
    output would exceed torch's int64 size arithmetic.
    """
    routes, expected, start = stats["actual_routes"], stats["expected_routes"], alignment.start
    carry, padded = alignment.carry, alignment.padded
    layers, topk = (int(size) for size in parts[0][1].shape[1:])
    limit = int(torch.iinfo(carry).max)
    if topk - 1 > limit:
        raise RoutedExpertsError(
            f"routed_experts topk {topk} needs default-route ids up to {topk - 1}, which exceed the resolved carry "
            f"dtype {carry} (max {limit}); the model's expert count was likely mis-detected (see "
            f"rl_contracts.routed_experts.resolve_routed_experts_dtype). [routes={routes}, {alignment.facts}]",
            **alignment.attributes(routes),
            max_id=topk - 1,
            dtype_name=CARRY_DTYPE_NAMES[carry],
            limit=limit,
        )
    if max(padded, 1) * max(layers, 1) * max(topk, 1) * carry.itemsize > _MAX_BYTES:
        raise RoutedExpertsError(
            f"padded_length {render(padded)} x num_moe_layers {layers} x topk {topk} is too large for a "
            f"tensor [routes={routes}, {alignment.facts}]",
            **alignment.attributes(routes),
        )
    result = torch.empty((padded, layers, topk), dtype=carry, device=alignment.device)
    copied_end = min(expected, start + routes)
    result[: min(start, expected)].fill_(R3_MISSING_ROUTE_SENTINEL)
    row = start
    for _, source in parts:
        take = max(min(copied_end - row, int(source.shape[0])), 0)
        _copy_cast(result[row : row + take], source[:take])  # returns at once when nothing is taken
        row += take
    result[copied_end:expected].fill_(R3_MISSING_ROUTE_SENTINEL)
    if padded > expected:
        result[expected:] = torch.arange(topk, dtype=carry, device=alignment.device)
    return result


# --------------------------------------------------------------------------------------------------------------
# Routing agreement (SPEC §9.5, third release)


# ---------------------------------------------------------------------------------------------------- multi-turn
# Router replay over a multi-turn trajectory (NeMo RL #3485): vLLM never forwards a turn's last generated token in
# that turn, so its route is computed only when the next turn prefills it; aligning each turn on its own and
# concatenating replays the default route for it.  stitch_turn_routes takes each token's route from the first turn
# whose routes hold it.


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
    tokens).  Each turn's routes are aligned as :func:`pad_and_align_routed_expert_indices` aligns them in strict
    mode (``routes_start`` per turn, or one for all:
    vLLM's ``routed_experts_prompt_start``, so a turn may return only its new rows); then row ``t`` takes the route
    of the first turn that holds one for token ``t``, so turn ``k + 1``'s prefill supplies the route of turn
    ``k``'s last generated token.  Rows ``[N - 1, padded_length)`` hold the default route ``arange(K)`` (the final
    token and padding), as in pad-and-align.  Routes of the same token from two turns are not compared; the first
    wins.

    Guarantee: every row before the trajectory's last token holds a route some turn returned; none is ``-1`` or a
    default route put there for a turn's missing final token.

    Raises:
        ContractTypeError: ``turns`` is not a sequence of pairs, ids are not ints, a length is not an int.
        RouteStitchError: (a ``RoutedExpertsError``) a turn without ids or routes, a prompt that does not extend
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


class RoutingAgreement(BaseModel):
    """How often the learner's router chose the engine's experts (SPEC §9.5); frozen and picklable.

    A (token, layer) *pair* counts when the token is selected by the mask and neither input holds a sentinel row
    for it.  Fractions are ``None`` without counted pairs.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pairs: int = Field(description="Counted (token, layer) pairs.")
    sentinel_pairs: int = Field(description="Selected pairs left out: a -1 sentinel row in either input.")
    agreement: float | None = Field(
        description="Fraction of counted pairs whose K experts are equal as sets."
    )
    exact_order_agreement: float | None = Field(description="Fraction whose K ids are equal in order.")
    per_layer: tuple[float | None, ...] = Field(description="agreement per layer (None: no counted pair).")
    first_disagreement: tuple[int, int, int] | None = Field(
        description="(b, t, layer) of the first counted pair whose sets differ, in row-major order (b = 0 for "
        "[T, L, K] inputs)."
    )

    def summary(self) -> str:
        """The figures an operator reads first, in one line (``str(agreement)``; ``repr`` keeps every field).

        >>> print(RoutingAgreement(pairs=4, sentinel_pairs=1, agreement=0.75, exact_order_agreement=0.5,
        ...                        per_layer=(1.0, 0.5), first_disagreement=(0, 1, 1)))  # doctest: +NORMALIZE_WHITESPACE
        routing agreement over 4 pairs (1 sentinel pair left out): 0.75 as sets, 0.5 in order, per layer
        (1, 0.5), first disagreement at (b, t, layer) (0, 1, 1)
        """
        if self.pairs == 0 or self.agreement is None:
            return f"routing agreement: no counted pair ({self.sentinel_pairs} sentinel pairs left out)"

        def figure(value: float | None) -> str:
            return "none" if value is None else f"{value:.6g}"

        sentinels = f"{self.sentinel_pairs} sentinel pair{'s' * (self.sentinel_pairs != 1)} left out"
        layers = ", ".join(figure(value) for value in self.per_layer)
        where = "none" if self.first_disagreement is None else str(self.first_disagreement)
        return (
            f"routing agreement over {self.pairs} pair{'s' * (self.pairs != 1)} ({sentinels}): "
            f"{figure(self.agreement)} as sets, {figure(self.exact_order_agreement)} in order, per layer "
            f"({layers}), first disagreement at (b, t, layer) {where}"
        )

    def __str__(self) -> str:
        return self.summary()


def _route_tensor(value: object, argument: str, device: torch.device | None) -> torch.Tensor:
    """Integer ids of ``value`` (a tensor or numpy array) as int64 on ``device``, checked to be >= -1."""
    if not isinstance(value, torch.Tensor | np.ndarray):
        raise ContractTypeError.for_value(
            argument, "an integer torch tensor or numpy array of expert ids", value
        )
    context = _Context(f" ({argument})")
    source = _integer_source(value, context)
    if (source.numel() if isinstance(source, torch.Tensor) else source.size) > 0:
        low, high = _exact_bounds(source, True, True)
        if low is not None and low < R3_MISSING_ROUTE_SENTINEL:
            raise context.error(
                f"{argument} holds expert id {render(low)}, below the missing-route sentinel -1",
                min_id=low,
            )
        if high is not None and high > int(torch.iinfo(torch.int64).max):
            raise context.error(f"{argument} holds expert id {render(high)}, beyond int64", max_id=high)
    if isinstance(source, np.ndarray):
        source = torch.from_numpy(np.ascontiguousarray(source).astype(np.int64))  # a new array: never shared
    return source.to(device=device, dtype=torch.int64)


def _route_rows(name: str, routes: torch.Tensor, ordered: torch.Tensor) -> torch.Tensor:
    """Which ``[B, T, L]`` rows of ``routes`` are sentinel rows; a row mixing -1 with ids, or naming one expert
    twice, raises.  ``ordered`` is ``routes`` sorted along K."""
    sentinel = routes == R3_MISSING_ROUTE_SENTINEL
    full = sentinel.all(dim=-1)
    mixed = sentinel.any(dim=-1) & ~full
    if bool(mixed.any()):
        b, t, layer = _row_position(mixed)
        raise RoutedExpertsError(
            f"{name}[{b}, {t}, {layer}] = {render(routes[b, t, layer].tolist())} mixes the -1 sentinel with expert "
            "ids; a route row is either all -1 (no route captured) or K expert ids"
        )
    repeated = (ordered[..., 1:] == ordered[..., :-1]).any(dim=-1) & ~full
    if bool(repeated.any()):
        b, t, layer = _row_position(repeated)
        raise RoutedExpertsError(
            f"{name}[{b}, {t}, {layer}] = {render(routes[b, t, layer].tolist())} names an expert twice; a router "
            "picks K distinct experts per token and layer, so the row is corrupt (or not top-k indices)"
        )
    return full


def _row_position(flags: torch.Tensor) -> tuple[int, int, int]:
    """``(b, t, layer)`` of the first True of a bool ``[B, T, L]`` tensor that holds one."""
    flat = int(flags.reshape(-1).to(torch.uint8).argmax())
    _, tokens, layers = (int(size) for size in flags.shape)
    b, rest = divmod(flat, tokens * layers)
    t, layer = divmod(rest, layers)
    return b, t, layer


def _token_mask(mask: object, leading: tuple[int, int], four_d: bool, device: torch.device) -> torch.Tensor:
    """The token mask as bool ``[B, T]``: ``[T]`` (``[B, T]`` for 4-D routes) of 0/1 values."""
    if mask is None:
        return torch.ones(leading, dtype=torch.bool, device=device)
    if isinstance(mask, np.ndarray):
        if mask.dtype.kind not in ("b", "i", "u", "f") or mask.dtype.name == "float128":
            raise RoutedExpertsError(f"mask must hold 0/1 values, got dtype {render_name(mask.dtype)}")
        mask = torch.from_numpy(
            np.ascontiguousarray(mask, dtype=np.float64 if mask.dtype.kind == "f" else None)
        )
    if not isinstance(mask, torch.Tensor):
        raise ContractTypeError.for_value("mask", "a 0/1 torch tensor or numpy array, or None", mask)
    if mask.dtype.is_complex or mask.layout != torch.strided or mask.device.type == "meta":
        raise RoutedExpertsError(f"mask must be a dense 0/1 tensor, got dtype {render_name(mask.dtype)}")
    expected = leading if four_d else leading[1:]
    if tuple(mask.shape) != expected:
        raise RoutedExpertsError(
            f"mask must have shape {render(expected)} (the routes' leading dimensions), got {render(tuple(mask.shape))}"
        )
    mask = mask.to(device)
    if mask.dtype in (torch.uint16, torch.uint32, torch.uint64):
        mask = mask.to(torch.int64)
    if mask.dtype != torch.bool:
        binary = (mask == 0) | (mask == 1)
        if not bool(binary.all()):
            raise RoutedExpertsError("mask must hold only 0 and 1 (bool, integer or floating)")
        mask = mask != 0
    return mask if four_d else mask.unsqueeze(0)


def routing_agreement(
    engine_routes: torch.Tensor | np.ndarray,
    learner_routes: torch.Tensor | np.ndarray,
    *,
    mask: torch.Tensor | np.ndarray | None = None,
) -> RoutingAgreement:
    """How often the learner's router picks the experts the engine used, per (token, layer) (SPEC §9.5).

    ``engine_routes`` (what vLLM returned, e.g. aligned by :func:`pad_and_align_routed_expert_indices`) and
    ``learner_routes`` (the learner's own top-k router indices) are integer tensors or numpy arrays of one shape,
    ``[T, L, K]`` or ``[B, T, L, K]``, holding expert ids >= 0 or the -1 sentinel (whole rows); ``mask`` (``[T]``
    or ``[B, T]``, 0/1) selects tokens, default all.  A (token, layer) pair counts when its row is no sentinel
    row in either input.  The K ids of a row are distinct (a router picks K different experts), so ``agreement``
    compares them as sets, and ``exact_order_agreement`` as given.  The work runs on the
    learner's device (the engine's when only it is a tensor); numpy inputs are moved there.

    Raises:
        ContractTypeError: an input that is no tensor or numpy array.
        RoutedExpertsError: shapes that differ or are not 3-D/4-D, K = 0 (no expert per row: nothing to compare,
            which must not read as agreement or as missing routes), a non-integer dtype, an id below -1, a row
            that mixes -1 with expert ids or names one expert twice, or a mask of the wrong shape or with values
            other than 0/1.

    >>> same = torch.tensor([[[0, 1]], [[2, 3]]])
    >>> routing_agreement(same, torch.tensor([[[1, 0]], [[2, 1]]])).agreement
    0.5
    """
    device = next(
        (value.device for value in (learner_routes, engine_routes) if isinstance(value, torch.Tensor)),
        torch.device("cpu"),
    )
    engine = _route_tensor(engine_routes, "engine_routes", device)
    learner = _route_tensor(learner_routes, "learner_routes", device)
    if engine.ndim not in (3, 4) or tuple(engine.shape) != tuple(learner.shape):
        raise RoutedExpertsError(
            "engine_routes and learner_routes must have one shape, [T, L, K] or [B, T, L, K]; got "
            f"{render(tuple(engine.shape))} and {render(tuple(learner.shape))}"
        )
    if int(engine.shape[-1]) == 0:
        raise RoutedExpertsError(
            f"engine_routes and learner_routes have K = 0 experts per token and layer (shape "
            f"{render(tuple(engine.shape))}): every row would be an empty route, counted as neither agreeing nor "
            "missing; pass the top-k expert ids (K >= 1)"
        )
    four_d = engine.ndim == 4
    if not four_d:
        engine, learner = engine.unsqueeze(0), learner.unsqueeze(0)
    rows, tokens, layers = (int(size) for size in engine.shape[:3])
    selected = _token_mask(mask, (rows, tokens), four_d, device)
    engine_sorted, learner_sorted = engine.sort(dim=-1).values, learner.sort(dim=-1).values
    sentinel = _route_rows("engine_routes", engine, engine_sorted) | _route_rows(
        "learner_routes", learner, learner_sorted
    )
    chosen = selected.unsqueeze(-1).expand(rows, tokens, layers)
    counted = chosen & ~sentinel
    same_set = (engine_sorted == learner_sorted).all(dim=-1)  # distinct ids: equal sorted rows are equal sets
    same_order = (engine == learner).all(dim=-1)
    pairs = int(counted.sum())
    per_layer_pairs = counted.sum(dim=(0, 1)).tolist()
    per_layer_same = (same_set & counted).sum(dim=(0, 1)).tolist()
    differs = counted & ~same_set
    first = _row_position(differs) if bool(differs.any()) else None
    return RoutingAgreement(
        pairs=pairs,
        sentinel_pairs=int((chosen & sentinel).sum()),
        agreement=int((same_set & counted).sum()) / pairs if pairs else None,
        exact_order_agreement=int((same_order & counted).sum()) / pairs if pairs else None,
        per_layer=tuple(
            same / count if count else None
            for same, count in zip(per_layer_same, per_layer_pairs, strict=True)
        ),
        first_disagreement=first,
    )
