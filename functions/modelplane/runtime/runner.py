"""The FunctionRunner servicer that composes in the serving process (``--workers 1``).

Calls run on a pool of threads, not on the server's event loop: a slow call (a fleet,
a costly selector) never holds a cheap one back, and the loop keeps accepting calls.
(The SDK's runners compose on the event loop itself.) A call whose client deadline
passes (or whose client gives up) stops at its next safe point and ends with
DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import grpc
from crossplane.function import logging
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from modelplane import registry
from modelplane.domain import dra as cel
from modelplane.runtime import dispatch
from modelplane.runtime.answers import Answers
from modelplane.runtime.limits import COMPOSE_THREADS


class FunctionRunner(grpcv1.FunctionRunnerServiceServicer):
    """Serves the composition functions of one or more Modelplane kinds.

    Every kind runs the same image; a Function package decides which kinds its pods
    accept, so one kind's load never slows another's.
    """

    def __init__(
        self,
        composers: Mapping[str, registry.Compose] | None = None,
        *,
        threads: int = COMPOSE_THREADS,
    ) -> None:
        """Create a runner for the given kinds (default: every registered kind)."""
        self.composers = dict(registry.COMPOSERS if composers is None else composers)
        self.log = logging.get_logger()
        self._threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._running: set[cel.CallBudget] = set()
        self.answers: Answers[fnv1.RunFunctionResponse] = Answers()

    async def RunFunction(  # noqa: N802  # the gRPC method name
        self, req: fnv1.RunFunctionRequest, context: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        """Run the function for the request's composite kind on the thread pool.

        A call whose deadline passes, or whose client cancels it, stops computing;
        the client sees DEADLINE_EXCEEDED (or has gone already).
        """
        budget = cel.CallBudget(dispatch.deadline_of(context))
        work = functools.partial(self._answer, req, budget)
        with self._lock:
            self._running.add(budget)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor(), work)
        except asyncio.CancelledError:
            budget.cancel()  # the client went away: stop the work, nobody waits for it
            raise
        except cel.Cancelled:
            self.log.bind(tag=req.meta.tag).info("call stopped: its deadline passed")
            if context is None:
                raise
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, dispatch.DEADLINE_MESSAGE)
            raise  # abort raises; this is for the type checker
        finally:
            with self._lock:
                self._running.discard(budget)

    def _answer(
        self, req: fnv1.RunFunctionRequest, budget: cel.CallBudget
    ) -> fnv1.RunFunctionResponse:
        """The response sent before to a request named the same (a copy: what a caller
        does with it is its own), else composed."""

        def compose() -> tuple[fnv1.RunFunctionResponse, fnv1.RunFunctionResponse, int]:
            rsp = dispatch.run(req, self.composers, self.log, budget)
            return rsp, rsp, rsp.ByteSize()

        rsp, again = self.answers.answer(req, compose)
        if not again:
            return rsp
        answer = fnv1.RunFunctionResponse()
        answer.CopyFrom(rsp)
        return answer

    def cancel_all(self) -> None:
        """Stop every call in progress at its next safe point (the server is stopping)."""
        with self._lock:
            for budget in self._running:
                budget.cancel()

    def close(self) -> None:
        """Cancel what runs and release the threads."""
        self.cancel_all()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="compose")
            return self._pool
