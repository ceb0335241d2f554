"""The rule registry and the ``--select``/``--ignore`` filter over finding codes
(``rl_contracts.config.rules.registry``)."""

from __future__ import annotations

import importlib

import pytest

from rl_contracts.config.finding import Finding
from rl_contracts.config.rule import CHECK_ATTRIBUTE, Check, Rule, checks
from rl_contracts.config.rules.preflight import preflight
from rl_contracts.config.rules.preflight.engine import PREFLIGHT_CHECKS
from rl_contracts.config.rules.registry import (
    CHECKS,
    FAMILIES,
    check_patterns,
    checks_of,
    code_selected,
    rule_for,
)
from rl_contracts.config.rules.registry import RULES as CODES
from rl_contracts.errors import ConfigContractError, ContractTypeError


@pytest.mark.parametrize(
    ("code", "select", "ignore", "expected"),
    [
        ("P7", (), (), True),
        ("P7", ("P",), (), True),
        ("P7", ("P7",), (), True),
        ("P17", ("P1",), (), False),
        ("P1", ("P1",), (), True),
        ("P10", ("P10",), (), True),
        ("P10", ("P1",), (), False),
        ("C10", ("C1",), (), False),
        ("W1", ("P",), (), False),
        ("P7", ("P",), ("P7",), False),
        ("P7", (), ("P",), False),
        ("P17", (), ("P1",), True),
        ("K1", ("K", "V"), (), True),
    ],
)
def test_a_pattern_is_a_whole_code_or_a_family_prefix(
    code: str, select: tuple[str, ...], ignore: tuple[str, ...], expected: bool
) -> None:
    """A pattern ending in a digit matches only that code (P1 is not P10-P19); a letter prefix a whole family."""
    assert code_selected(code, select=select, ignore=ignore) is expected


def test_every_catalogue_code_selects_itself_and_only_itself() -> None:
    """Each code of the catalogue, used as a pattern, selects exactly one catalogue code: itself."""
    names = [entry.code for entry in CODES]
    assert len(names) == len(set(names))
    for name in names:
        assert [other for other in names if code_selected(other, select=[name])] == [name]


# --- the registry -----------------------------------------------------------------------------------------------


def test_every_code_is_registered_once_in_family_then_number_order() -> None:
    """The registry holds each code once, sorted by family (V, C, R, K, P, W, N) then number."""
    codes = [rule.code for rule in CODES]
    assert len(codes) == len(set(codes))
    assert [rule.order for rule in CODES] == sorted(rule.order for rule in CODES)
    assert [family for family in FAMILIES if any(rule.family == family for rule in CODES)] == list(FAMILIES)


def test_rule_names_are_unique_and_kebab_case() -> None:
    """Every rule has its own ruff-style kebab-case name."""
    names = [rule.name for rule in CODES]
    assert len(names) == len(set(names))
    assert all(name == name.lower() and " " not in name and "_" not in name for name in names)


def test_a_check_lives_beside_the_records_it_declares() -> None:
    """Each check's module holds the very records the check declares, and its location names that module."""
    for check in CHECKS:
        module = importlib.import_module(check.function.__module__)
        assert all(getattr(module, rule.code) is rule for rule in check.rules), check.location
        assert check.location == f"{module.__name__.replace('.', '/')}.py:{check.function.__qualname__}"


def test_every_declared_rule_is_in_the_table_with_a_check() -> None:
    """A Rule record anywhere in the config package is in the table, so it has a check (none is forgotten)."""
    import pkgutil

    import rl_contracts.config

    declared = {
        value.code
        for info in pkgutil.walk_packages(rl_contracts.config.__path__, "rl_contracts.config.")
        for value in vars(importlib.import_module(info.name)).values()
        if isinstance(value, Rule)
    }
    assert declared == {rule.code for rule in CODES}
    assert all(checks_of(rule.code) for rule in CODES)


