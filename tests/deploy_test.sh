#!/usr/bin/env bash
# Checks the deployment files of deploy/ without deploying them: the systemd
# unit with `systemd-analyze verify` (works without systemd as PID 1; any
# warning fails) and the sysusers file with `systemd-sysusers --dry-run`;
# the config files and the Kubernetes ConfigMap through the daemon's own
# parser (`tuned --print-config`); the Kubernetes manifests parsed with
# python3-yaml and their key fields asserted; the Containerfile's stages.
# No schema validator for Kubernetes is packaged in Debian, and no container
# engine runs here: the image itself is not built by this test.
# Usage: deploy_test.sh SOURCE_DIR BIN_DIR
set -u
src=$(realpath "$1") bin=$(realpath "$2")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0; passes=0
log() { echo "deploy_test: $*"; }
ok() { passes=$((passes + 1)); }
fail() { log "FAIL $*"; fails=$((fails + 1)); }

# systemd unit: the instance as systemd would load it, ExecStart pointed at
# the built daemon (verify checks that the binary exists).
sed "s#/usr/local/bin/tuned #$bin/tuned #" "$src/deploy/systemd/tuned-autotune@.service" \
  > "$dir/tuned-autotune@0.service"
out=$(cd "$dir" && systemd-analyze verify ./tuned-autotune@0.service 2>&1); rc=$?
if [[ $rc -eq 0 && -z $out ]]; then ok; else fail "systemd-analyze verify: exit $rc: $out"; fi
# ...and it does catch a broken unit (the check can fail).
sed 's/^Type=notify/Type=notifyy/' "$dir/tuned-autotune@0.service" > "$dir/broken@0.service"
out=$(cd "$dir" && systemd-analyze verify ./broken@0.service 2>&1)
if [[ $out == *"Failed to parse service type"* ]]; then ok; else fail "broken unit passed: $out"; fi
unit="$src/deploy/systemd/tuned-autotune@.service"
for want in '^Type=notify$' '^StateDirectory=tuned-autotune$' '^RuntimeDirectory=tuned-autotune$' \
            '^RuntimeDirectoryMode=0750$' '^ExecStart=.* --socket %t/tuned-autotune/gpu%i.sock ' '^Environment=TUNED_DB=%S/tuned-autotune/gpu%i.db$' \
            '^EnvironmentFile=-/etc/tuned-autotune/database.env$'; do
  if grep -qE "$want" "$unit"; then ok; else fail "unit lacks $want"; fi
done
# The sandbox's namespaces (the unshare of server/worker/sandbox.cc) are ones the unit allows:
# RestrictNamespaces=yes would turn the mount-namespace sandbox off where Landlock is missing.
allowed=$(sed -n 's/^RestrictNamespaces=//p' "$unit")
declare -A ns_name=([CLONE_NEWUSER]=user [CLONE_NEWNS]=mnt [CLONE_NEWNET]=net [CLONE_NEWPID]=pid
                    [CLONE_NEWIPC]=ipc [CLONE_NEWUTS]=uts [CLONE_NEWCGROUP]=cgroup)
needed=$(grep -oE 'unshare\([^)]*\)' "$src/server/worker/sandbox.cc" | grep -oE 'CLONE_NEW[A-Z]+' | sort -u)
[[ -n $needed ]] || fail "no unshare(CLONE_NEW...) found in server/worker/sandbox.cc"
for flag in $needed; do
  if [[ " $allowed " == *" ${ns_name[$flag]} "* ]]; then ok
  else fail "RestrictNamespaces=$allowed forbids ${ns_name[$flag]} ($flag), which the sandbox enters"; fi
done
out=$(systemd-sysusers --dry-run --root="$dir" "$src/deploy/systemd/tuned-autotune.sysusers" 2>&1); rc=$?
if [[ $rc -eq 0 && $out == *tuned-autotune* ]]; then ok; else fail "systemd-sysusers: exit $rc: $out"; fi
# Nothing may use the paths of Debian's unrelated tuned power daemon (comments may name them).
if grep -rnE '(/etc|/var/lib|/run)/tuned([/" ]|$)|[^-]tuned\.service' "$src/deploy" | grep -vE ':[0-9]+: *#'; then
  fail "deploy/ uses a path of Debian's tuned daemon"
else ok; fi

# Config files: every key is one the daemon knows.
if "$bin/tuned" --config "$src/deploy/config/tuned.toml" --print-config > "$dir/cfg.txt" &&
   grep -q '^drain-seconds=5' "$dir/cfg.txt"; then ok; else fail "deploy/config/tuned.toml"; fi
