"""A scripted judge: a real HTTP server emulating OpenAI's ``POST /v1/chat/completions``.

It stands in for an LLM judge (and, for end-to-end runs, a policy) in tests: FastAPI + uvicorn on
127.0.0.1 and a free port, in a background thread of the test process. It speaks the subset of
the OpenAI chat-completions API that rlhub uses (``model``, ``messages``, ``temperature``,
``max_tokens``, ``seed`` in; ``choices[0].message.content`` and ``usage`` out) and grades
deterministically, like a careful judge with an answer key:

* **pointwise**: every criterion gets ``lo + round((hi - lo) * F1)``, where F1 is the content-word
  overlap of the candidate with the reference answer (or the grading notes) quoted in the prompt;
  a copy of the reference earns the top score, unrelated text (F1 under 0.15) the bottom;
* **pairwise**: the response with the larger overlap with the grading notes (or the task) wins;
  a difference under 0.05 is a tie.

It reads the criteria, the scale, the nonce-tagged sections and the reply format (JSON or lines)
from the prompt that :mod:`rlhub.verifiers.judge` builds. A request whose system message does not
come from the judge is answered as a **policy**: ``answers[last user message]``, or
``default_answer``.

Modes (set ``judge.mode`` at any time):

``good``        grade as above;
``slow``        sleep ``delay_s`` (default 5 s) first, to overrun a judge deadline;
``malformed``   answer prose that is in neither required format;
``injectable``  like ``good``, but give the top score to any response containing "10/10", the way
                a gullible LLM judge obeys a completion that addresses it;
``flaky``       answer HTTP 503 to the first ``fail_first`` requests, then grade as ``good``;
``biased``      like ``good``, but pairwise always prefer response A, the position bias LLM
                judges are known for.

A **down** judge is a URL with no listener: :func:`down_url`. Counters: ``requests`` (every body
received, in order), ``authorizations`` (their ``Authorization`` headers), ``judge_calls``,
``in_flight`` and ``max_in_flight`` (most requests in progress at once).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

from fastapi import Request  # module level: FastAPI resolves the handler's annotation here

MODES = ("good", "slow", "malformed", "injectable", "flaky", "biased")
UNRELATED = 0.15  # content-word F1 below which a response is off the topic: the bottom score
JUDGE_MARKER = "You are a strict, impartial grader."


def down_url() -> str:
    """An API root on 127.0.0.1 where nothing listens (connections are refused)."""
    from rlhub.serving import refused_port

    return f"http://127.0.0.1:{refused_port()}/v1"


#: Function words a careful grader gives no credit for: any English text shares them.
STOPWORDS = frozenset("""
about after also been before being both could does each from have here into just like many
more most much must only other over same should some such than that their them then there
these they this those through under very were what when where which while will with would
your
""".split())


def words(text: str) -> set[str]:
    """Content words: three or more letters or digits, not a function word."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower())
            if len(w) >= 3 and w not in STOPWORDS and w not in ("and", "the", "for", "are",
                                                                 "was", "you", "not", "but",
                                                                 "can", "its", "our", "how")}


def overlap(a: str, b: str) -> float:
    """F1 of the two texts' content-word sets (:func:`words`)."""
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return 0.0
    return 2 * len(wa & wb) / (len(wa) + len(wb))


def section(text: str, tag: str) -> str | None:
    """The text of the first ``<tag-NONCE>...</tag-NONCE>`` section, or None."""
    opened = re.search(rf"<{tag}-([0-9a-f]+)>\n", text)
    if opened is None:
        return None
    end = text.find(f"\n</{tag}-{opened.group(1)}>", opened.end())
    return text[opened.end():end] if end >= 0 else None


