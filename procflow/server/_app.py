"""The gateway's ASGI app: OpenAI Chat Completions in, a guarded agent call, OpenAI answers out.

Every request runs through one :class:`~procflow.Agent` whose processors are the pipeline and whose
model is the upstream. The app keeps no conversation state: memory, cache and cost windows live in the
stores their processors are configured with, so any instance can serve the next request of a
conversation. The only per-instance state is the count of requests in flight per client (a limit,
not a correctness matter) and the metrics.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from procflow._agent import Agent
from procflow._chat.format import ConversationFormatError, parse_conversation
from procflow._chat.violations import redaction_rules
from procflow._messages import RESOURCE_ID_KEY, Chunk, TripwireInfo, new_id
from procflow.errors import APICallError, ModelError
from procflow.processors import ProcessInputStepArgs, ProcessInputStepResult, ProcessorViolation
from procflow.server._config import GatewayConfig
from procflow.server._metrics import GatewayMetrics
from procflow.server._sse import DONE_EVENT, sse_event
from procflow.server._tools import client_tools
from procflow.server._wire import (
    ChatRequest,
    chunk_body,
    completion_body,
    error_body,
    finish_reason,
    parse_chat_request,
    tool_call_delta,
    tripwire_error,
)

__all__ = ["Gateway", "create_app"]

logger = logging.getLogger("procflow.server")


class _RefusedError(Exception):
    """A request answered with an OpenAI error object before the agent runs."""

    def __init__(self, status: int, message: str, *, type: str, code: str) -> None:
        super().__init__(message)
        self.status, self.body = status, error_body(message, type=type, code=code)


class Gateway:
    """The state behind one app: the agent, the metrics and the requests in flight per client."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.metrics = GatewayMetrics()
        self.agent = Agent(
            id="procflow-gateway",
            model=config.upstream,
            input_processors=list(config.input_processors),
            output_processors=list(config.output_processors),
            error_processors=list(config.error_processors),
            max_processor_retries=config.max_processor_retries,
            memory=config.memory,
        )
        self._keys = sorted(config.api_keys)
        self._active: dict[str, int] = {}
        self.hold_steps = bool(config.error_processors) or any(
            callable(getattr(p, "process_output_step", None)) for p in config.output_processors
        )
        """Whether a step's output is held until the step is accepted: with processors that may
        retry a step, text already sent could not be taken back."""
        for processor in (*config.input_processors, *config.output_processors):
            self._count_reports(processor)

    def _count_reports(self, processor: Any) -> None:
        original = getattr(processor, "on_violation", None)
        metrics = self.metrics

        def on_violation(violation: ProcessorViolation) -> Any:
            for rule in redaction_rules(violation):
                metrics.count(
                    "procflow_gateway_redactions_total", processor=violation.processor_id, rule=rule
                )
            return original(violation) if callable(original) else None

        try:
            processor.on_violation = on_violation
        except (AttributeError, TypeError):
            logger.warning(
                "gateway_reports_unattached", extra={"processor_id": getattr(processor, "id", "?")}
            )

    # -- admission ---------------------------------------------------------------------------------

    def client_of(self, request: Request) -> str:
        """The client's label for limits and logs: a digest of its key, or its address without keys."""
        if not self._keys:
            return request.client.host if request.client else "unknown"
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        # Compare against every key, always, so timing says nothing about which key (if any) matched.
        matched = False
        for key in self._keys:
            matched |= hmac.compare_digest(token.encode(), key.encode())
        if scheme.lower() != "bearer" or not matched:
            raise _RefusedError(
                401,
                "invalid or missing API key: send it as 'Authorization: Bearer <key>'",
                type="invalid_request_error",
                code="invalid_api_key",
            )
        return "key-" + hashlib.sha256(token.encode()).hexdigest()[:10]

    def enter(self, client: str) -> None:
        """Count a request in flight for ``client``, or refuse it past the limit."""
        limit = self.config.max_concurrent_per_client
        if self._active.get(client, 0) >= limit:
            raise _RefusedError(
                429,
                f"too many requests in flight for this client (limit {limit})",
                type="rate_limit_error",
                code="rate_limit_exceeded",
            )
        self._active[client] = self._active.get(client, 0) + 1

    def leave(self, client: str) -> None:
        """The request of ``client`` ended."""
        left = self._active.get(client, 1) - 1
        if left:
            self._active[client] = left
        else:
            self._active.pop(client, None)

    def in_flight(self) -> int:
        """Requests in flight on this instance."""
        return sum(self._active.values())

    async def read_body(self, request: Request) -> ChatRequest:
        """The validated request body, refusing oversize or malformed ones."""
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _RefusedError(
                413,
                f"the request body is over {limit} bytes",
                type="invalid_request_error",
                code="request_too_large",
            )
        chunks: list[bytes] = []
        size = 0
        async for piece in request.stream():
            size += len(piece)
            if size > limit:
                raise _RefusedError(
                    413,
                    f"the request body is over {limit} bytes",
                    type="invalid_request_error",
                    code="request_too_large",
                )
            chunks.append(piece)
        try:
            body = parse_chat_request(b"".join(chunks))
        except ValueError as exc:
            raise _RefusedError(400, str(exc), type="invalid_request_error", code="invalid_request") from None
        if body.model not in self.config.served_models:
            raise _RefusedError(
                404,
                f"this gateway serves {', '.join(self.config.served_models)}; the requested model is not one "
                "of them (GET /v1/models lists them)",
                type="invalid_request_error",
                code="model_not_found",
            )
        return body

    # -- one call ----------------------------------------------------------------------------------

    def call_options(self, body: ChatRequest, request: Request, client: str) -> dict[str, Any]:
        """The agent call's options: the tenant, the thread, the client's tools, tool choice, settings.

        The resource id (the tenant: response caches and cost guards scope by it) is the
        ``X-Procflow-Resource`` header, else the body's ``user``, else the client itself (its key's
        digest, or its address without keys), so tenants never share entries by accident.
        """
        try:
            messages = parse_conversation({"messages": body.messages}).messages
            for message in messages:
                # The chat-format parser numbers turns within one record; a request's messages are new
                # messages of a conversation that memory may already hold, so they get fresh ids.
                message.id = new_id()
        except ConversationFormatError as exc:
            raise _RefusedError(
                400, f"messages: {exc.problem}", type="invalid_request_error", code="invalid_request"
            ) from None
        tools = client_tools(body.tools)
        settings: dict[str, Any] = {}
        if body.temperature is not None:
            settings["temperature"] = body.temperature
        if body.max_completion_tokens or body.max_tokens:
            settings["max_tokens"] = body.max_completion_tokens or body.max_tokens
        provider = self.config.upstream.provider
        try:
            settings.update(body.sampling(provider))
        except ValueError as exc:
            raise _RefusedError(400, str(exc), type="invalid_request_error", code="invalid_request") from None

        def prepare_step(args: ProcessInputStepArgs) -> ProcessInputStepResult:
            options = dict(args.provider_options)
            if settings:
                options[provider] = {**options.get(provider, {}), **settings}
            return ProcessInputStepResult(tools={**args.tools, **tools}, provider_options=options)

        resource = request.headers.get("x-procflow-resource") or _user_of(body) or client
        options: dict[str, Any] = {
            "messages": messages,
            "tool_choice": body.tool_choice_name(),
            "max_steps": 1,
            "request_context": {RESOURCE_ID_KEY: resource},
        }
        if tools or settings:
            # Only then: a call with a prepare_step assembles its pipelines anew, one without reuses the
            # agent's (built once), which is most of a plain request's processor overhead.
            options["prepare_step"] = prepare_step
        thread = request.headers.get("x-procflow-thread")
        if self.config.memory is not None:
            if not thread:
                raise _RefusedError(
                    400,
                    "this gateway keeps conversations in memory: name the conversation with an "
                    "'X-Procflow-Thread' header (and send only its new messages)",
                    type="invalid_request_error",
                    code="thread_required",
                )
            options["memory"] = {"thread": thread, "resource": resource}
        return options


