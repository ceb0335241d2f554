"""The ``ContractError`` hierarchy and the helpers that keep every message bounded.

Each concrete class also subclasses the built-in the reference raises in the same situation, so existing
``except ValueError`` / ``except RuntimeError`` / ``except AssertionError`` code keeps working.  Errors carry
structured attributes (``None`` when they do not apply), survive a ``pickle`` round-trip, and their message is at
most :data:`MAX_MESSAGE_CHARS` characters whatever the input size (SPEC §0.3, §0.4).

Messages are composed by the private :mod:`rl_contracts._internal.messages`; :data:`MAX_MESSAGE_CHARS` is the bound.
Across Ray, :func:`contract_error` recovers the library error from Ray's ``RayTaskError(X)`` wrapper, and
:meth:`ContractError.details` gives its fields for structured logs (SPEC §0.3, second release).
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # typing_extensions (and the inspect module it loads) is not needed at run time
    from typing_extensions import Self

from ._internal.messages import MAX_MESSAGE_CHARS, MAX_VALUE_CHARS, render, shorten, type_name

__all__ = [
    "MAX_MESSAGE_CHARS",
    "BaselineError",
    "ChatResponseContractError",
    "ConfigContractError",
    "ContractError",
    "ContractTypeError",
    "CounterSnapshotError",
    "EnvelopeError",
    "ForbiddenTokenError",
    "LogprobContractError",
    "LogprobMismatchError",
    "PlaceholderRemapError",
    "PlaceholderTypeError",
    "PromptFormatError",
    "RecipeError",
    "RecipeLoadError",
    "RolloutBatchError",
    "RolloutPromptError",
    "RolloutPromptMismatchError",
    "RolloutWeightVersionError",
    "RouteStitchError",
    "RoutedExpertsError",
    "SamplingParamsError",
    "SpliceError",
    "TokenizerMismatchError",
    "TurnTokenMismatchError",
    "UnsupportedConfigError",
    "WeightVersionError",
    "contract_error",
]

# How many exceptions contract_error inspects at most along the cause links of one exception.
MAX_CAUSE_DEPTH = 32
# details(): how deep containers are converted, how many values at most, and the widest int kept as an int
# (200 decimal digits; json.dumps fails beyond sys.get_int_max_str_digits()).
_DETAILS_DEPTH = 16
_DETAILS_VALUES = 1_000_000
_DETAILS_INT_BITS = int(MAX_VALUE_CHARS * math.log2(10))


class _JsonRecord:
    """Converts attribute values to JSON values for :meth:`ContractError.details`, within a work budget."""

    def __init__(self) -> None:
        self.budget = _DETAILS_VALUES
        self.active: set[int] = set()  # containers on the current path: a cycle is rendered, not followed

    def value(self, value: object, depth: int = 0) -> Any:
        """``value`` as a JSON value (see :meth:`ContractError.details`)."""
        self.budget -= 1
        if value is None:
            return None
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, str):
            return str.__str__(value)  # the text of a str subclass as an exact str
        if isinstance(value, int):
            number = operator.index(value)  # an exact int; an int subclass's own __index__ is not called
            return number if number.bit_length() <= _DETAILS_INT_BITS else render(number)
        if isinstance(value, float):
            real = float.__float__(value)
            return real if math.isfinite(real) else repr(real)
        if self.budget <= 0 or depth >= _DETAILS_DEPTH or id(value) in self.active:
            return render(value)
        self.active.add(id(value))
        try:
            return self._composite(value, depth + 1)
        except Exception:  # a caller-built value whose dump, iteration or __index__ fails: shown bounded
            return render(value)
        finally:
            self.active.discard(id(value))

    def _composite(self, value: object, depth: int) -> Any:
        """A value that is no JSON scalar: a container, a model or dataclass, a numpy scalar, or its repr."""
        cls = type(value)
        if isinstance(value, type):
            return render(value)
        if cls.__module__ == "numpy" and getattr(value, "ndim", None) == 0:  # a numpy scalar or 0-d array
            return self.value(value.item(), depth)  # type: ignore[attr-defined]
        if callable(getattr(cls, "model_dump", None)):  # a pydantic model
            return self.value(value.model_dump(mode="json"), depth)  # type: ignore[attr-defined]
        if dataclasses.is_dataclass(value):
            fields = dataclasses.fields(value)
            return {field.name: self.value(getattr(value, field.name), depth) for field in fields}
        if isinstance(value, Mapping):
            items = value.items()
            return {key if isinstance(key, str) else render(key): self.value(v, depth) for key, v in items}
        if isinstance(value, list | tuple):
            return [self.value(item, depth) for item in value]
        if isinstance(value, set | frozenset):
            return sorted((self.value(item, depth) for item in value), key=repr)
        if hasattr(cls, "__index__"):
            return self.value(operator.index(value), depth)  # type: ignore[arg-type]
        return render(value)


def _rebuild(cls: type[ContractError], message: str, attributes: dict[str, Any]) -> ContractError:
    return cls(message, **attributes)


class ContractError(Exception):
    """Root of every error the library raises; never raised directly.

    ``str(err)`` and ``err.args[0]`` are both the (bounded) message.  Subclasses list their structured
    attributes in the public class tuple ``attribute_names``; an attribute that does not apply is ``None``.
    """

    attribute_names: ClassVar[tuple[str, ...]] = ()
    message: str

    def __init__(self, message: str, **attributes: Any) -> None:
        unknown = set(attributes) - set(self.attribute_names)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no attributes {sorted(unknown)}")
        message = shorten(str(message), MAX_MESSAGE_CHARS)
        super().__init__(message)
        self.message = message
        for name in self.attribute_names:
            setattr(self, name, attributes.get(name))

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, {n: getattr(self, n) for n in self.attribute_names}))

    def details(self) -> dict[str, Any]:
        """The error as a flat record for structured logs: ``{"error", "message", **attributes}``.

        ``error`` is the class name, ``message`` the bounded message, then every name of ``attribute_names`` with
        its value as JSON (``None`` where it does not apply), so ``json.dumps(err.details(), allow_nan=False)``
        always works.  JSON values are unchanged: ``None``, bools, strings, finite floats and ints of at most 200
        digits.  Tuples and lists become lists, pydantic models (the ``ConfigIssue`` models of
        ``RecipeError.issues``) their ``model_dump(mode="json")``, dataclasses (``RecipeError.skipped``) and
        mappings dicts with string keys, sets sorted lists, numpy scalars Python numbers; a non-finite float is its
        ``repr`` (``"nan"``), and anything else, a wider int, nesting beyond 16 levels or a cycle, is its bounded
        ``repr`` (at most 200 characters).  Call it on what :func:`contract_error` returns, not on Ray's wrapper,
        whose class name is ``RayTaskError(X)``.

        Example::

            >>> EnvelopeError("bad prefix", field="prefix").details()
            {'error': 'EnvelopeError', 'message': 'bad prefix', 'field': 'prefix'}
        """
        record: dict[str, Any] = {"error": type(self).__name__, "message": self.message}
        convert = _JsonRecord()
        record.update((name, convert.value(getattr(self, name))) for name in self.attribute_names)
        return record


class ContractTypeError(ContractError, TypeError):
    """An argument of the wrong Python type (a ``str`` where a collection is expected, a bool for an int)."""

    attribute_names: ClassVar[tuple[str, ...]] = ("argument", "expected", "actual")
    argument: str | None
    expected: str | None
    actual: str | None

    @classmethod
    def for_value(cls, argument: str, expected: str, value: object, *, actual: str | None = None) -> Self:
        """The standard error "{argument} must be {expected}, got {actual}" (``actual``: the value's type name)."""
        shown = type_name(value) if actual is None else actual
        return cls(
            f"{argument} must be {expected}, got {shown}", argument=argument, expected=expected, actual=shown
        )


class PlaceholderTypeError(ContractTypeError):
    """A placeholder range that is not a mapping, dataclass instance or ``PlaceholderRange``, or a non-int field."""

    attribute_names: ClassVar[tuple[str, ...]] = (
        "argument",
        "expected",
        "actual",
        "modality",
        "item_index",
        "offset",
        "length",
    )
    modality: str | None
    item_index: int | None
    offset: int | None
    length: int | None


class PlaceholderRemapError(ContractError, ValueError):
    """A placeholder range that is invalid, out of bounds, overlapping, straddling the splice, or not found."""

    attribute_names: ClassVar[tuple[str, ...]] = ("modality", "item_index", "offset", "length")
    modality: str | None
    item_index: int | None
    offset: int | None
    length: int | None


class SpliceError(ContractError, ValueError, AssertionError):
    """A prefix splice that cannot be computed (no terminator, or terminator N not found).

    Also an ``AssertionError`` because the reference raises one here.
    """

    attribute_names: ClassVar[tuple[str, ...]] = ("terminators", "count_needed", "count_seen")
    terminators: tuple[int, ...] | None
    count_needed: int | None
    count_seen: int | None


class RoutedExpertsError(ContractError, ValueError):
    """Route tensors with a bad shape, dtype or id range, or wrong route counts in strict mode."""

    attribute_names: ClassVar[tuple[str, ...]] = (
        "routes",
        "expected",
        "valid_length",
        "padded_length",
        "num_cached_tokens",
        "routes_start",
        "min_id",
        "max_id",
        "dtype_name",
        "limit",
    )
    routes: int | None
    expected: int | None
    valid_length: int | None
    padded_length: int | None
    num_cached_tokens: int | None
    routes_start: int | None
    min_id: int | None
    max_id: int | None
    dtype_name: str | None
    limit: int | None


class RouteStitchError(RoutedExpertsError):
    """Per-turn routes that cannot be stitched into one trajectory for router replay: ``turn`` is the turn at
    fault (0-based), ``position`` the token index in the trajectory of the first row left without a route."""

    attribute_names: ClassVar[tuple[str, ...]] = (*RoutedExpertsError.attribute_names, "turn", "position")
    turn: int | None
    position: int | None


class EnvelopeError(ContractError, ValueError):
    """A malformed routed-experts wire envelope or an unencodable tensor.

    ``field`` is one of ``"prefix"``, ``"dtype"``, ``"shape"``, ``"payload"``, ``"length"`` or ``"value"``.
    """

    attribute_names: ClassVar[tuple[str, ...]] = ("field",)
    field: str | None


class RolloutPromptMismatchError(ContractError, ValueError):
    """The prompt vLLM processed differs from the learner's prompt."""

    attribute_names: ClassVar[tuple[str, ...]] = ("expected_length", "actual_length", "first_mismatch_index")
    expected_length: int | None
    actual_length: int | None
    first_mismatch_index: int | None


class PromptFormatError(ContractError, ValueError):
    """Inconsistent generation batch data (shapes, lengths, row counts, ``sample_idx``)."""

    attribute_names: ClassVar[tuple[str, ...]] = ("key", "row", "value")
    key: str | None
    row: int | None
    value: str | None


class ChatResponseContractError(ContractError, RuntimeError):
    """Chat response choices and generation outputs that do not match."""

    attribute_names: ClassVar[tuple[str, ...]] = (
        "choice_index",
        "token_id",
        "token_count",
        "logprob_count",
        "missing_choice_indices",
        "unexpected_output_indices",
    )
    choice_index: int | None
    token_id: int | None
    token_count: int | None
    logprob_count: int | None
    missing_choice_indices: list[int] | None
    unexpected_output_indices: list[int] | None


class CounterSnapshotError(ContractError, ValueError):
    """Counter values that are non-finite, negative, of the wrong kind, or unparseable."""

    attribute_names: ClassVar[tuple[str, ...]] = ("key", "value")
    key: str | None
    value: str | None


class ConfigContractError(ContractError, ValueError):
    """A config rejection outside schema validation; ``path`` is relative to the generation section."""

    attribute_names: ClassVar[tuple[str, ...]] = ("path", "value")
    path: str | None
    value: str | None


class UnsupportedConfigError(ConfigContractError, AssertionError):
    """A combination that vLLM reload refit does not support (also an ``AssertionError``, as in the reference)."""


class RecipeError(ConfigContractError):
    """A recipe whose content is invalid; ``issues`` holds every issue at once (warnings included), ``skipped``
    the preflight rules that could not run (each with its reason), ``section`` the dotted section that was
    validated, ``entrypoint`` the trainer entrypoint preflight assumed (``None`` when preflight did not run or
    the recipe is not a GRPO recipe) and ``algorithm`` the NeMo RL algorithm whose whole recipe was checked
    (``None``: none was given or detected)."""

    attribute_names: ClassVar[tuple[str, ...]] = (
        "path",
        "value",
        "file",
        "issues",
        "skipped",
        "section",
        "entrypoint",
        "algorithm",
    )
    file: str | None
    issues: tuple[Any, ...] | None
    skipped: tuple[Any, ...] | None
    section: str | None
    entrypoint: str | None
    algorithm: str | None


class RecipeLoadError(ConfigContractError):
    """A recipe that cannot be read: I/O error, YAML syntax error, non-mapping root, cycle or missing parent.

    ``code`` is the rule that refused it: ``V1`` (also when ``None``), ``V6`` a loading limit, ``V7`` a
    ``defaults`` parent outside the root.
    """

    attribute_names: ClassVar[tuple[str, ...]] = ("path", "value", "file", "line", "column", "code")
    file: str | None
    line: int | None
    column: int | None
    code: str | None


class BaselineError(ConfigContractError):
    """A findings baseline (``validate --baseline FILE``) that cannot be used: unreadable, not JSON, malformed, or
    written by another baseline format version.  Never read as an empty baseline; ``file`` is its path."""

    attribute_names: ClassVar[tuple[str, ...]] = ("path", "value", "file")
    file: str | None


class WeightVersionError(ContractError, ValueError):
    """Per-token weight-version spans that are missing, malformed, or carry a label the rollout does not allow.

    ``span_index`` is the first bad span (``None`` when the fault is the whole list), ``version``/``start``/``end``
    its fields, ``token_count`` the output's token count and ``output_index`` the completion output's ``index``
    (its choice among the request's ``n`` outputs, so 0 for every request when ``n == 1``; ``None`` for
    :func:`~rl_contracts.weights.weight_version_per_token`, which sees no output).
    """

    attribute_names: ClassVar[tuple[str, ...]] = (
        "output_index",
        "span_index",
        "version",
        "start",
        "end",
        "token_count",
    )
    output_index: int | None
    span_index: int | None
    version: str | None
    start: int | None
    end: int | None
    token_count: int | None


class TokenizerMismatchError(ContractError, ValueError):
    """The learner's and the engine's tokenizers differ (vocabulary, special-token ids, chat template or added tokens).

    ``components`` names every part that differs, in a fixed order; ``learner_digest`` and ``engine_digest`` are
    the two whole fingerprints' digests.
    """

    attribute_names: ClassVar[tuple[str, ...]] = ("components", "learner_digest", "engine_digest")
    components: tuple[str, ...] | None
    learner_digest: str | None
    engine_digest: str | None


class TurnTokenMismatchError(ContractError, ValueError):
    """A multi-turn prompt built turn by turn (token in, token out) that differs from the chat template's full
    render outside the model's own turns.

    ``turn`` is the template segment at fault: segment ``k`` is what precedes generated turn ``k`` (0: the first
    prompt; ``len(generated_spans)``: what follows the last generated turn).  ``position`` is the index in the
    built ids where they first differ, ``missing_ids`` the template's ids the built ids lack there and
    ``extra_ids`` the ids the built ids hold instead.
    """

    attribute_names: ClassVar[tuple[str, ...]] = ("turn", "position", "missing_ids", "extra_ids")
    turn: int | None
    position: int | None
    missing_ids: tuple[int, ...] | None
    extra_ids: tuple[int, ...] | None


class RolloutBatchError(ContractError, ValueError):
    """A row of a rollout batch that the learner must not train on (the batch hand-off of ``rl_contracts.rollouts``).

    ``row`` is the request's position in the batch (the prompt's row), ``choice`` the completion output's
    ``index`` within it (``None`` when the fault is the whole request's) and ``check`` what failed: ``"batch"``,
    ``"prompt"``, ``"finished"``, ``"choices"``, ``"token_ids"``, ``"forbidden_token"``, ``"finish_reason"``,
    ``"logprobs"`` or ``"weight_versions"``.  :class:`RolloutPromptError` and :class:`RolloutWeightVersionError` are also the
    errors of the single-row checks they wrap, so ``except RolloutPromptMismatchError`` keeps working.
    """

    attribute_names: ClassVar[tuple[str, ...]] = ("row", "choice", "check")
    row: int | None
    choice: int | None
    check: str | None


class RolloutPromptError(RolloutPromptMismatchError, RolloutBatchError):
    """The prompt vLLM processed for one row of a rollout batch differs from the learner's."""

    attribute_names: ClassVar[tuple[str, ...]] = (
        *RolloutPromptMismatchError.attribute_names,
        *RolloutBatchError.attribute_names,
    )


class RolloutWeightVersionError(WeightVersionError, RolloutBatchError):
    """The weight versions of one choice of a rollout batch are missing, malformed or not allowed."""

    attribute_names: ClassVar[tuple[str, ...]] = (
        *WeightVersionError.attribute_names,
        *RolloutBatchError.attribute_names,
    )


class ForbiddenTokenError(RolloutBatchError):
    """A choice of a rollout batch generated a token the rollout forbids (a media placeholder such as
    ``<|image_pad|>``, or another id the caller listed); ``position`` is its index among the generated tokens
    and ``token_id`` the id (``check`` is ``"forbidden_token"``)."""

    attribute_names: ClassVar[tuple[str, ...]] = (*RolloutBatchError.attribute_names, "position", "token_id")
    position: int | None
    token_id: int | None


class LogprobContractError(ContractError, ValueError):
    """Malformed logprob, mask or importance-sampling inputs for the agreement functions (SPEC §9.1, §9.4).

    ``argument`` names the input at fault (``"generation_logprobs"``, ``"learner_logprobs"``, ``"mask"`` or an
    option); for a bad value, ``sequence_index``/``token_index`` give the first offending ``[b, t]`` (row-major)
    and ``generation_logprob``/``learner_logprob`` the two values there (``None`` for a NaN, which the message
    shows: NaN never equals itself, so it would not survive a pickle round-trip as equal).  ``exceeded`` and ``report`` are set by
    :class:`LogprobMismatchError` only.
    """

    attribute_names: ClassVar[tuple[str, ...]] = (
        "argument",
        "sequence_index",
        "token_index",
        "generation_logprob",
        "learner_logprob",
        "exceeded",
        "report",
    )
    argument: str | None
    sequence_index: int | None
    token_index: int | None
    generation_logprob: float | None
    learner_logprob: float | None
    exceeded: tuple[str, ...] | None
    report: Any


class LogprobMismatchError(LogprobContractError):
    """The engine's and the learner's logprobs disagree beyond a bound (SPEC §9.3).

    ``exceeded`` holds the names of the bounds that failed, ``report`` the ``MismatchReport``, the ``*_index`` and
    ``*_logprob`` attributes the worst token, ``likely_cause`` one of ``"shift"``, ``"truncated_support"``,
    ``"uniform"``, ``"isolated"`` or ``"numerics"``, and ``affected_sequences`` the counted sequences whose own mismatch exceeds the limit.

    Divergence: SPEC §9.3 calls the rule's attribute ``cause``; that is the attribute Ray's ``RayTaskError(X)``
    wrapper sets to the wrapped exception, so under Ray it would shadow the rule and not be forwarded.  It is
    ``likely_cause`` here, as the message says ("likely cause (uniform): ...").
    """

    attribute_names: ClassVar[tuple[str, ...]] = (
        *LogprobContractError.attribute_names,
        "likely_cause",
        "affected_sequences",
    )
    likely_cause: str | None
    affected_sequences: tuple[int, ...] | None


class SamplingParamsError(ContractError, ValueError):
    """Sampling parameters that are invalid, or that differ between the rollout and a scorer (a learner recompute,
    a teacher), which then computes log-probabilities of another distribution than the one vLLM sampled from.

    ``field`` names the first offending parameter (``"temperature"``, ``"top_p"``, ``"top_k"``, ``"min_p"`` or
    ``"logprobs_mode"``), ``fields`` every differing one; ``rollout_value`` and ``scoring_value`` are the two
    values of ``field`` (for an invalid value, ``rollout_value`` holds it when no scorer is involved);
    ``scorer`` names who scores.
    """

    attribute_names: ClassVar[tuple[str, ...]] = (
        "field",
        "fields",
        "rollout_value",
        "scoring_value",
        "scorer",
    )
    field: str | None
    fields: tuple[str, ...] | None
    rollout_value: Any
    scoring_value: Any
    scorer: str | None


def _is_library_class(cls: type[BaseException]) -> bool:
    """Whether ``cls`` is built from library errors and built-ins only (Ray's dual class adds ``RayTaskError``)."""
    return all(issubclass(base, ContractError) or base.__module__ == "builtins" for base in cls.__mro__)


def contract_error(exc: BaseException) -> ContractError | None:
    """The library error that ``exc`` carries, or ``None``; never imports Ray.

    Returns ``exc`` itself when its class is the library's: a :class:`ContractError` whose class hierarchy holds
    only library errors and built-ins (a subclass a caller derives from a library error counts).  Otherwise it
    follows, depth first, Ray's ``cause`` attribute and then ``__cause__`` of each exception it meets, at most
    :data:`MAX_CAUSE_DEPTH` exceptions and each once (cycles end the walk), and returns the first library error.
    The result has the library's own class, bounded message and attributes, and pickles.

    Raises:
        ContractTypeError: ``exc`` is not an exception instance (``None``, a class, a string).

    Divergence: the SPEC's "one of ours" is read by class, not ``isinstance``: Ray's ``RayTaskError(X)``
    subclasses ``X`` but its ``str`` is Ray's unbounded traceback and it does not pickle, so it is never returned
    itself; a ``ContractError`` subclass mixing in a foreign class is treated the same way.

    Example::

        try:
            ray.get(actor.check.remote(batch))
        except RoutedExpertsError as wrapped:
            logger.error("route check failed", extra=contract_error(wrapped).details())
    """
    if not isinstance(exc, BaseException):
        raise ContractTypeError.for_value("exc", "an exception instance", exc)
    stack: list[BaseException] = [exc]
    seen: set[int] = set()
    while stack and len(seen) < MAX_CAUSE_DEPTH:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ContractError) and _is_library_class(type(current)):
            return current
        links = (getattr(current, "cause", None), current.__cause__)
        stack.extend(link for link in reversed(links) if isinstance(link, BaseException))
    return None
