#!/usr/bin/env bash
# ctest's python_client_test: installs client/python as `pip install
# --no-build-isolation --no-deps` does (its build generates the gRPC stubs from
# proto/ with protoc + grpc_python_plugin) into BUILD_DIR/python/site, then runs
# pytest on client/python/tests against the real daemon of BIN_DIR (compile-only;
# one test gives it BUILD_DIR/fake_worker, tests/fake_worker.cc, as its GPU worker).
# Usage: run.sh SOURCE_DIR BIN_DIR BUILD_DIR [pytest args...]
# The interpreter is $TUNED_PYTHON, else Debian's /usr/bin/python3 (where
# scripts/deps.sh installs python3-grpcio, -protobuf, -pytest), else python3.
set -euo pipefail
src=$1 bin=$2 tests=$3 work=$3/python; shift 3
py=${TUNED_PYTHON:-}
if [[ -z $py ]]; then
  for p in /usr/bin/python3 python3; do
    if "$p" -c 'import grpc, google.protobuf, pytest' 2>/dev/null; then py=$p; break; fi
  done
fi
[[ -n $py ]] || { echo "run.sh: no python3 with grpc, protobuf and pytest (bash scripts/deps.sh)" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work/src/client"
# A copy, so that setuptools' build directory stays out of the source tree.
cp -r "$src/client/python" "$work/src/client/python"
rm -rf "$work/src/client/python/build" "$work/src/client/python"/*.egg-info
cp -r "$src/proto" "$work/src/proto"
cp -r "$src/core" "$work/src/core"  # the C launcher, compiled into tuned._fastcall
PIP_DISABLE_PIP_VERSION_CHECK=1 "$py" -m pip install -q --no-index --no-build-isolation --no-deps \
  --root-user-action=ignore --target "$work/site" "$work/src/client/python"
cd "$work"
# Where Python's headers are (Debian: python3-dev), the install built the C
# module tuned._fastcall: its test then requires it.
fastcall=$("$py" -c 'import os, sysconfig; print(int(os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))))')
[[ $fastcall == 1 ]] && export TUNED_TEST_FASTCALL=1
PYTHONPATH=$work/site TUNED_BIN_DIR=$bin TUNED_TEST_FAKE_WORKER=$tests/fake_worker exec "$py" -m pytest -p no:cacheprovider -v -rs \
  "$src/client/python/tests" "$@"
