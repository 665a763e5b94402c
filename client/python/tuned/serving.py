"""Serving at torch's dispatcher: the filler of the served-kernel table.

tuned._torchcall (C++: tuned/_serving.cpp, built where pip found torch)
registers the operators tuned::linear(x, weight, bias, math) and
tuned::mm(a, b, math), and holds the table they look up, keyed by shape,
dtype, the operands' layouts, math mode, epilogue and device. A hit launches
the served kernel; a miss runs torch's own kernel and queues the key. The
filler, a thread of this process started by tuned.optimize and
tuned.enable (start), takes each queued key, asks the daemon for it
(GetBest, tune_if_missing) and fills the entry: the kernel (loaded and its
launch prepared once, tuned.Kernel), or torch's own kernel where the daemon
serves cuBLAS, or, where nothing near is tuned or the daemon does not
answer, torch's own kernel until RETRY_SECONDS have passed. Nothing the
daemon says reaches the caller: a call never waits for it and never raises
for its sake.
"""

import threading
import time
import warnings

import grpc

from . import driver
from .client import TunedError

RETRY_SECONDS = 30.0
# A failure of the daemon that is asked again later: nothing near is tuned,
# or it is not there, or slow.
SURVIVED = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE,
            grpc.StatusCode.DEADLINE_EXCEEDED)
# Whether start() runs the filler thread (the tests fill with drain()).
BACKGROUND = True

_lock = threading.Lock()
_thread = None
_client = None  # the tuned.Client the filler asks (None: the daemon of the key's GPU)
_held = {}  # key -> the tuned.Kernel its entry launches, kept loaded for the process's life
_filled = 0  # keys filled (or failed) so far, by the thread and drain()
_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


_extension = None


def extension():
    """tuned._torchcall where it was built with serving (importing it imports
    torch), else None; the first call also opens the driver
    (tuned._fastcall.init: its launches and its capture test of a miss)."""
    global _extension
    if _extension is None:
        try:
            import torch  # noqa: F401 (the extension's libraries need torch loaded first)

            from . import _torchcall
            from .driver import fastcall
        except ImportError:
            _extension = False
        else:
            _extension = _torchcall if hasattr(_torchcall, "next_miss") else False
            if _extension:
                fastcall.init()
    return _extension or None


def start(client=None):
    """The extension (None where it is not built), with the filler thread
    started once per process; `client`, where given, the tuned.Client it asks
    from now on."""
    global _thread, _client
    tc = extension()
    if tc is None:
        return None
    with _lock:
        if client is not None:
            _client = client
        if _thread is None and BACKGROUND:
            _thread = threading.Thread(target=_run, args=(tc,), name="tuned-serving", daemon=True)
            _thread.start()
    return tc


def _run(tc):
    while True:
        key = tc.next_miss(1.0)
        if key is not None:
            fill_quietly(tc, key)


def drain(client=None):
    """Fills every queued key now, in this thread; returns [(key, outcome)]
    (fill's outcomes, "failed" for an error of the daemon's or the driver's)."""
    tc = extension()
    done = []
    while (key := tc.next_miss(0.0)) is not None:
        done.append((key, fill_quietly(tc, key, client)))
    return done


def wait_idle(timeout_s=600.0):
    """Waits until every key queued so far has been filled (by the thread
    or drain()), at most timeout_s seconds; whether they were. For a
    benchmark's warm-up: the calls after it find their entries."""
    deadline = time.monotonic() + timeout_s
    tc = extension()
    while _filled < tc.stats()["misses"]:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def fill_quietly(tc, key, client=None):
    """fill(), an error of the daemon's or the driver's a RuntimeWarning and
    torch's own kernel until RETRY_SECONDS have passed."""
    global _filled
    try:
        return fill(tc, key, client)
    except Exception as e:  # noqa: BLE001 (a call never raises for the daemon's sake)
        warnings.warn(f"tuned: serving {key} failed: {e}; torch runs it", RuntimeWarning)
        tc.put_torch(key, RETRY_SECONDS)
        return "failed"
    finally:
        with _lock:
            _filled += 1


def fill(tc, key, client=None):
    """Asks the daemon for `key` (m, n, k, dtype, layout, math, epilogue,
    device index; -1: the CPU, with the tests' stand-in driver) and fills
    its entry. Returns "kernel" (the served kernel launches), "torch"
    (cuBLAS serves: torch's own kernel, for good) or "retry" (nothing near
    is tuned, or the daemon does not answer: torch's own kernel, asked
    again after RETRY_SECONDS). Another TunedError raises."""
    import torch

    from . import ops

    m, n, k, dtype, layout, math, epilogue, index = key
    device = torch.device("cpu") if index < 0 else torch.device("cuda", index)
    try:
        route = ops._new_route(m, n, k, device, math, layout, False, False, True,
                               client or _client, bias_shape=(n,) if epilogue == "bias" else None,
                               dtype=getattr(torch, _DTYPES[dtype]))
    except TunedError as e:
        if e.code not in SURVIVED:
            raise
        tc.put_torch(key, RETRY_SECONDS)
        return "retry"
    kernel = route.kernel
    if kernel is None:
        tc.put_torch(key, -1.0)
        return "torch"
    launcher = kernel._prepare()
    if len(launcher.fast) != (6 if epilogue == "bias" else 5):
        tc.put_torch(key, -1.0)
        return "torch"
    params = b"".join(bytes(ctype(value)).ljust(8, b"\0") for ctype, value in launcher.template)
    _held[key] = kernel
    tc.put_kernel(key, launcher.fn, launcher.ctx, launcher.plan, params, launcher.fast,
                  kernel._prescale)
    return "kernel"
