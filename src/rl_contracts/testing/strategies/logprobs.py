"""Hypothesis strategies for the training–inference agreement inputs (SPEC §9): logprob batches and route pairs.

A valid batch holds vLLM's logprobs ``g`` and the learner's ``l`` of the same tokens, agreeing within a chosen
``max_abs_diff``, with a 0/1 mask whose uncounted positions may hold junk (NaN, infinities, positive values) that
must change nothing.  Each malformation of §9.1 is one edit of a valid batch, recorded with the error class, the
argument and the first offending ``[b, t]`` it must produce.  Route pairs are an engine's and a learner's expert
ids with sentinel rows, rows permuted within K, and rows changed, recorded so that the expected agreement is known.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, Literal, get_args

import numpy as np
import torch
from hypothesis import strategies as st

from rl_contracts.errors import ContractError, ContractTypeError, LogprobContractError

__all__ = [
    "LOGPROB_MALFORMATIONS",
    "LogprobBatch",
    "LogprobMalformation",
    "MalformedLogprobBatch",
    "RoutePair",
    "logprob_batches",
    "malformed_logprob_batches",
    "route_pairs",
]

_FLOAT_DTYPES = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}
_MASK_DTYPES = (torch.bool, torch.uint8, torch.int64, torch.float32)
_JUNK = (math.nan, math.inf, -math.inf, 0.5, 7.0)
"""Values a padding position may hold: none of them may change a result."""


@dataclasses.dataclass(frozen=True)
class LogprobBatch:
    """A valid batch: ``generation`` (g) and ``learner`` (l) logprobs, a ``mask`` (``None``: all counted).

    At counted tokens g is finite and <= 0, l <= 0, and |l - g| <= ``max_abs_diff`` (before rounding to
    ``dtype``).  Arrays are torch tensors or numpy arrays (``container``) of shape ``[B, T]`` or ``[T]``.
    ``counted`` is the bool ``[B, T]`` numpy mask of counted tokens (``[1, T]`` for 1-D inputs).
    """

    generation: Any
    learner: Any
    mask: Any
    max_abs_diff: float
    dtype: str
    container: Literal["torch", "numpy"]
    counted: np.ndarray[Any, Any]


def _wrap(array: np.ndarray[Any, Any], dtype: str, container: str) -> Any:
    """``array`` (float64 or a mask) as a tensor of ``dtype`` or a numpy array (bfloat16: tensors only)."""
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if dtype in _FLOAT_DTYPES:
        tensor = tensor.to(_FLOAT_DTYPES[dtype])
    if container == "numpy" and tensor.dtype != torch.bfloat16:
        return tensor.numpy()
    return tensor


@st.composite
def logprob_batches(
    draw: st.DrawFn,
    *,
    max_abs_diff: float = 0.5,
    max_sequences: int = 5,
    max_tokens: int = 12,
    min_counted: int = 0,
    dtypes: Sequence[str] = ("float32", "float64"),
    containers: Sequence[Literal["torch", "numpy"]] = ("torch", "numpy"),
    junk_at_padding: bool = True,
) -> LogprobBatch:
    """Valid batches of 1 to ``max_sequences`` sequences of 1 to ``max_tokens`` tokens, agreeing within
    ``max_abs_diff`` (0 gives equal logprobs), with at least ``min_counted`` counted tokens.

    g is drawn in [-20, 0] (exact zeros included), l = min(g + δ, 0) with |δ| <= ``max_abs_diff``.  The mask is
    ``None``, or 0/1 in one of bool, uint8, int64 or float32; uncounted positions of g and l hold junk from
    ``_JUNK`` when ``junk_at_padding``.  ``[T]`` inputs are drawn for single sequences.  For invariants 1-3 of
    SPEC §9.6 (identities, bounds, indifference to padding, permutation and dtype).
    """
    rows = draw(st.integers(1, max_sequences))
    columns = draw(st.integers(1, max_tokens))
    size = rows * columns
    values = st.one_of(st.just(0.0), st.floats(-20.0, 0.0, allow_nan=False))
    g = np.array(draw(st.lists(values, min_size=size, max_size=size)), dtype=np.float64).reshape(
        rows, columns
    )
    deltas = st.floats(-max_abs_diff, max_abs_diff, allow_nan=False) if max_abs_diff > 0 else st.just(0.0)
    delta = np.array(draw(st.lists(deltas, min_size=size, max_size=size)), dtype=np.float64).reshape(
        rows, columns
    )
    lp = np.minimum(g + delta, 0.0)
    use_mask = draw(st.booleans())
    counted = np.ones((rows, columns), dtype=bool)
    if use_mask:
        counted = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))).reshape(rows, columns)
    if int(counted.sum()) < min_counted:
        counted[:] = True
    dtype = draw(st.sampled_from(list(dtypes)))
    container = draw(st.sampled_from(list(containers)))
    if junk_at_padding and use_mask:
        for b, t in zip(*np.nonzero(~counted), strict=True):
            g[b, t] = draw(st.sampled_from(_JUNK))
            lp[b, t] = draw(st.sampled_from(_JUNK))
    mask: Any = None
    if use_mask:
        mask_dtype = draw(st.sampled_from(_MASK_DTYPES))
        mask_tensor = torch.from_numpy(counted.copy()).to(mask_dtype)
        mask = mask_tensor.numpy() if container == "numpy" else mask_tensor
    one_dimensional = rows == 1 and draw(st.booleans())
    gen, learn = _wrap(g, dtype, container), _wrap(lp, dtype, container)
    if one_dimensional:
        gen, learn = gen[0], learn[0]
        mask = None if mask is None else mask[0]
    return LogprobBatch(gen, learn, mask, max_abs_diff, dtype, container, counted)


LogprobMalformation = Literal[
    "not_an_array",
    "integer_dtype",
    "three_dimensions",
    "shape_mismatch",
    "mask_shape",
    "mask_value",
    "generation_nan",
    "generation_infinite",
    "generation_positive",
    "learner_nan",
    "learner_plus_inf",
    "learner_positive",
    "learner_minus_inf",
]
LOGPROB_MALFORMATIONS: tuple[LogprobMalformation, ...] = get_args(LogprobMalformation)
"""Every malformation of SPEC §9.1 that :func:`malformed_logprob_batches` plants."""


@dataclasses.dataclass(frozen=True)
class MalformedLogprobBatch:
    """A batch broken once, and what the agreement functions must raise for it.

    ``error`` is the class (``ContractTypeError`` or ``LogprobContractError``), ``argument`` the input it names,
    ``position`` the first offending ``[b, t]`` for a bad value (``None`` for a type or shape fault).
    """

    generation: Any
    learner: Any
    mask: Any
    malformation: LogprobMalformation
    error: type[ContractError]
    argument: str
    position: tuple[int, int] | None


_VALUE_FAULTS: dict[str, tuple[str, tuple[float, ...]]] = {
    "generation_nan": ("generation_logprobs", (math.nan,)),
    "generation_infinite": ("generation_logprobs", (math.inf, -math.inf)),
    "generation_positive": ("generation_logprobs", (0.5, 3.0)),
    "learner_nan": ("learner_logprobs", (math.nan,)),
    "learner_plus_inf": ("learner_logprobs", (math.inf,)),
    "learner_positive": ("learner_logprobs", (0.5, 3.0)),
    "learner_minus_inf": ("learner_logprobs", (-math.inf,)),
}


@st.composite
def malformed_logprob_batches(
    draw: st.DrawFn, *, malformations: Sequence[LogprobMalformation] = LOGPROB_MALFORMATIONS
) -> MalformedLogprobBatch:
    """One valid ``[B, T]`` float32/float64 tensor batch (junk at padding) broken once by a drawn malformation:

    - ``not_an_array``: a nested list for one input; ``integer_dtype``: an int64 one (both ``ContractTypeError``);
    - ``three_dimensions``: both inputs ``[1, B, T]``; ``shape_mismatch``: the learner's last column dropped;
      ``mask_shape``: the mask's last column dropped;
    - ``mask_value``: a counted position's mask value set to 0.5 (or 2);
    - ``generation_*`` / ``learner_*``: a counted position of g or l set to NaN, ±inf, a positive value or (l
      only) -inf, every other counted value valid, so the error names exactly that ``[b, t]``.

    The default ``neg_inf="error"`` and ``positive_tolerance=1e-4`` apply.
    """
    batch = draw(logprob_batches(min_counted=1, containers=("torch",)))
    g, lp = batch.generation, batch.learner
    if g.ndim == 1:
        g, lp = g[None], lp[None]
    counted = torch.from_numpy(batch.counted.copy())
    mask = counted.float()
    malformation = draw(st.sampled_from(list(malformations)))
    if malformation == "not_an_array":
        argument = draw(st.sampled_from(["generation_logprobs", "learner_logprobs"]))
        as_list = (g if argument == "generation_logprobs" else lp).tolist()
        parts = (as_list, lp) if argument == "generation_logprobs" else (g, as_list)
        return MalformedLogprobBatch(*parts, mask, malformation, ContractTypeError, argument, None)
    if malformation == "integer_dtype":
        return MalformedLogprobBatch(
            g, lp.to(torch.int64), mask, malformation, ContractTypeError, "learner_logprobs", None
        )
    if malformation == "three_dimensions":
        return MalformedLogprobBatch(
            g[None], lp[None], None, malformation, LogprobContractError, "generation_logprobs", None
        )
    if malformation == "shape_mismatch":
        return MalformedLogprobBatch(
            g, lp[:, :-1], mask, malformation, LogprobContractError, "learner_logprobs", None
        )
    if malformation == "mask_shape":
        return MalformedLogprobBatch(g, lp, mask[:, :-1], malformation, LogprobContractError, "mask", None)
    spots = [(int(b), int(t)) for b, t in zip(*np.nonzero(batch.counted), strict=True)]
    b, t = draw(st.sampled_from(spots))
    if malformation == "mask_value":
        mask = mask.clone()
        mask[b, t] = draw(st.sampled_from([0.5, 2.0]))
        return MalformedLogprobBatch(g, lp, mask, malformation, LogprobContractError, "mask", (b, t))
    argument, bad_values = _VALUE_FAULTS[malformation]
    g, lp = g.clone(), lp.clone()
    target = g if argument == "generation_logprobs" else lp
    target[b, t] = draw(st.sampled_from(bad_values))
    return MalformedLogprobBatch(g, lp, mask, malformation, LogprobContractError, argument, (b, t))


@dataclasses.dataclass(frozen=True)
class RoutePair:
    """An engine's and a learner's routes of one shape (``[T, L, K]`` or ``[B, T, L, K]``) and a token mask.

    ``changed`` holds the ``(b, t, layer)`` rows whose expert sets differ, ``permuted`` the rows equal as sets
    but in another order, ``sentinel`` the rows that are all -1 in at least one input (``b`` is 0 for 3-D
    routes); ``counted`` is the bool ``[B, T]`` numpy token mask (all True when ``mask`` is ``None``).
    """

    engine: Any
    learner: Any
    mask: Any
    changed: frozenset[tuple[int, int, int]]
    permuted: frozenset[tuple[int, int, int]]
    sentinel: frozenset[tuple[int, int, int]]
    counted: np.ndarray[Any, Any]


@st.composite
def route_pairs(
    draw: st.DrawFn,
    *,
    max_sequences: int = 3,
    max_tokens: int = 8,
    max_layers: int = 3,
    num_experts: int = 8,
    max_top_k: int = 3,
) -> RoutePair:
    """Engine routes of distinct experts per row (ids in ``[0, num_experts)``), and learner routes equal to them
    except rows permuted within K, rows changed to another expert set, and sentinel rows in either input.

    Inputs are ``[B, T, L, K]`` or ``[T, L, K]`` int64 tensors, or uint8 numpy arrays for the engine as vLLM
    returns them (int8 when a sentinel row needs -1); the mask is ``None`` or a 0/1 ``[B, T]`` (``[T]``) bool
    tensor.  For the routing invariants of SPEC §9.6.
    """
    rows = draw(st.integers(1, max_sequences))
    tokens = draw(st.integers(0, max_tokens))
    layers = draw(st.integers(1, max_layers))
    top_k = draw(st.integers(1, min(max_top_k, num_experts)))
    shape = (rows, tokens, layers)
    engine = np.zeros((*shape, top_k), dtype=np.int64)
    learner = np.zeros_like(engine)
    changed, permuted, sentinel = set(), set(), set()
    for b in range(rows):
        for t in range(tokens):
            for layer in range(layers):
                experts = draw(st.permutations(range(num_experts)))[:top_k]
                engine[b, t, layer] = experts
                kind = draw(st.sampled_from(["same", "same", "permuted", "changed", "sentinel"]))
                own = list(experts)
                if kind == "permuted" and top_k > 1:
                    own = draw(st.permutations(experts))
                    if own != list(experts):
                        permuted.add((b, t, layer))
                elif kind == "changed" and top_k < num_experts:
                    outside = [e for e in range(num_experts) if e not in experts]
                    own[draw(st.integers(0, top_k - 1))] = draw(st.sampled_from(outside))
                    changed.add((b, t, layer))
                elif kind == "sentinel":
                    sentinel.add((b, t, layer))
                    if draw(st.booleans()):
                        own = [-1] * top_k
                    else:
                        engine[b, t, layer] = -1
                learner[b, t, layer] = own
    counted = np.ones((rows, tokens), dtype=bool)
    mask: Any = None
    if draw(st.booleans()):
        counted = np.array(draw(st.lists(st.booleans(), min_size=rows * tokens, max_size=rows * tokens)))
        counted = counted.reshape(rows, tokens)
        mask = torch.from_numpy(counted.copy())
    four_d = rows > 1 or draw(st.booleans())
    engine_out: Any = torch.from_numpy(engine)
    if draw(st.booleans()):
        engine_out = engine.astype(np.int8 if (engine < 0).any() else np.uint8)
    learner_out: Any = torch.from_numpy(learner)
    if not four_d:
        engine_out, learner_out = engine_out[0], learner_out[0]
        mask = None if mask is None else mask[0]
    return RoutePair(
        engine_out,
        learner_out,
        mask,
        frozenset(changed - sentinel),
        frozenset(permuted - sentinel),
        frozenset(sentinel),
        counted,
    )
