"""Waits for kernel messages that a missed wake-up cannot stall: jupyter_client's ``AsyncZMQSocketChannel.get_msg``
as a series of short polls, for every notebook this project executes (the labs' renders in ``runners.core``, the
book build through ``book/_ext/x4_pagefix.py``).

Used by: runners/core.py (render), book/_ext/x4_pagefix.py (make book).
"""
from __future__ import annotations

import contextlib

#: how long one wait for a kernel message may block before the socket is polled afresh
POLL_SLICE_S = 0.5


@contextlib.contextmanager
def sliced_kernel_waits(slice_s: float = POLL_SLICE_S):
    """Make every wait for a kernel message (jupyter_client's ``AsyncZMQSocketChannel.get_msg``) a series of
    short polls. Why: nbclient waits for a cell's ``execute_reply`` with one ``poll(timeout=cell timeout)`` on
    the shell socket, an asyncio zmq socket whose wake-up is edge-triggered (ZMQ_FD). When the reply lands while
    the same event loop is busy with the widget cell's burst of iopub comm messages, as on a loaded machine or
    with two renders at once, the edge is consumed and the poll sleeps out the whole cell timeout (300 s) although
    the reply is queued. A fresh poll reads the socket's level (ZMQ_EVENTS) first, so slicing the wait bounds a
    missed wake-up to ``slice_s``; the total timeout is unchanged.
    Reproduced (2026-11-26, ipykernel 7.4.0, jupyter_client 8.10.0, pyzmq 27.3.0, nbclient 0.11.0, 2 cores):
    three renders of Lab 00 at once with one busy process beside them, unsliced, all spent exactly 300.0 s in
    ``page.roofline_explorer()`` and then finished without error (pyzmq's poll checks the socket once more when
    its timeout fires, and finds the reply); the kernel was idle and answered a fresh client in 9 ms, so the
    missed wake-up is the client's. Sliced, the same three took 1.6-1.8 s in that cell. The same symptom is
    nbclient#312 (an ipywidgets cell "sometimes blocks"). tests/runners/test_runners_core.py renders a widget
    notebook six times at once and fails without this slicing."""
    from jupyter_client.channels import AsyncZMQSocketChannel
    original = AsyncZMQSocketChannel.get_msg
    AsyncZMQSocketChannel.get_msg = _sliced(original, slice_s)
    try:
        yield
    finally:
        AsyncZMQSocketChannel.get_msg = original


def _sliced(original, slice_s: float):
    from queue import Empty
    from time import monotonic

    async def get_msg(self, timeout: float | None = None):
        deadline = None if timeout is None else monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - monotonic())
            try:
                return await original(self, timeout=slice_s if left is None else min(slice_s, left))
            except Empty:
                if deadline is not None and monotonic() >= deadline:
                    raise
    get_msg.x4_sliced, get_msg.__wrapped_original__ = True, original
    return get_msg


def install(slice_s: float = POLL_SLICE_S) -> None:
    """Slice the waits for the rest of this process (the book build's Sphinx process); once only."""
    from jupyter_client.channels import AsyncZMQSocketChannel
    if not getattr(AsyncZMQSocketChannel.get_msg, "x4_sliced", False):
        AsyncZMQSocketChannel.get_msg = _sliced(AsyncZMQSocketChannel.get_msg, slice_s)