def test_checks_of_names_where_a_rule_is_checked() -> None:
    """``checks_of`` gives the function that checks a code, and nothing for an unknown code."""
    (p29,) = checks_of("P29")
    assert p29.location == "rl_contracts/config/rules/preflight/loss.py:check_loss_options"
    assert checks_of("P99") == ()


def test_preflight_runs_the_checks_that_name_entrypoints() -> None:
    """Every preflight check of the table names its entrypoints; no other check does."""
    assert {check.location for check in CHECKS if check.entries is not None} == {
        check.location for check in PREFLIGHT_CHECKS
    }
    assert all(check.entries for check in PREFLIGHT_CHECKS)


def test_checks_records_the_rules_on_the_function() -> None:
    """``@checks(RULE)`` leaves the function callable as before and records its rules and entrypoints."""
    rule = Rule("P98", "an-example-rule", summary="s", reference="never")

    @checks(rule, entries={"grpo"})
    def example(value: int) -> list[Finding]:
        return [Finding(code="P98", path="a", value=value, message="m")]

    assert example(3)[0].value == 3
    record: object = vars(example)[CHECK_ATTRIBUTE]
    assert record == Check((rule,), example, frozenset({"grpo"}))


def test_checks_needs_a_rule() -> None:
    """``@checks()`` without a record is refused at declaration."""
    with pytest.raises(ConfigContractError):
        checks()


def test_rule_for_finds_a_record_and_rejects_an_unknown_code() -> None:
    """``rule_for`` returns the record of a known code and None for any other."""
    found = rule_for("P19")
    assert found is not None
    assert (found.code, found.family, found.number) == ("P19", "P", 19)
    assert rule_for("P99") is None
    assert rule_for("p19") is None


@pytest.mark.parametrize(
    ("code", "name"), [("P7x", "a-name"), ("Z1", "a-name"), ("P0", "a-name"), ("P7", "Bad_Name")]
)
def test_a_malformed_rule_record_is_rejected(code: str, name: str) -> None:
    """A code outside the families (or not a number from 1) and a name that is not kebab-case fail at declaration."""
    with pytest.raises(ConfigContractError):
        Rule(code, name, summary="s", reference="never")


def test_the_old_preflight_name_still_imports_and_warns() -> None:
    """``from rl_contracts.config import preflight`` (README's old import) gives the new module with a
    DeprecationWarning naming it."""
    with pytest.warns(DeprecationWarning, match="rl_contracts.config.rules.preflight"):
        from rl_contracts.config import preflight as old
    assert old.preflight is preflight


@pytest.mark.parametrize("pattern", ["Q9", "", "p", "P99", "p7", " P7", "PW", "P-", "V0"])
def test_check_patterns_refuses_what_names_no_code(pattern: str) -> None:
    """A pattern that is empty, lowercase, unknown or not a whole family is a ConfigContractError naming it."""
    with pytest.raises(ConfigContractError) as caught:
        check_patterns(["P7", pattern], "select")
    assert caught.value.path == "select"
    assert caught.value.value == repr(pattern)
    assert f"unknown code {pattern!r}" in caught.value.message


@pytest.mark.parametrize("patterns", [("P7", "W", "N1"), tuple(FAMILIES), tuple(rule.code for rule in CODES)])
def test_check_patterns_keeps_codes_and_families(patterns: tuple[str, ...]) -> None:
    """Every code of the registry and every family is accepted and returned in order."""
    assert check_patterns(list(patterns), "ignore") == patterns


@pytest.mark.parametrize("patterns", ["P7", b"P7", [7], None])
def test_check_patterns_needs_a_collection_of_strings(patterns: object) -> None:
    """A bare string, bytes, None or a non-string item is a ContractTypeError naming the argument."""
    with pytest.raises(ContractTypeError) as caught:
        check_patterns(patterns, "ignore")
    assert str(caught.value.argument).startswith("ignore")