def _user_of(body: ChatRequest) -> str | None:
    user = (body.model_extra or {}).get("user")
    return user if isinstance(user, str) and user else None


def _tripwire_chunk_info(chunk: Chunk) -> TripwireInfo:
    payload = chunk.payload
    return TripwireInfo(
        reason=str(payload.get("reason") or ""),
        retry=bool(payload.get("retry")),
        metadata=dict(payload.get("metadata") or {}),
        processor_id=payload.get("processor_id"),
    )


def _upstream_error(gateway: Gateway, exc: ModelError) -> tuple[int, dict[str, Any]]:
    """The upstream's failure, passed through with its status (502 when it sent none).

    An answer the gateway could not read (malformed JSON or SSE, tool arguments that are no JSON) is
    a 502 whose message quotes nothing of it.
    """
    if not isinstance(exc, APICallError):
        gateway.metrics.count("procflow_gateway_upstream_errors_total", status="invalid")
        return 502, error_body(
            "the upstream model sent an answer the gateway could not read",
            type="upstream_error",
            code="upstream_invalid_response",
        )
    status = exc.status_code if exc.status_code and 400 <= exc.status_code < 600 else 502
    gateway.metrics.count("procflow_gateway_upstream_errors_total", status=str(exc.status_code or "none"))
    body = error_body(
        f"the upstream model failed: {exc.message}",
        type=exc.error_type or "upstream_error",
        code=exc.error_code or "upstream_error",
    )
    return status, body


