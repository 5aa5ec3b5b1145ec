"""Waiting for a thread to be gone from the operating system, not only from Python.

``Thread.join`` returns once the thread's Python code has finished; the thread then runs its
C++ thread-local destructors. MLX's Python binding has one that takes the interpreter lock: if
the process is already finalizing by then, taking the lock ends the thread by unwinding through
a ``noexcept`` destructor, and the process aborts ("terminate called without an active
exception", exit status 134). Seen in about one exit in six of a process that had just stopped
the engine.
"""

from __future__ import annotations

import os
import threading
import time


def wait_gone(thread: threading.Thread, timeout: float = 2.0) -> bool:
    """After ``thread`` has been joined, wait (the interpreter lock released) until its OS thread
    has exited; True once it has, or where the system does not tell (no ``/proc``)."""
    task = f"/proc/self/task/{thread.native_id}"
    if thread.native_id is None or not os.path.isdir("/proc/self/task"):
        return True
    deadline = time.monotonic() + timeout
    while os.path.exists(task):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True
