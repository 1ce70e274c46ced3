"""``POST /v1/chat/completions``: an OpenAI-compatible proxy that answers only with verified text.

The request is forwarded to the configured upstream (any OpenAI-compatible server: vLLM, llama.cpp's server, a
hosted API, by ``proxy.upstream``) with ``response_format`` set to guard's JSON Schema for the policy, so the
model writes a payload. The payload goes through the gate; a ``regenerate_from_facts`` decision, or a payload the
gate cannot read, is sent back to the model with the verified facts (or the reasons) for another try, at most
``proxy.max_attempts`` times. The reply is a normal ``chat.completion`` whose assistant message is the verified
text or the refusal; guard's decision rides in the extension field ``guard``.

The caller picks the policy and domain with the ``X-Guard-Policy`` and ``X-Guard-Domain`` headers (an OpenAI
client's ``default_headers``); by default the key's first policy and that policy's first domain. The principal
comes from the server's principal header, as everywhere.
"""

import json
import os
import time
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request
from starlette.responses import JSONResponse, Response

from guard.decision import Action, Decision
from guard.errors import PayloadError
from guard.server import problems as P
from guard.server.config import ServeConfig
from guard.server.models import ChatCompletionOut

POLICY_HEADER = "X-Guard-Policy"
DOMAIN_HEADER = "X-Guard-Domain"

_CHAT_BODY = {
    "requestBody": {
        "required": True,
        "description": "An OpenAI chat-completions request (stream and n > 1 are not supported).",
        "content": {"application/json": {"schema": {"type": "object", "required": ["messages"]}}},
    }
}


def _facts_message(decision: Decision) -> str:
    facts = {k: {"value": f["value"], "text": f["text"]} for k, f in decision.facts.items()}
    return (
        "Some facts in your payload do not match the records: "
        + ", ".join(decision.contradicted)
        + ". Write the payload again using these verified values: "
        + json.dumps(facts, ensure_ascii=False, default=str)
    )


def _invalid_message(exc: PayloadError) -> str:
    reasons = "; ".join(f"{p.location}: {p.message}" if str(p.location) else p.message for p in exc.problems)
    return (
        f"Your reply was not a valid payload ({exc.message}{': ' + reasons if reasons else ''}). "
        "Reply with one JSON object that follows the schema."
    )


def _content(reply: Any) -> str | None:
    """The assistant text of an upstream reply, or None when the reply is not a chat completion."""
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def add_proxy(
    app: FastAPI,
    cfg: ServeConfig,
    st: Any,
    caller: Callable[..., Any],
    gate_for: Callable[..., Any],
    principal_header: str,
) -> None:
    """Add ``/v1/chat/completions`` to ``app``."""
    import httpx

    from guard.server.app import stage_bound

    proxy = cfg.proxy
    assert proxy is not None
    bound = stage_bound(cfg.limits)
    upstream = proxy.upstream.rstrip("/") + "/chat/completions"
    secret = os.environ.get(proxy.api_key_env) if proxy.api_key_env else None
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    Who = Annotated[Any, Depends(caller)]

    async def ask(client: httpx.AsyncClient, body: dict[str, Any]) -> Any:
        try:
            r = await client.post(upstream, json=body, headers=headers)
        except httpx.TimeoutException:
            detail = f"the model did not answer within {proxy.timeout:g} s"
            raise P.ServerProblem(504, "upstream_timeout", detail) from None
        except httpx.HTTPError:
            raise P.ServerProblem(502, "upstream", "the model's server could not be reached") from None
        if r.status_code >= 400:
            raise P.ServerProblem(502, "upstream", f"the model's server answered with status {r.status_code}")
        try:
            return r.json()
        except ValueError:
            raise P.ServerProblem(502, "upstream", "the model's server did not answer with JSON") from None

    @app.post(
        "/v1/chat/completions",
        response_model=None,
        responses={
            200: {"model": ChatCompletionOut, "description": "A verified chat.completion; the decision in `guard`"},
            **{
                s: {
                    "description": P.TITLES.get(s, "Error"),
                    "content": {
                        "application/problem+json": {"schema": {"$ref": "#/components/schemas/ProblemDetails"}}
                    },
                }
                for s in (401, 403, 413, 422, 429, 502, 503, 504)
            },
        },
        openapi_extra=_CHAT_BODY,
        summary="OpenAI-compatible chat completions, verified by the gate.",
    )
    async def chat(
        request: Request,
        who: Who,
        policy: Annotated[str | None, Header(alias=POLICY_HEADER, max_length=128)] = None,
        domain: Annotated[str | None, Header(alias=DOMAIN_HEADER, max_length=128)] = None,
        principal: Annotated[str | None, Header(alias=principal_header)] = None,
    ) -> Response:
        gate = gate_for(who, policy or who.key.policies[0], domain)
        try:
            body = json.loads(await request.body())
        except (ValueError, RecursionError):
            raise P.ServerProblem(422, "request", "the request body is not JSON") from None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise P.ServerProblem(422, "request", "a chat request needs a list of messages")
        if body.get("stream"):
            raise P.ServerProblem(422, "request", "streaming is not supported: guard answers once the text is verified")
        if body.get("n", 1) != 1:
            raise P.ServerProblem(422, "request", "n must be 1")
        from guard.records.schema import payload_schema

        messages = list(body["messages"])
        forward = {
            **{k: v for k, v in body.items() if k not in ("messages", "response_format", "tools", "tool_choice")},
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "guard_payload", "schema": payload_schema(gate.policy)},
            },
        }
        if proxy.model and not forward.get("model"):
            forward["model"] = proxy.model
        rid = request.state.request_id
        decision: Decision | None = None
        attempts = 0
        model = forward.get("model")
        async with httpx.AsyncClient(timeout=proxy.timeout) as client:
            while attempts < proxy.max_attempts:
                attempts += 1
                reply = await ask(client, {**forward, "messages": messages})
                model = reply.get("model", model) if isinstance(reply, dict) else model
                content = _content(reply)
                if content is None:
                    raise P.ServerProblem(502, "upstream", "the model's server did not answer with a chat completion")
                messages = [*messages, {"role": "assistant", "content": content}]
                try:
                    decision = await gate.run(content, principal, request_id=rid, bound=bound)
                except PayloadError as exc:
                    decision = None
                    messages.append({"role": "user", "content": _invalid_message(exc)})
                    continue
                if decision.action is not Action.REGENERATE:
                    break
                messages.append({"role": "user", "content": _facts_message(decision)})
        if decision is None or decision.action is Action.REGENERATE:
            decision = Decision(
                Action.REFUSE,
                request_id=rid,
                results=decision.results if decision else (),
                message=f"I could not produce an answer that matches the records after {attempts} attempts, "
                "so I have not given one.",
                unverified=decision.contradicted if decision else (),
            )
        text = decision.text if decision.action is Action.ANSWER else decision.message
        return JSONResponse(
            {
                "id": f"chatcmpl-guard-{rid}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "guard": {**decision.to_dict(), "attempts": attempts},
            }
        )


__all__ = ["add_proxy", "POLICY_HEADER", "DOMAIN_HEADER"]
