"""The bodies of ``rlhub serve``'s routes as pydantic models: what each route takes and gives.

A request field declares its type and, with :func:`expected`, the sentence a client reads when
its value does not fit: what was expected and what was found (``expected 'n' to be an integer in
[1, 1024], found 0``). :func:`validate` turns a parsed JSON body into its model and pydantic's
``ValidationError`` into an :class:`~.protocol.ApiError` (400) carrying that sentence. Limits that
come from the server's options are read from the validation context (``max_items``); a request
listing more items than that is refused with 413 (:func:`.guard.check_items`) before its items
are validated.

The OpenRLHF bodies keep OpenRLHF 0.11.2's shape (:mod:`.protocol`): a sample's own problem (a
malformed label, a query that is not a string) is that sample's failure and never a refused
request, so :class:`RewardRequest` types the three lists but not their items.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from rlhub.integrations.server.guard import check_items
from rlhub.integrations.server.protocol import ApiError


def mismatch(template: str, value: Any, info: ValidationInfo | None = None
             ) -> PydanticCustomError:
    """The validation error ``template`` words for ``value``: the template is formatted with
    ``value``, its ``type`` name, its ``json`` text, the ``field`` and the validation context."""
    found = json.dumps(value, default=str) if "{json" in template else None
    context = (info.context if info else None) or {}
    message = template.format(value=value, type=type(value).__name__, json=found,
                              field=info.field_name if info else None, **context)
    return PydanticCustomError("expected", "{message}", {"message": message})


def expected(template: str) -> WrapValidator:
    """A field's validation error reworded as ``template`` says (see :func:`mismatch`)."""

    def check(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise mismatch(template, value, info) from None

    return WrapValidator(check)


def validate(model: type[BaseModel], data: Any, context: dict[str, Any]) -> Any:
    """``data`` (a parsed JSON body) as ``model``; a mismatch is an :class:`ApiError` (400)."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "expected":
            raise ApiError(400, first["msg"]) from None
        where = ".".join(map(str, first["loc"])) or "body"
        found = json.dumps(first.get("input"), default=str)
        raise ApiError(400, f"expected {where!r}: {first['msg']}, found {found:.80}") from None


def _within_max_items(value: int, info: ValidationInfo) -> int:
    if value > (info.context or {}).get("max_items", value):
        raise ValueError("over max_items")
    return value


def _items_counted(value: Any, info: ValidationInfo) -> Any:
    """A list of items, refused with 413 past ``max_items`` before any item is validated."""
    if isinstance(value, list):
        check_items(len(value), (info.context or {}).get("max_items", len(value)))
    return value


def _an_object(value: Any) -> Any:
    if not isinstance(value, dict):
        raise mismatch("expected each item as an object, found {type}", value)
    return value


def _falsy_as_missing(value: Any) -> Any:
    return value or None


Seed = Annotated[StrictInt, expected("expected 'seed' to be an integer, found {value!r}")]
Index = Annotated[StrictInt, Field(ge=0),
                  expected("expected {field!r} to be an integer >= 0, found {value!r}")]
Split = Annotated[str, BeforeValidator(str)]
DomainId = Annotated[str | None,
                     expected("expected 'domain' to be a domain id (a string), found {value!r}")]
#: The sentences of checks that span fields, or that the server makes again after validation.
LABEL_OR_TASK = "expected 'label' or 'task' (an object, Task.to_dict()), found {type}"
COMPLETION = ("expected 'completion' to be a string (or 'message' an OpenAI assistant message), "
              "found {type}")
LISTS = "body: expected 'prompts' and 'labels' to be lists"
UNSCHEDULED = ("expected a domain of the server's mixture, found {value!r}; "
               "GET /v1/scheduler/weights lists them")


# -- /get_reward (OpenRLHF) -----------------------------------------------------------------


class RewardRequest(BaseModel):
    """``{query, prompts, labels}``, as OpenRLHF 0.11.2 posts it (``queries`` is read too).

    Missing ``prompts`` count as empty prompts (the whole query is the response); missing labels
    become ``None`` (and so a label error for that sample).
    """

    query: Annotated[list[Any], BeforeValidator(_items_counted),
                     expected("body: expected 'query' to be a list, found {type}")] = \
        Field(default_factory=list, validation_alias=AliasChoices("query", "queries"))
    prompts: Annotated[list[Any] | None, BeforeValidator(_falsy_as_missing), expected(LISTS)] = None
    labels: Annotated[list[Any] | None, BeforeValidator(_falsy_as_missing), expected(LISTS)] = None

    def samples(self) -> list[tuple[Any, Any, Any]]:
        """``(query, prompt, label)`` per query, aligned by index."""
        n = len(self.query)
        prompts = ((self.prompts or []) + [""] * n)[:n]
        labels = ((self.labels or []) + [None] * n)[:n]
        return list(zip(self.query, prompts, labels))


class RewardAnswer(BaseModel):
    """``{rewards, scores, extra_logs}``: one float per query in each list (see
    :data:`.protocol.LOG_KEYS`)."""

    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


# -- /v1 --------------------------------------------------------------------------------------


class SampleRequest(BaseModel):
    """``/v1/sample``: ``n`` tasks of ``domain`` (from ``split``, ``seed``, ``start``), else of the
    server's mixture (``lease``: every request with that key gets the same task)."""

    n: Annotated[StrictInt, Field(ge=1), AfterValidator(_within_max_items),
                 expected("expected 'n' to be an integer in [1, {max_items}], found {value!r}")] = 1
    domain: DomainId = None
    split: Split = "train"
    seed: Seed = 0
    start: Index = 0
    lease: Annotated[str | None, Field(min_length=1, max_length=200),
                     expected("expected 'lease' to be a string of 1-200 characters, found "
                              "{json:.80}")] = None


class SampleAnswer(BaseModel):
    """Tasks (``Task.to_dict()``) with a label the server signed for each."""

    source: str
    tasks: list[dict[str, Any]]
    labels: list[dict[str, Any]]


class LeaseAnswer(SampleAnswer):
    """The task leased to ``lease``."""

    lease: str


class AssistantMessage(BaseModel):
    """An OpenAI assistant message: its text and its tool calls."""

    model_config = ConfigDict(extra="allow")

    content: str | None = None
    tool_calls: Annotated[list[Any] | None, BeforeValidator(_falsy_as_missing)] = None


class Completion(BaseModel):
    """What the model said: ``completion`` (text), or ``message`` (an OpenAI assistant message,
    whose ``tool_calls`` join its text in the canonical form of :mod:`rlhub.tools`)."""

    completion: Annotated[str | None, expected(COMPLETION)] = None
    message: Annotated[AssistantMessage | None,
                       expected("expected 'message' as an OpenAI assistant message (content a "
                                "string or null, tool_calls a list)")] = None

    @model_validator(mode="after")
    def _check(self) -> Completion:
        _require_completion(self)
        return self

    @property
    def text(self) -> str:
        """The completion as one text (a message's tool calls rendered into it)."""
        if self.completion is not None:
            return self.completion
        from rlhub.tools import completion_text

        assert self.message is not None
        return completion_text(self.message.model_dump())


class TaskRef(BaseModel):
    """A task a client names: its ``label``, or the ``task`` itself (checked as a label is)."""

    label: Any = None
    task: Annotated[dict[str, Any] | None, expected(LABEL_OR_TASK)] = None

    def claimed_label(self) -> Any:
        """The label to open: ``label``, else ``task`` as a label."""
        if self.label is not None or self.task is None:
            return self.label
        return {"domain": self.task.get("domain"), "task": self.task}


def _require_completion(body: Completion) -> None:
    if body.completion is None and body.message is None:
        raise mismatch(COMPLETION, None)


def _require_task(body: TaskRef) -> None:
    if body.label is None and body.task is None:
        raise mismatch(LABEL_OR_TASK, None)


class VerifyItem(Completion, TaskRef):
    """One ``/v1/verify`` item: a completion and the task it answers."""

    @model_validator(mode="after")
    def _check(self) -> VerifyItem:
        _require_completion(self)
        _require_task(self)
        return self


class VerifyRequest(VerifyItem):
    """``/v1/verify``: one item, or ``items`` (at most ``max_items``), each checked alone."""

    items: Annotated[list[Annotated[VerifyItem, BeforeValidator(_an_object)]] | None,
                     BeforeValidator(_items_counted)] = None

    @model_validator(mode="after")
    def _check(self) -> VerifyRequest:
        if self.items is None:
            _require_completion(self)
            _require_task(self)
        return self


class VerifyResult(BaseModel):
    """The score of one ``/v1/verify`` item."""

    domain: str | None
    task_id: str | None
    reward: float
    score: float
    passed: bool
    error: str | None
    failure: str
    retries: int
    verify_ms: float


class VerifyResults(BaseModel):
    """``/v1/verify``'s answer to ``items``: one result per item, in order."""

    results: list[VerifyResult]


class EpisodeRequest(TaskRef):
    """``/v1/episodes``: a ``label`` or ``task``, else ``domain``'s task at ``(split, seed,
    index)``."""

    domain: DomainId = None
    split: Split = "train"
    seed: Seed = 0
    index: Index = 0

    @property
    def names_task(self) -> bool:
        """True when the body gives a ``label`` or ``task`` (then one must be set)."""
        return bool(self.model_fields_set & {"label", "task"})

    @model_validator(mode="after")
    def _check(self) -> EpisodeRequest:
        if self.names_task:
            _require_task(self)
        return self


class StepRequest(Completion):
    """``/v1/episodes/{id}/step``: the model's turn."""


class ObserveRequest(BaseModel):
    """``/v1/scheduler/observe``: one inner list of rewards per prompt group of ``domain``."""

    domain: Annotated[str | None, expected(UNSCHEDULED)] = None
    group_rewards: Annotated[
        list[list[StrictInt | Annotated[StrictFloat, Field(allow_inf_nan=False)]]],
        Field(validate_default=True),
        expected("expected 'group_rewards' as a list of lists of numbers (one per prompt group), "
                 "found {json:.200}")] = None  # type: ignore[assignment]
