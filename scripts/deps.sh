#!/usr/bin/env bash
# Installs the build and test dependencies from Debian's packages (CUDA comes
# from /usr/local/cuda). Safe to re-run; installs only what is missing.
# systemd: only for systemd-analyze in tests/deploy_test.sh (works without
# systemd running as PID 1, e.g. in a CI container). postgresql: the server
# that the PostgreSQL tests start (tests/pg_server.h), libpq-dev its client.
# librsvg2-bin: rsvg-convert, which tests/report_test renders the sweep report
# SVG with. python3-*: the Python client (client/python: grpcio, protobuf;
# setuptools and pip to install it; pytest and tqdm for its tests and progress
# bar; python3-dev for its C module, tuned._fastcall; python3-torch, torch 1.13
# on the CPU, for the torch parts of the package's tests and the docs' Python
# blocks, on the stand-in GPU: docs/development.md, "Docs that run"). libxgboost-dev: the model strategy's cost model (server/search/).
# libtomlplusplus-dev, nlohmann-json3-dev, libmuparser-dev, libssl-dev: kernel spec files
# (TOML, JSON), their expressions and content hash (families/spec/).
# libhwloc-dev: the cores and their hardware threads, where the daemon keeps
# its GetBest threads apart from its other work (server/common/cpus.h).
# ccache: scripts/build.sh and scripts/fuzz.sh compile through it (scripts/ccache_env.sh).
# Arguments: more packages to install the same way (scripts/fuzz.sh: clang).
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libgrpc++-dev libprotobuf-dev protobuf-compiler
      protobuf-compiler-grpc libabsl-dev libsqlite3-dev sqlite3 libgtest-dev libcli11-dev
      libspdlog-dev python3 prometheus-cpp-dev libsystemd-dev openssl python3-yaml systemd
      libpq-dev postgresql librsvg2-bin libxgboost-dev libhwloc-dev ccache
      libtomlplusplus-dev nlohmann-json3-dev libmuparser-dev libssl-dev
      python3-grpcio python3-protobuf python3-setuptools python3-pip python3-pytest python3-tqdm
      python3-dev python3-torch
      "$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[[ -x /usr/local/cuda/bin/nvcc || -f /usr/local/cuda/include/nvrtc.h ]] ||
  { echo "deps.sh: the CUDA toolkit is expected at /usr/local/cuda" >&2; exit 1; }
