"""Properties of ``splice_prefix_tokens`` (SPEC §7 invariants 1, 2 and 3)."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rl_contracts.errors import ContractError, ContractTypeError, SpliceError
from rl_contracts.splice import (
    PrefixSplice,
    replace_prefix_tokens,
    resolve_terminator_token_ids,
    splice_prefix_tokens,
)
from rl_contracts.testing import assert_contract_error
from rl_contracts.testing.strategies import (
    TERMINATOR,
    SpliceCase,
    TerminatorDeclaration,
    hostile_token_ids,
    splice_cases,
    splice_token_inputs,
    terminator_declarations,
)


def _check_coordinates(
    model: list[int], template_prefix: list[int], template: list[int], terminators: set[int]
) -> None:
    result = splice_prefix_tokens(
        model_prefix_token_ids=model,
        template_prefix_token_ids=template_prefix,
        template_token_ids=template,
        terminator_ids=terminators,
    )
    final, cut_end, cut_start = result.token_ids, result.model_cut_end, result.template_cut_start
    assert cut_end == len(model)
    assert final == model + template[cut_start:]
    needed = sum(token in terminators for token in template_prefix)
    if not model:
        assert (cut_end, cut_start, final) == (0, 0, template)
    elif model[-1] in terminators:
        assert template[cut_start - 1] in terminators
        assert sum(token in terminators for token in template[:cut_start]) == needed
    else:
        assert template[cut_start] in terminators
        assert final[cut_end] in terminators
        assert sum(token in terminators for token in template[: cut_start + 1]) == needed
    assert isinstance(result, PrefixSplice)
    assert PrefixSplice.model_validate(result.model_dump()) == result


@given(splice_token_inputs())
def test_splice_coordinates(inputs: tuple[list[int], list[int], list[int]]) -> None:
    """Invariant 3: c == len(M), F == M + T[t:], and the terminator at the boundary is where it must be."""
    model, template_prefix, template = inputs
    _check_coordinates(model, template_prefix, template, {TERMINATOR})


@given(splice_cases())
def test_splice_coordinates_with_media_and_terminator_sets(case: SpliceCase) -> None:
    """Invariant 3 on chat-shaped prompts whose model may stop on any member of a terminator set."""
    _check_coordinates(
        case.model_prefix_token_ids,
        case.template_prefix_token_ids,
        case.template_token_ids,
        set(case.terminators),
    )


@given(splice_token_inputs())
def test_splice_is_pure_and_wrapper_agrees(inputs: tuple[list[int], list[int], list[int]]) -> None:
    """Invariant 2: the inputs are unchanged, and replace_prefix_tokens returns a new equal list."""
    before = copy.deepcopy(inputs)
    model, template_prefix, template = inputs
    result = splice_prefix_tokens(
        model_prefix_token_ids=model,
        template_prefix_token_ids=template_prefix,
        template_token_ids=template,
        eos_token_id=2,
    )
    replaced = replace_prefix_tokens(None, model, template_prefix, template, eos_token_id=2)
    assert replaced == result.token_ids
    assert replaced is not result.token_ids
    assert inputs == before
    assert result.token_ids is not model
    assert result.token_ids is not template


_BUILTINS: dict[type[ContractError], tuple[type[Exception], ...]] = {
    ContractTypeError: (TypeError,),
    SpliceError: (ValueError, AssertionError),
}


def _check_error(error: ContractError) -> None:
    assert all(isinstance(error, base) for base in _BUILTINS[type(error)])
    assert_contract_error(error)


_GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=3),
    st.lists(st.one_of(st.integers(0, 4), st.booleans(), st.none()), max_size=4),
    st.sets(st.integers(-2, 4), max_size=3),
    st.dictionaries(st.integers(0, 3), st.integers(0, 3), max_size=2),
)


def _raise(ids: Any) -> Any:
    raise RuntimeError("decode failed")


_TOKENIZERS = st.one_of(
    st.none(),
    _GARBAGE,
    st.builds(
        SimpleNamespace,
        eos_token_id=st.one_of(_GARBAGE, st.integers(0, 4)),
        decode=st.sampled_from([_raise, lambda ids: 5, lambda ids: "ok" * 2000, "not callable", None]),
    ),
)


@given(
    tokenizer=_TOKENIZERS,
    model=hostile_token_ids(),
    template_prefix=hostile_token_ids(),
    template=hostile_token_ids(),
    eos=st.one_of(st.none(), _GARBAGE, st.integers(0, 4)),
    terminators=st.one_of(st.none(), _GARBAGE),
)
def test_hostile_arguments_raise_only_contract_errors(
    tokenizer: Any, model: Any, template_prefix: Any, template: Any, eos: Any, terminators: Any
) -> None:
    """Invariant 1: for arbitrary arguments the splice returns a PrefixSplice or raises a bounded, picklable ContractError."""
    try:
        result = splice_prefix_tokens(
            tokenizer=tokenizer,
            model_prefix_token_ids=model,
            template_prefix_token_ids=template_prefix,
            template_token_ids=template,
            eos_token_id=eos,
            terminator_ids=terminators,
        )
    except (ContractTypeError, SpliceError) as error:
        _check_error(error)
    else:
        assert isinstance(result, PrefixSplice)
        assert 0 <= result.model_cut_end <= len(result.token_ids)


@given(terminator_declarations())
def test_resolved_terminators_are_the_union_of_both_sources(declaration: TerminatorDeclaration) -> None:
    """resolve_terminator_token_ids gives the union of the tokenizer EOS and the config's eos_token_id, as ints."""
    resolved = resolve_terminator_token_ids(declaration.tokenizer, declaration.generation_config)
    assert resolved == declaration.terminators
    assert all(type(i) is int for i in resolved)


@given(terminator_declarations(), st.data())
def test_a_model_stopping_on_any_declared_terminator_splices(
    declaration: TerminatorDeclaration, data: st.DataObject
) -> None:
    """With the resolved set, a model prefix ending on any member keeps that token and resumes after the boundary."""
    resolved = resolve_terminator_token_ids(declaration.tokenizer, declaration.generation_config)
    if not resolved:
        return
    stop = data.draw(st.sampled_from(sorted(resolved)))
    rendered = data.draw(st.sampled_from(sorted(resolved)))
    splice = splice_prefix_tokens(
        model_prefix_token_ids=[40, 41, stop],
        template_prefix_token_ids=[40, 42, rendered],
        template_token_ids=[40, 42, rendered, 8, 9],
        terminator_ids=resolved,
    )
    assert (splice.token_ids, splice.model_cut_end, splice.template_cut_start) == ([40, 41, stop, 8, 9], 3, 3)