async def _complete(
    gateway: Gateway, body: ChatRequest, completion_id: str, options: dict[str, Any]
) -> tuple[int, dict[str, Any], str]:
    """Answer a non-streamed request: ``(status, body, outcome)``."""
    try:
        result = await gateway.agent.generate(options.pop("messages"), **options)
    except ModelError as exc:
        status, error = _upstream_error(gateway, exc)
        return status, error, "upstream_error"
    if result.tripwire is not None:
        gateway.metrics.count(
            "procflow_gateway_tripwires_total", processor=result.tripwire.processor_id or ""
        )
        if gateway.config.tripwire_response == "error":
            return 400, tripwire_error(result.tripwire), "tripwire"
        text, calls, reason = gateway.config.refusal_text, [], "content-filter"
    else:
        text, calls, reason = result.text, result.tool_calls, result.finish_reason
    return (
        200,
        completion_body(
            completion_id=completion_id,
            model=body.model,
            text=text,
            tool_calls=calls,
            reason=reason,
            usage=result.usage,
        ),
        "tripwire" if result.tripwire else "ok",
    )


class _StreamState:
    """Translating one agent stream into ``chat.completion.chunk`` events."""

    def __init__(self, gateway: Gateway, body: ChatRequest, completion_id: str) -> None:
        self.gateway, self.body = gateway, body
        self.completion_id, self.created = completion_id, int(time.time())
        self.held: list[str] = []
        self.tool_index = 0
        self.saw_tool_call = False
        self.held_text = self.sent_text = False  # a text event among the held ones; one sent already
        self.outcome = "ok"
        # Text deltas are most of a stream; their event is this frame around the JSON-encoded text.
        frame = self.event(delta={"content": ""})
        self.text_head, _, self.text_tail = frame.rpartition('"content":""')
        self.text_head += '"content":'

    def text_event(self, text: str) -> str:
        """The event of a text delta: what :meth:`event` makes for it, without re-encoding the frame."""
        return self.text_head + json.dumps(text, ensure_ascii=False) + self.text_tail

    def event(self, **fields: Any) -> str:
        return sse_event(
            chunk_body(
                completion_id=self.completion_id, model=self.body.model, created=self.created, **fields
            )
        )

    def emit(self, event: str) -> list[str]:
        if self.gateway.hold_steps:
            self.held.append(event)
            return []
        return [event]

    def translate(self, chunk: Chunk) -> list[str]:
        kind = chunk.type
        if kind == "text-delta":
            text = chunk.payload.get("text") or ""
            if not text:
                return []
            out = self.emit(self.text_event(text))
            if out:
                self.sent_text = True
            else:
                self.held_text = True
            return out
        if kind == "tool-call":
            from procflow._messages import ToolCall

            call = ToolCall(
                chunk.payload["tool_call_id"], chunk.payload["tool_name"], chunk.payload.get("args") or {}
            )
            self.saw_tool_call = True
            self.tool_index += 1
            return self.emit(self.event(delta=tool_call_delta(self.tool_index - 1, call)))
        if kind == "step-finish":
            held, self.held = self.held, []
            released, self.held_text = self.held_text, False
            if chunk.payload.get("discarded") is not None:
                self.tool_index, self.saw_tool_call = 0, False
                return []
            self.sent_text = self.sent_text or released
            return held
        if kind == "finish":
            out, self.held = self.held, []
            self.sent_text, self.held_text = self.sent_text or self.held_text, False
            reason = finish_reason(
                chunk.payload.get("finish_reason") or "stop", has_tool_calls=self.saw_tool_call
            )
            out.append(self.event(reason=reason))
            options = self.body.stream_options
            if options is not None and options.include_usage and chunk.payload.get("usage") is not None:
                out.append(self.event(usage=chunk.payload["usage"]))
            return out
        if kind == "tripwire":
            return self.tripwire(_tripwire_chunk_info(chunk))
        return []

    def tripwire(self, info: TripwireInfo) -> list[str]:
        self.outcome = "tripwire"
        self.held, self.held_text = [], False
        self.gateway.metrics.count("procflow_gateway_tripwires_total", processor=info.processor_id or "")
        if self.gateway.config.tripwire_response == "refusal":
            # Text already sent cannot be taken back: the refusal follows it as a paragraph of its own.
            refusal = self.gateway.config.refusal_text
            return [
                self.event(delta={"content": "\n\n" + refusal if self.sent_text else refusal}),
                self.event(reason="content_filter"),
            ]
        return [sse_event(tripwire_error(info))]