if (set -a; . "$src/deploy/config/gpu0.env"; set +a; "$bin/tuned" --print-config > /dev/null); then ok
else fail "deploy/config/gpu0.env"; fi
if (set -a; . "$src/deploy/config/database.env"; set +a
    "$bin/tuned" --print-config | grep -q '^db="postgresql://tuned:\*\*\*@db.example.com'); then ok
else fail "deploy/config/database.env"; fi

# Kubernetes: parse every document and check what the issue asks for.
python3 - "$src/deploy/kubernetes/daemonset.yaml" "$dir/k8s.toml" <<'PY' && ok || fail "daemonset.yaml"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"]: d for d in docs}
assert set(kinds) == {"ConfigMap", "DaemonSet"}, kinds.keys()
ds = kinds["DaemonSet"]
assert ds["apiVersion"] == "apps/v1"
spec = ds["spec"]["template"]["spec"]
assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
c = spec["containers"][0]
assert c["resources"]["limits"]["nvidia.com/gpu"] == 1, c["resources"]
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
toml = kinds["ConfigMap"]["data"]["tuned.toml"]
assert f'health-listen = "0.0.0.0:{ports["health"]}"' in toml
assert f'listen = "0.0.0.0:{ports["grpc"]}"' in toml
assert f'metrics-listen = "0.0.0.0:{ports["metrics"]}"' in toml
for probe in ("readinessProbe", "livenessProbe"):
    assert c[probe]["grpc"]["port"] == ports["health"], c[probe]
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
volumes = {v["name"]: v for v in spec["volumes"]}
assert set(mounts) <= set(volumes), (mounts, volumes)
assert mounts["state"] == "/var/lib/tuned-autotune" and "hostPath" in volumes["state"]
assert "--config" in c["args"] and c["args"][c["args"].index("--config") + 1].startswith(mounts["config"] + "/")
for key, mount in (("tls-cert", "tls"), ("tls-key", "tls"), ("token-file", "tokens")):
    assert f'{key} = "{mounts[mount]}/' in toml, key
assert c["securityContext"]["runAsNonRoot"] is True
env = {e["name"]: e for e in c.get("env", [])}
ref = env["TUNED_DB"]["valueFrom"]["secretKeyRef"]
assert ref["name"] == "tuned-autotune-db" and ref["key"] == "url" and ref["optional"] is True, ref
open(sys.argv[2], "w").write(toml)
PY
if "$bin/tuned" --config "$dir/k8s.toml" --print-config > "$dir/k8s.txt" &&
   grep -q '^listen="0.0.0.0:50051"' "$dir/k8s.txt"; then ok; else fail "the ConfigMap's tuned.toml"; fi

# Containerfile: a multi-stage build from NVIDIA's CUDA images, the runtime stage last.
python3 - "$src/deploy/container/Containerfile" <<'PY' && ok || fail "Containerfile"
import re, sys
lines = [l.strip() for l in open(sys.argv[1]) if l.strip() and not l.lstrip().startswith("#")]
froms = [l for l in lines if l.startswith("FROM ")]
assert len(froms) == 2, froms
assert re.match(r"FROM nvidia/cuda:\$\{CUDA_VERSION\}-devel-\$\{BASE\} AS build$", froms[0]), froms[0]
assert re.match(r"FROM nvidia/cuda:\$\{CUDA_VERSION\}-runtime-\$\{BASE\}$", froms[1]), froms[1]
assert any(l.startswith("COPY --from=build /out/bin/") for l in lines)
assert any(l.startswith("USER ") and not l.startswith("USER 0") for l in lines)
assert any(l.startswith('ENTRYPOINT ["/usr/local/bin/tuned"') for l in lines)
PY
# ...whose runtime stage has the toolkit's headers where the compiler looks for them
# (server/worker/compiler.cc: /usr/local/cuda/include, with cuda_fp16.h), since kernels include them.
python3 - "$src/deploy/container/Containerfile" "$src/server/worker/compiler.cc" <<'PY' && ok || fail "Containerfile: CUDA headers"
import re, sys
text = open(sys.argv[1]).read()
runtime = text[text.rindex("\nFROM "):]
m = re.search(r"^COPY --from=build (\S+) /usr/local/cuda/include/?$", runtime, re.M)
assert m, "the runtime stage copies no headers to /usr/local/cuda/include"
build = text[:text.rindex("\nFROM ")]
assert re.search(r"cp -rL /usr/local/cuda/include/\. " + re.escape(m.group(1).rstrip("/")), build), m.group(1)
assert '"/usr/local/cuda/include"' in open(sys.argv[2]).read(), "the compiler no longer looks there"
PY

log "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
