"""Fuzz the two surfaces the OpenAPI document does not describe: the LLM bridge
(``WS /v1/llm/bridge``, JSON text frames) and ``POST /mcp`` (JSON-RPC 2.0), against a real
daemon. schemathesis never reaches them (``bench/fuzz.py`` fuzzes the document).

Each case is random but reproducible from the seed:

- bridge: a connection sends a few frames (well-formed frames of every type with odd
  values, unknown types, JSON that is not an object, invalid UTF-8 or JSON, binary frames,
  deep nesting, long strings) and ends cleanly or by dropping the TCP connection. The
  daemon must never close with 1011 (an error of its own); any ``llm.chat`` it sends is
  answered with a random reply, so a dream meeting a hostile host is fuzzed too.
- MCP: one POST with a random JSON-RPC body (known and unknown methods, tool calls with
  arguments of random types, odd ids, batches, notifications, bodies that are not JSON,
  wrong content types). Every answer must be < 500, and a 200 must be JSON-RPC 2.0 with a
  result or an error.

After the cases, health must answer and the daemon's log must hold no error line. The
checks and what failed are returned as a :class:`ProtocolReport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets

INTERNAL_ERROR_CLOSE = 1011
TOOLS = (
    "recall",
    "remember",
    "update_memory",
    "archive_memory",
    "list_intentions",
    "add_intention",
    "complete_intention",
    "cancel_intention",
    "get_memory",
    "no_such_tool",
)
METHODS = (
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "notifications/initialized",
    "resources/list",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
    "",
    "x" * 300,
)
DREAM_CHAT_WAIT_S = 60.0
"""How long a host that started a dream waits for its llm.chat: a cap for a hang."""
FRAME_TYPES = ("hello", "llm.result", "llm.error", "llm.chat", "llm.cancel", "bogus", "", None)


@dataclass
class ProtocolReport:
    seed: int
    cases: int
    bridge_cases: int = 0
    mcp_cases: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    close_codes: dict[str, int] = field(default_factory=dict)
    chats_answered: int = 0
    failures: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def count(self, table: dict[str, int], key: object) -> None:
        table[str(key)] = table.get(str(key), 0) + 1

    def describe(self) -> str:
        head = (
            f"{self.bridge_cases} bridge and {self.mcp_cases} MCP cases in "
            f"{self.elapsed_s:.1f} s (seed {self.seed}); MCP statuses {self.statuses}, "
            f"bridge close codes {self.close_codes}, {self.chats_answered} llm.chat answered"
        )
        return "\n".join([head, *self.failures[:20]])


# ---------------------------------------------------------------------- values


def _scalar(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            True,
            0,
            -1,
            2**63,
            1.5,
            1e308,
            "",
            "x",
            "é中\u202e\u0000",
            "\ud800",  # a lone surrogate: json.dumps keeps it escaped
            "a" * rng.choice([10, 1000, 100_000]),
        ]
    )


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return _scalar(rng)
    if roll < 0.75:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["a", "id", "type", "", "é"]): _value(rng, depth + 1) for _ in range(3)}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# ---------------------------------------------------------------------- the bridge


def _frame(rng: random.Random, chat_id: str | None) -> str | bytes:
    roll = rng.random()
    if roll < 0.06:
        return b"\x00\xff binary"
    if roll < 0.12:
        return rng.choice(["{", "not json", "[1, 2", '{"type": "hello",}', _nested(5000)])
    if roll < 0.18:
        return json.dumps(_value(rng))  # any JSON: a list, a number, a string
    frame: dict[str, Any] = {"type": rng.choice(FRAME_TYPES)}
    if rng.random() < 0.8:
        frame["id"] = chat_id if chat_id and rng.random() < 0.7 else _scalar(rng)
    kind = frame["type"]
    if kind == "hello":
        frame.update(host=_value(rng), model=_value(rng))
    elif kind == "llm.result":
        message = rng.choice(
            [
                {"role": "assistant", "content": _value(rng)},
                {"role": "assistant", "content": "", "tool_calls": _value(rng)},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": rng.choice(TOOLS), "arguments": _value(rng)},
                        }
                    ],
                },
                _value(rng),
            ]
        )
        frame.update(message=message, usage=_value(rng), finish_reason=_value(rng))
    elif kind == "llm.error":
        frame["error"] = _value(rng)
    else:
        frame["extra"] = _value(rng)
    return json.dumps(frame)


async def _bridge_case(
    url: str,
    headers: dict[str, str],
    rng: random.Random,
    report: ProtocolReport,
    start_dream: Callable[[], Awaitable[bool]] | None = None,
) -> None:
    """One host's conversation of random frames. With ``start_dream``, the dream is started
    once this host is connected, and the host waits for its first ``llm.chat`` (capped for
    a hang, never a race with the machine's speed) before it answers at random."""
    chat_id: str | None = None
    try:
        async with websockets.connect(
            url, additional_headers=headers, open_timeout=30, close_timeout=2, max_size=None
        ) as socket:
            wait = 0.02
            if start_dream is not None and await start_dream():
                wait = DREAM_CHAT_WAIT_S
            for _ in range(rng.randint(1, 6)):
                with contextlib.suppress(TimeoutError):
                    incoming = await asyncio.wait_for(socket.recv(), timeout=wait)
                    wait = 0.02
                    sent = json.loads(incoming)
                    if isinstance(sent, dict) and sent.get("type") == "llm.chat":
                        chat_id = str(sent.get("id"))
                        report.chats_answered += 1
                await socket.send(_frame(rng, chat_id))
            if rng.random() < 0.3:
                socket.transport.abort()  # a host that vanishes mid-conversation
                report.count(report.close_codes, "aborted")
                return
            await socket.close()
            report.count(report.close_codes, socket.close_code)
    except websockets.exceptions.ConnectionClosed as closed:
        code = closed.rcvd.code if closed.rcvd is not None else "none"
        report.count(report.close_codes, code)
        if code in (INTERNAL_ERROR_CLOSE, "none"):  # an error of somnid's, or a crash
            report.failures.append(f"bridge closed with {code}: {closed}")
    except (OSError, websockets.exceptions.InvalidHandshake) as exc:
        report.failures.append(f"bridge connection failed: {type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------- MCP


def _rpc(rng: random.Random) -> Any:
    method = rng.choice(METHODS)
    body: dict[str, Any] = {"jsonrpc": rng.choice(["2.0", "2.0", "2.0", "1.0", None])}
    if rng.random() < 0.85:  # else a notification
        body["id"] = rng.choice([1, "a", None, 1.5, [], {}, 2**70])
    body["method"] = method
    if method == "tools/call":
        body["params"] = {
            "name": rng.choice(TOOLS),
            "arguments": rng.choice(
                [
                    {},
                    {"query": _value(rng)},
                    {"kind": _value(rng), "name": _value(rng), "body": _value(rng)},
                    {"what": _value(rng), "due": _value(rng)},
                    {"intention_id": _value(rng)},
                    _value(rng),
                ]
            ),
        }
    elif method == "initialize" and rng.random() < 0.7:
        body["params"] = {
            "protocolVersion": rng.choice(["2025-06-18", "1999-01-01", _scalar(rng)]),
            "capabilities": _value(rng),
            "clientInfo": {"name": _value(rng), "version": "1"},
        }
    elif rng.random() < 0.5:
        body["params"] = _value(rng)
    return body


def _mcp_request(rng: random.Random) -> tuple[bytes, dict[str, str]]:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    roll = rng.random()
    if roll < 0.08:
        headers["Content-Type"] = rng.choice(["text/plain", "application/x-www-form-urlencoded"])
    elif roll < 0.14:
        headers["Accept"] = rng.choice(["text/html", "*/*"])
    shape = rng.random()
    if shape < 0.1:
        data = rng.choice([b"", b"{", b"\xff\xfe", b"null", _nested(5000).encode()])
    elif shape < 0.2:
        data = json.dumps([_rpc(rng) for _ in range(rng.randint(0, 4))]).encode()
    else:
        data = json.dumps(_rpc(rng)).encode()
    return data, headers


def _check_mcp(answer: httpx.Response, report: ProtocolReport, data: bytes) -> None:
    report.count(report.statuses, answer.status_code)
    sample = data[:200].decode("utf-8", "replace")
    if answer.status_code >= 500:
        report.failures.append(f"MCP {answer.status_code} for {sample}: {answer.text[:300]}")
        return
    if answer.status_code != 200 or not answer.content:
        return
    if not answer.headers.get("content-type", "").startswith("application/json"):
        return  # an event stream answer: the SDK's own framing
    try:
        body = answer.json()
    except ValueError:
        report.failures.append(f"MCP 200 that is not JSON for {sample}: {answer.text[:300]}")
        return
    for item in body if isinstance(body, list) else [body]:
        if not isinstance(item, dict) or item.get("jsonrpc") != "2.0":
            report.failures.append(f"MCP 200 that is not JSON-RPC 2.0 for {sample}: {item}")
        elif "result" not in item and "error" not in item:
            report.failures.append(f"MCP 200 with neither result nor error for {sample}")


# ---------------------------------------------------------------------- the driver


async def fuzz_protocols(
    base_url: str, headers: dict[str, str], *, cases: int, seed: int, dream_every: int = 0
) -> ProtocolReport:
    """``cases`` bridge connections and as many MCP requests, interleaved. With
    ``dream_every``, every that many cases a dream is started with the fuzzing host connected
    (its llm.chat then meets random replies). Health must answer afterwards."""
    rng = random.Random(seed)
    report = ProtocolReport(seed=seed, cases=cases)
    ws_url = base_url.replace("http", "ws", 1) + "/v1/llm/bridge"
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as client:
        for number in range(cases):
            start_dream = None
            if dream_every and number % dream_every == 0:
                message = {"messages": [{"role": "user", "text": f"fuzz turn {number}"}]}
                await client.post(f"/v1/sessions/fuzz-{number}/messages", json=message)
                await client.post(f"/v1/sessions/fuzz-{number}/close")

                async def start_dream() -> bool:
                    run = await client.post("/v1/sleep/run", json={})
                    if run.status_code >= 500:
                        report.failures.append(f"sleep/run {run.status_code}: {run.text[:300]}")
                    return run.status_code == 200 and bool(run.json().get("started"))

            await _bridge_case(ws_url, headers, rng, report, start_dream)
            report.bridge_cases += 1
            data, extra = _mcp_request(rng)
            try:
                answer = await client.post("/mcp", content=data, headers=extra)
            except httpx.HTTPError as exc:
                report.failures.append(f"MCP request failed: {type(exc).__name__}: {exc}")
            else:
                _check_mcp(answer, report, data)
            report.mcp_cases += 1
        await client.post("/v1/sleep/cancel")
        health = await client.get("/v1/health")
        if health.status_code != 200:
            report.failures.append(f"health answered {health.status_code} after the fuzz")
    report.elapsed_s = time.monotonic() - started
    return report
