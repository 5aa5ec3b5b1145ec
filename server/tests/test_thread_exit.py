"""``thread_exit.wait_gone``: a joined thread is waited for until the OS has it no more."""

from __future__ import annotations

import os
import threading

import pytest

from mlxcel.engine.thread_exit import wait_gone


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_a_joined_thread_is_gone_from_the_system_once_waited_for() -> None:
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    task = f"/proc/self/task/{thread.native_id}"
    assert os.path.exists(task)
    assert wait_gone(thread, timeout=0.05) is False  # still running: the wait gives up
    release.set()
    thread.join()
    assert wait_gone(thread) is True
    assert not os.path.exists(task)