async def _stream(
    gateway: Gateway, body: ChatRequest, completion_id: str, options: dict[str, Any], done: Any
) -> AsyncIterator[str]:
    state = _StreamState(gateway, body, completion_id)
    try:
        yield state.event(delta={"role": "assistant", "content": ""})
        async with gateway.agent.stream(options.pop("messages"), **options) as output:
            async for chunk in output.full_stream:
                events = state.translate(chunk)
                if events:
                    # Events released together (a held step, the finish and usage) go out in one write.
                    yield "".join(events)
            if output.finished and output.tripwire is None and output.result.finish_reason == "error":
                state.outcome = "upstream_error"
                yield sse_event(
                    error_body("the upstream model failed", type="upstream_error", code="upstream_error")
                )
    except ModelError as exc:
        state.outcome = "upstream_error"
        yield sse_event(_upstream_error(gateway, exc)[1])
    except BaseException:
        state.outcome = "disconnected"
        raise
    finally:
        done(state.outcome)
    yield DONE_EVENT


# -- routes ----------------------------------------------------------------------------------------


def _json(status: int, body: dict[str, Any]) -> JSONResponse:
    return JSONResponse(body, status_code=status)


async def _chat_completions(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    started = time.perf_counter()
    client, status, outcome, streaming = "unknown", 500, "error", False

    def finished(final_outcome: str) -> None:
        seconds = time.perf_counter() - started
        gateway.leave(client)
        gateway.metrics.count("procflow_gateway_requests_total", outcome=final_outcome, status=str(status))
        gateway.metrics.observe(seconds, stream=str(streaming).lower())
        logger.info(
            "gateway_request",
            extra={
                "client": client,
                "status": status,
                "outcome": final_outcome,
                "stream": streaming,
                "duration_ms": round(seconds * 1000, 2),
            },
        )

    try:
        client = gateway.client_of(request)
        gateway.enter(client)
    except _RefusedError as refused:
        status = refused.status
        gateway.metrics.count("procflow_gateway_requests_total", outcome="refused", status=str(status))
        logger.info(
            "gateway_request_refused", extra={"status": status, "code": refused.body["error"]["code"]}
        )
        return _json(refused.status, refused.body)
    completion_id = "chatcmpl-" + uuid.uuid4().hex
    try:
        body = await gateway.read_body(request)
        streaming = body.stream
        options = gateway.call_options(body, request, client)  # bad messages get a 400 before any stream
        if streaming:
            status = 200
            return StreamingResponse(
                _stream(gateway, body, completion_id, options, finished),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        status, answer, outcome = await _complete(gateway, body, completion_id, options)
    except _RefusedError as refused:
        status, answer, outcome = refused.status, refused.body, "refused"
    except ClientDisconnect:
        status, outcome = 499, "disconnected"
        finished(outcome)
        raise
    finished(outcome)
    return _json(status, answer)


async def _models(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    try:
        gateway.client_of(request)
    except _RefusedError as refused:
        return _json(refused.status, refused.body)
    data = [
        {"id": name, "object": "model", "created": 0, "owned_by": "procflow"}
        for name in gateway.config.served_models
    ]
    return _json(200, {"object": "list", "data": data})


async def _health(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    return _json(200, {"status": "ok", "in_flight": gateway.in_flight()})


async def _metrics(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    return PlainTextResponse(gateway.metrics.render(), media_type="text/plain; version=0.0.4")


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    message = f"{request.method} {request.url.path}: {exc.detail}"
    return _json(exc.status_code, error_body(message, type="invalid_request_error", code=code))


def create_app(config: GatewayConfig) -> Starlette:
    """The gateway as an ASGI app (serve it with uvicorn, or any ASGI server).

    Routes: ``POST /v1/chat/completions`` (streamed or not), ``GET /v1/models``, ``GET /healthz`` and
    ``GET /metrics`` (Prometheus text). ``app.state.gateway`` is the :class:`Gateway` behind it.
    """
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", _chat_completions, methods=["POST"]),
            Route("/v1/models", _models, methods=["GET"]),
            Route("/healthz", _health, methods=["GET"]),
            Route("/metrics", _metrics, methods=["GET"]),
        ],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.gateway = Gateway(config)
    return app
