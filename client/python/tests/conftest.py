"""The real `tuned` daemon for the tests, in compile-only mode (no GPU): its
binary from $TUNED_BIN_DIR (tuned and tuned-worker; client/python/tests/run.sh
sets it), its socket, database and log in a temporary directory, started
without the TUNED_* variables of the test's own environment but
TUNED_WORK_PRIORITY (scripts/test.sh: its compiles at normal priority)."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest


def bin_dir():
    d = os.environ.get("TUNED_BIN_DIR")
    if not d or not (Path(d) / "tuned").is_file():
        pytest.fail("set TUNED_BIN_DIR to the directory of the built tuned and tuned-worker")
    return Path(d)


class Daemon:
    """`tuned --compile-only` with its socket at dir/run/tuned/gpu<gpu>.sock,
    where XDG_RUNTIME_DIR=dir/run makes the client find it."""

    def __init__(self, dir, gpu=0, flags=()):
        self.dir = Path(dir)
        self.runtime_dir = self.dir / "run"
        self.socket = self.runtime_dir / "tuned" / f"gpu{gpu}.sock"
        self.address = f"unix:{self.socket}"
        self.log = self.dir / "tuned.log"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("TUNED_") or k == "TUNED_WORK_PRIORITY"}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [str(bin_dir() / "tuned"), "--gpu", str(gpu), "--compile-only",
                 "--socket", str(self.socket), "--db", str(self.dir / "tuned.db"), *flags],
                stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 30
        while "serving on unix:" not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"tuned did not start:\n{self.log.read_text()}")
            time.sleep(0.05)

    def port(self):
        """The TCP port of --listen 127.0.0.1:0."""
        m = re.search(r"listening tcp 127\.0\.0\.1:(\d+)", self.log.read_text())
        return int(m.group(1)) if m else 0

    def stop(self):
        """SIGTERM; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="session")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("daemon"))
    yield d
    code = d.stop()
    assert code == 0, f"tuned exited {code} after SIGTERM:\n{d.log.read_text()}"


@pytest.fixture
def client(daemon):
    import tuned

    with tuned.Client(daemon.address) as c:
        yield c
