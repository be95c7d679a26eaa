"""The task each ASGI request runs in (ASGIGateway.run, `_peregrine.run_asgi`).

Each request's application runs in an asyncio Task of its own, as on other
servers: `asyncio.current_task()` is that task (anyio, hence Starlette and
FastAPI, need one). The server makes it with `asyncio.Task` directly, all
named "peregrine-asgi" (no per-request "Task-<n>" name to format), unless
the application installed a task factory (`loop.set_task_factory`), which
is then used as `loop.create_task` would. How the task ended reaches the
server from inside it: an exception raised after the response is logged
with its traceback, and the server serves on.

Every test runs on uvloop and on plain asyncio (the `loop` fixture).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("asgi_support")
from asgi_support import LOOPS, ONE_WORKER, get_json, logged_with_traceback  # noqa: E402

pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from conftest import ServerPool


def test_each_request_runs_in_a_task_of_its_own(server_pool: ServerPool, loop: str) -> None:
    server = server_pool.get("asgi_raw:task_app", *LOOPS[loop], *ONE_WORKER)
    for _ in range(3):
        seen = get_json(server, "/")
        assert seen["in_task"] is True
        assert seen["name"] == "peregrine-asgi"


def test_a_task_factory_the_application_installed_makes_the_request_tasks(server_pool: ServerPool, loop: str) -> None:
    server = server_pool.get("asgi_raw:task_factory_app", *LOOPS[loop], *ONE_WORKER)
    first = get_json(server, "/")
    second = get_json(server, "/")
    assert first["in_task"] is True
    # The factory made each request's task (the lifespan's task came before it was installed).
    assert second["factory_tasks"] == first["factory_tasks"] + 1 >= 2


def test_an_exception_after_the_response_is_logged_and_the_server_serves_on(server_pool: ServerPool, loop: str) -> None:
    server = server_pool.get("asgi_raw:task_app", *LOOPS[loop], *ONE_WORKER)
    # The response went out before the exception, whole.
    assert get_json(server, "/raise")["in_task"] is True
    assert logged_with_traceback(server, "raised after the response, on purpose")
    assert get_json(server, "/")["in_task"] is True