class ScriptedJudge:
    """The server (see the module docstring); use as a context manager or call start/stop."""

    def __init__(self, mode: str = "good", *, delay_s: float = 5.0, fail_first: int = 0,
                 answers: dict[str, str] | None = None, default_answer: str = "I do not know."):
        self.mode = mode
        self.delay_s = delay_s
        self.fail_first = fail_first
        self.answers = dict(answers or {})
        self.default_answer = default_answer
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []  # each request's Authorization header
        self.judge_calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.port = 0  # bound when started
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The API root, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.authorizations.clear()
            self.judge_calls = self.max_in_flight = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedJudge:
        from rlhub import serving

        sock = serving.bind("127.0.0.1", self.port)  # port 0 the first time: any free one
        self.port = sock.getsockname()[1]
        self._server = serving.server(self.app(), sock, log_level="warning", access_log=False,
                                      lifespan="off", timeout_graceful_shutdown=1)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="scripted-judge", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"scripted judge did not start on port {self.port}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- HTTP --------------------------------------------------------------------------------

    def app(self) -> Any:
        from fastapi import FastAPI
        from fastapi.responses import JSONResponse

        app = FastAPI(title="scripted judge (emulates OpenAI /v1/chat/completions)")

        @app.get("/health")
        async def health() -> dict[str, str]:
            return {"status": "ok", "mode": self.mode}

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            body = await request.json()
            with self._lock:
                self.requests.append(body)
                self.authorizations.append(request.headers.get("authorization"))
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                number = len(self.requests)
            try:
                status, text = await self._respond(body, number)
            finally:
                with self._lock:
                    self.in_flight -= 1
            if status != 200:
                return JSONResponse({"error": {"message": text}}, status_code=status)
            return completion_response(body.get("model", ""), text)

        return app

    async def _respond(self, body: dict[str, Any], number: int) -> tuple[int, str]:
        messages = body.get("messages") or []
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        if JUDGE_MARKER not in system:
            user = [m["content"] for m in messages if m.get("role") == "user"]
            return 200, self.answers.get(user[0] if user else "", self.default_answer)
        with self._lock:
            self.judge_calls += 1
        if self.mode == "slow":
            await asyncio.sleep(self.delay_s)
        if self.mode == "flaky" and number <= self.fail_first:
            return 503, "scripted judge: temporarily unavailable"
        if self.mode == "malformed":
            return 200, "I think this answer is pretty good overall, maybe a seven or so."
        return 200, self.grade(messages[-1]["content"])

    # -- grading -----------------------------------------------------------------------------

    def grade(self, prompt: str) -> str:
        """The reply to one judge prompt, in the format the prompt asks for."""
        as_json = "Respond with only a JSON object" in prompt
        if section(prompt, "response-a") is not None:
            winner = self._winner(prompt)
            if as_json:
                return json.dumps({"winner": winner, "reason": "scripted pairwise verdict"})
            return f"WINNER: {winner}\nREASON: scripted pairwise verdict"
        lo, hi = (int(x) for x in re.findall(r"an integer from (-?\d+) to (-?\d+)", prompt)[-1])
        candidate = section(prompt, "candidate") or ""
        key = section(prompt, "reference") or section(prompt, "notes") or ""
        f1 = overlap(candidate, key)
        related = f1 >= UNRELATED
        value = hi if self._gullible(candidate) else lo + round((hi - lo) * f1 * related)
        names = self._criteria(prompt, as_json)
        if as_json:
            return json.dumps({"scores": {n: value for n in names}, "reason": "scripted verdict"})
        if names == [""]:
            return f"SCORE: {value}\nREASON: scripted verdict"
        return "".join(f"SCORE {n}: {value}\n" for n in names) + "REASON: scripted verdict"

    def _gullible(self, text: str) -> bool:
        return self.mode == "injectable" and "10/10" in text

    def _winner(self, prompt: str) -> str:
        if self.mode == "biased":
            return "A"
        a, b = section(prompt, "response-a") or "", section(prompt, "response-b") or ""
        if self._gullible(a) != self._gullible(b):
            return "A" if self._gullible(a) else "B"
        key = section(prompt, "notes") or section(prompt, "task") or ""
        sa, sb = overlap(a, key), overlap(b, key)
        if abs(sa - sb) < 0.05:
            return "tie"
        return "A" if sa > sb else "B"

    @staticmethod
    def _criteria(prompt: str, as_json: bool) -> list[str]:
        """The criterion names of the reply format, read from its statement after the quotes."""
        prompt = prompt[prompt.rfind("</"):]
        if as_json:
            blocks = re.findall(r'\{"scores": \{([^}]*)\}', prompt)  # the last: the format line
            return re.findall(r'"([a-z][a-z0-9_]*)": <int>', blocks[-1]) if blocks else []
        named = re.findall(r"^SCORE ([a-z][a-z0-9_]*): <int>$", prompt, re.MULTILINE)
        return named or [""]


def completion_response(model: str, text: str) -> dict[str, Any]:
    """An OpenAI chat-completions response body carrying ``text``."""
    return {"id": f"chatcmpl-scripted-{time.monotonic_ns()}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": len(text.split()),
                      "total_tokens": len(text.split())}}


@contextmanager
def judge_env(mode: str = "good", *, model: str = "scripted-judge",
              **kwargs: Any) -> Iterator[ScriptedJudge]:
    """Run a :class:`ScriptedJudge` with ``RLHUB_JUDGE_URL``/``RLHUB_JUDGE_MODEL`` pointing at it.

    For contract checks of domains tagged ``judge`` when no real judge is configured.
    """
    import os

    saved = {k: os.environ.get(k) for k in ("RLHUB_JUDGE_URL", "RLHUB_JUDGE_MODEL")}
    with ScriptedJudge(mode, **kwargs) as judge:
        os.environ["RLHUB_JUDGE_URL"], os.environ["RLHUB_JUDGE_MODEL"] = judge.url, model
        try:
            yield judge
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def main(argv: list[str] | None = None) -> None:
    """``python -m rlhub.testing.judge_server [--port N] [--mode M]``: serve until interrupted,
    a stand-in judge (or policy) for trying judged domains without a model."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m rlhub.testing.judge_server",
                                     description=main.__doc__)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--mode", default="good", choices=sorted(MODES))
    args = parser.parse_args(argv)
    judge = ScriptedJudge(args.mode)
    judge.port = args.port
    with judge:
        print(f"scripted judge on {judge.url}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
