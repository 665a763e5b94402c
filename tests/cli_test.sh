#!/usr/bin/env bash
# End to end as a user types it, without a GPU: starts the real daemon in
# compile-only mode on a private socket and drives it with tunectl.
# Usage: cli_test.sh BIN_DIR
set -u
bin=$1
dir=$(mktemp -d)
export XDG_RUNTIME_DIR=$dir/run XDG_STATE_HOME=$dir/state
unset TUNED_SERVER
fails=0; passes=0
log() { echo "cli_test: $*"; }
check() {  # check NAME EXPECTED_EXIT PATTERN -- CMD...
  local name=$1 want=$2 pattern=$3; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [[ $rc -ne $want ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    log "FAIL $name: exit $rc (want $want), output:"; echo "$out" | head -20
    fails=$((fails + 1))
  else
    passes=$((passes + 1))
  fi
}
usage() {  # usage NAME PATTERN -- CMD...: exit 2, one line on stderr ending in a pointer to --help
  local name=$1 pattern=$2; shift 3
  local out rc
  out=$("$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne 2 || $(wc -l <<<"$out") -ne 1 ]] || ! grep -qE -- "^tunectl: $pattern \(see 'tunectl[a-z ]*--help'\)$" <<<"$out"; then
    log "FAIL $name: exit $rc (want 2, one line ending in the --help pointer), stderr:"; echo "$out" | head -20
    fails=$((fails + 1))
  else
    passes=$((passes + 1))
  fi
}

"$bin/tuned" --gpu 0 --compile-only > "$dir/tuned.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [[ -S $dir/run/tuned/gpu0.sock ]] && break; sleep 0.1; done
[[ -S $dir/run/tuned/gpu0.sock ]] || { log "daemon did not start"; cat "$dir/tuned.log"; exit 1; }

T=$bin/tunectl
check device 0 'compile-only' -- "$T" device
check device-json 0 '"cc_major": 9' -- "$T" device --json
check prior-off 0 'no prior: off' -- "$T" prior
check zero-dim 1 'M must be at least 1' -- "$T" sweep 0 64 64
check negative-dim 1 'K must be at least 1' -- "$T" sweep 64 64 -5
usage wrong-rank 'sgemm takes 3 dimensions \(M, N, K\), got 2' -- "$T" sweep 64 64
usage overflow "dims: '99999999999999999999999' is not a 64-bit whole number" -- "$T" sweep 64 64 99999999999999999999999
# Any other name than a built-in family's goes to the daemon (a kernel spec's name).
check unknown-family 1 "family 'conv'" -- "$T" sweep --family conv 64 64
usage version-builtin "--version names a kernel spec's version; transpose is a built-in family" -- \
  "$T" sweep --family transpose --version abc 64 64
# Usage errors (clig.dev): exit 2, one line, a pointer to --help; nothing reaches the daemon.
usage not-a-number "dims: 'abc' is not a 64-bit whole number" -- "$T" sweep abc 1 1
usage no-dims 'dims is required' -- "$T" best
usage no-command 'a command is required' -- "$T"
usage unknown-command "unknown command 'bogus'" -- "$T" bogus
usage unknown-flag 'The following argument was not expected: --nope' -- "$T" sweep 1 2 3 --nope
usage bad-id "id: 'x' is not a 64-bit whole number" -- "$T" job x
usage bad-limit '--limit: must be at least 1, got 0' -- "$T" jobs --limit 0
usage bad-top '--top: must be at least 0, got -1' -- "$T" results 1 1 1 --top -1
usage bad-gpu '--gpu: must be at least 0, got -1' -- "$T" --gpu -1 jobs
usage no-value '--server: 1 required TEXT missing' -- "$T" jobs --server
usage report-no-out '--out is required' -- "$T" report 1 1 1
check help 0 'Exit status: 0 done; 1 .* 2 a usage error' -- "$T" --help
check untuned-best 1 'no tuned kernel' -- "$T" best 1024 1024 1024
check unknown-job 1 'not found' -- "$T" job 4242
check unknown-cancel 1 'not found' -- "$T" cancel 4242
check queue 0 'job 1 queued: transpose f32 96x40' -- "$T" sweep --family transpose 96 40
check wait 0 'state +done' -- "$T" sweep --family transpose 33 17 --wait
# Progress lines reach a pipe as plain lines (a line a state change or 10%, each flushed).
check watch-pipe 0 '^job 2 done: [0-9]+/[0-9]+ done, 0 failed, 0 left' -- sh -c "'$T' watch 2 | cat"
check job 0 'configs +[0-9]+: [0-9]+ done, 0 failed, 0 left' -- "$T" job 2
check jobs 0 '^2 +transpose f32 33x17 +done' -- "$T" jobs
check jobs-json 0 '"state": "JOB_DONE"' -- "$T" jobs --json
check results 0 'transpose_.* +compiled' -- "$T" results --family transpose 33 17 --top 3
# Strategies and budgets (server/search/): accepted, stored, shown; bad ones
# refused with INVALID_ARGUMENT's message, nothing queued.
check strategy-queue 0 'queued: sgemm f32 64x64x64, [0-9]+ configs .*, model, budget 10s' -- \
  "$T" sweep 64 64 64 --strategy model --budget 10s
check strategy-job 0 'strategy +model, budget 10s' -- "$T" job 3
check strategy-jobs 0 '^3 +sgemm f32 64x64x64 +[a-z]+ +model, budget 10s' -- "$T" jobs
# the daemon's default strategy: model (tuned --strategy)
check strategy-configs 0 'model, budget 5 configs' -- "$T" sweep --family transpose 40 96 --budget 5
check strategy-json 0 '"budget_configs": "5"' -- "$T" job 4 --json
check strategy-unknown 1 "unknown strategy 'bogus' \(known: exhaustive, model\)" -- \
  "$T" sweep 64 64 64 --strategy bogus
check budget-zero 1 "bad budget '0': must be above 0" -- "$T" sweep 64 64 64 --budget 0
check budget-negative 1 "bad budget '-2s': must be above 0" -- "$T" sweep 64 64 64 --budget=-2s
check budget-unit 1 "bad budget '10h'" -- "$T" sweep 64 64 64 --budget 10h
check strategy-nothing-queued 0 '^4 +transpose' -- "$T" jobs --limit 1
check daemon-bad-strategy 2 'strategy' -- "$bin/tuned" --gpu 3 --compile-only --strategy bogus
check daemon-bad-budget 2 "bad budget '0s'" -- "$bin/tuned" --gpu 3 --compile-only --budget 0s
check dump-empty 0 '^0 tuned kernels dumped' -- "$T" dump --out "$dir/dump"
check dump-empty-json 0 '^\{"wrote":\[\]\}$' -- sh -c "'$T' dump --out '$dir/dump' --json | tr -d ' \n'; echo"
check import-missing 1 'no kernel.json' -- "$T" import "$dir/dump"
check wrong-server 1 'cannot reach tuned' -- "$T" --server unix:$dir/nope.sock jobs
check health 0 '^SERVING$' -- "$T" health
# The conventions (clig.dev): --version, --json on every command that prints data, exit 2 on
# a usage error of the daemon with a short message and a pointer to --help.
check tunectl-version 0 '^tunectl [0-9]+\.[0-9]+\.[0-9]+$' -- "$T" --version
check tuned-version 0 '^tuned [0-9]+\.[0-9]+\.[0-9]+$' -- "$bin/tuned" --version
check health-json 0 '^\{"status": "SERVING"\}$' -- "$T" health --json
for cmd in "device" "prior" "jobs" "daemons" "families" "job 1" "results --family transpose 96 40"; do
  # shellcheck disable=SC2086
  check "json-$cmd" 0 '^[[{]' -- sh -c "'$T' $cmd --json | python3 -c 'import json,sys; json.load(sys.stdin); print(\"{}\")'"
done
daemon_usage() {  # daemon_usage NAME PATTERN -- CMD...: exit 2, the message and a pointer to --help, short
  local name=$1 pattern=$2; shift 3
  local out rc
  out=$("$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne 2 || ${#out} -gt 600 ]] || ! grep -qE -- "^tuned: $pattern" <<<"$out" ||
     ! grep -q "(see 'tuned --help')" <<<"$out"; then
    log "FAIL $name: exit $rc (want 2, a short message and the --help pointer), stderr:"; echo "$out" | head -c 2000
    fails=$((fails + 1))
  else
    passes=$((passes + 1))
  fi
}
daemon_usage tuned-gpu-word "--gpu: must be a whole number >= 0, got 'x'" -- "$bin/tuned" --gpu x
daemon_usage tuned-gpu-negative "--gpu: must be a whole number >= 0, got '-1'" -- "$bin/tuned" --gpu -1
daemon_usage tuned-unknown-flag "The following argument was not expected: --nope" -- "$bin/tuned" --nope
daemon_usage tuned-bad-level "--log-level" -- "$bin/tuned" --log-level loud
daemon_usage tuned-bad-cpus "--serving-cpus: must be auto, all or a CPU list such as 12-15, got .x-1." -- "$bin/tuned" --serving-cpus x-1
daemon_usage tuned-bad-timeout "--compile-timeout: must be a number > 0, got '0'" -- "$bin/tuned" --compile-timeout 0
daemon_usage tuned-bad-config "unknown setting 'nope'" -- sh -c "echo 'nope = 1' > '$dir/bad.toml'; '$bin/tuned' --config '$dir/bad.toml'"
# Secrets are masked wherever the settings are printed.
check print-config-mask 0 '^db="postgresql://tuned:\*\*\*@db:5432/t\?sslmode=require&password=\*\*\*"$' -- \
  env TUNED_DB='postgresql://tuned:s3cret@db:5432/t?sslmode=require&password=s3cret' "$bin/tuned" --print-config
check print-config-no-secret 1 '' -- sh -c "TUNED_DB='postgresql://tuned:s3cret@db/t' '$bin/tuned' --print-config | grep -q s3cret"
# A message about a long input names it within a bounded length: a 100 KB family name.
long=$(head -c 100000 /dev/zero | tr '\0' f)
check long-family 1 "family 'f{64}\.\.\.' \(100000 bytes\)" -- "$T" sweep --family "$long" 64 64
check long-family-short 0 '^[0-9]+$' -- sh -c "'$T' sweep --family '$long' 64 64 2>&1 | wc -c | awk '{exit !(\$1 < 2048)}' && echo 1"
# A 16-bit dtype takes ieee_fp32 only: the message names the dtype's form.
check dtype-math 1 'math mode MATH_TF32 is not supported by sgemm in dtype bf16 \(supported: ieee_fp32\)' -- \
  "$T" sweep 64 64 64 --dtype bf16 --math tf32

# A tuned shape: a kernel imported as tuned on this (compile-only) device,
# with the config of a compiled transpose kernel.
mkdir -p "$dir/kernel"
printf 'cubin' > "$dir/kernel/kernel.cubin"
python3 - "$dir/kernel/kernel.json" "$("$T" device --json)" \
  "$("$T" results --family transpose 33 17 --top 1 --json)" <<'EOF'
import json, sys
config = json.loads(sys.argv[3])["measurements"][0]["config"]
json.dump({"problem": {"family": "FAMILY_TRANSPOSE", "dtype": "DTYPE_F32", "shape": [64, 64]},
           "device": json.loads(sys.argv[2]), "entry": "_Z1k", "baseline_ms": 0.004,
           "baseline_name": "copy",
           "measurement": {"config": config, "status": "MEASUREMENT_OK", "median_ms": 0.005,
                           "metric": 6.55, "metric_unit": "GB/s"}}, open(sys.argv[1], "w"))
EOF
check import 0 '^imported transpose f32 64x64 ' -- "$T" import "$dir/kernel"
# best's exit status says whether the shape itself is tuned: 0 tuned; 1 not
# (a near shape's kernel printed, marked NOT TUNED; or none near: NOT_FOUND).
check best-tuned 0 '^kernel +transpose_' -- "$T" best --family transpose 64 64
# The reason names what is served first (a spec family's baseline is its default config), not the
# imported baseline's name.
check best-imported-reason 0 '^served +the best config \(the default config transpose_[a-z0-9_]+ has no measurement here\): no interval stored \(an older job, or a kernel imported without one\)' -- \
  "$T" best --family transpose 64 64
check best-nearest 1 '^NOT TUNED for 60x64: nearest tuned shape 64x64' -- "$T" best --family transpose 60 64
check best-nearest-json 1 '"match": "MATCH_NEAREST"' -- "$T" best --family transpose 60 64 --json
check best-far 1 'no tuned kernel for transpose:a=f32,b=f32,c=f32,compute=f32 4096x4096' -- "$T" best --family transpose 4096 4096

# What best serves (core/serving.h): an SGEMM kernel imported with its
# judging (speedup 1.07x, 95% CI 1.05-1.09 over 30 pairs) is served; one whose
# interval reaches 1.0 is not, and best says why; --json carries the fields.
sgemm_kernel() {  # sgemm_kernel DIR M LOW HIGH
  mkdir -p "$1"
  printf 'cubin' > "$1/kernel.cubin"
  python3 - "$1/kernel.json" "$("$T" device --json)" "$2" "$3" "$4" <<'EOF2'
import json, sys
params = dict(KIND=0, BM=32, BN=32, BK=8, TM=1, TN=1, PAD=0, VEC=1, LOOP=0, MAP=0, DB=0, LN=0,
              STAGES=0, SPLITK=1, GROUP=1, MINB=1, SLICEK=1, STREAMB=0, STREAMK=0, RUL=5)
m = int(sys.argv[3])
json.dump({"problem": {"family": "FAMILY_SGEMM", "dtype": "DTYPE_F32", "shape": [m, 512, 512]},
           "device": json.loads(sys.argv[2]), "entry": "_Z1k", "baseline_ms": 1.07,
           "baseline_name": "cuBLAS", "speedup": 1.07, "speedup_ci_low": float(sys.argv[4]),
           "speedup_ci_high": float(sys.argv[5]), "speedup_pairs": 30,
           "measurement": {"config": {"params": params}, "status": "MEASUREMENT_OK", "median_ms": 1.0,
                           "metric": 268.4, "metric_unit": "GFLOPS", "sm_clock_mhz": 1980}},
          open(sys.argv[1], "w"))
EOF2
}
sgemm_kernel "$dir/sure" 512 1.05 1.09
sgemm_kernel "$dir/unsure" 640 0.98 1.12
check import-sgemm 0 '^imported sgemm f32 512x512x512 ' -- "$T" import "$dir/sure"
check import-sgemm-unsure 0 '^imported sgemm f32 640x512x512 ' -- "$T" import "$dir/unsure"
check best-speedup 0 '^speedup +1\.07x \(95% CI 1\.05–1\.09, 30 pairs\)$' -- "$T" best 512 512 512
check best-served-kernel 0 '^served +the kernel: surely faster than cuBLAS, 1\.07x \(95% CI 1\.05–1\.09, 30 pairs\)' -- "$T" best 512 512 512
check best-clock 0 '^sm clock +1980 MHz$' -- "$T" best 512 512 512
check best-served-cublas 0 '^served +cuBLAS: the kernel is not surely faster, speedup 1\.07x \(95% CI 0\.98–1\.12, 30 pairs\)' -- "$T" best 640 512 512
check best-calls-cublas 0 '^the client library calls cuBLAS for this shape' -- "$T" best 640 512 512
check best-json-interval 0 '"speedup_ci_low": 0.98' -- "$T" best 640 512 512 --json
check best-json-use-baseline 0 '"use_baseline": true' -- "$T" best 640 512 512 --json
check best-json-reason 0 '"serving_reason": "the kernel: surely faster' -- "$T" best 512 512 512 --json
check results-clock 0 '1980 MHz$' -- "$T" results 512 512 512

# The sweep report: an SVG of the stored measurements.
check report 0 "^wrote $dir/report.svg: transpose f32 64x64, 1 measurement$" -- \
  "$T" report --family transpose 64 64 --out "$dir/report.svg"
check report-json 0 '"measurements": 1' -- "$T" report --family transpose 64 64 --out "$dir/report2.svg" --json
check export-json 0 '"files": \[' -- "$T" export --family transpose 64 64 --out "$dir/export-json" --json
check report-marks 0 'id="winner".*winner 6.55 GB/s' -- cat "$dir/report.svg"
check report-baseline 0 'id="baseline-label".*copy 8.19 GB/s' -- cat "$dir/report.svg"
check report-compiled 0 'id="count-compiled"[^>]*>[1-9]' -- \
  sh -c "'$T' report --family transpose 33 17 --out '$dir/compiled.svg' && cat '$dir/compiled.svg'"
check report-none 1 'no measurements of sgemm f32 7x7x7' -- "$T" report 7 7 7 --out "$dir/none.svg"
if command -v rsvg-convert > /dev/null; then
  check report-renders 0 'PNG image data, 1000 x' -- \
    sh -c "rsvg-convert -o '$dir/report.png' '$dir/report.svg' && file '$dir/report.png'"
fi
# Math modes (issue 18): the mode is part of the problem, shown after the
# shape where it is not ieee_fp32; bad ones refused, nothing queued.
check math-queue 0 'queued: sgemm f32 64x64x64 tf32, 1 configs' -- "$T" sweep 64 64 64 --math tf32 --budget 1
check math-best-none 1 'no tuned kernel for sgemm:a=f32,b=f32,c=f32,compute=f32,math=fp32_accurate 64x64x64' -- "$T" best 64 64 64 --math fp32_accurate
usage math-unknown "unknown math mode 'fp16' \(known: ieee_fp32, fp32_accurate, tf32\)" -- "$T" sweep 64 64 64 --math fp16
check math-transpose 1 'math mode MATH_TF32 is not supported by transpose \(supported: ieee_fp32\)' -- \
  "$T" sweep --family transpose 64 64 --math tf32
check jobs-client 0 '^2 +transpose f32 33x17 +done .* local +.+ gpu 0: [0-9]+$' -- "$T" jobs
# Layouts: op(A) and op(B) as cuBLAS's, part of the problem as the math mode
# is, shown after it where not nn; bad ones refused, nothing queued.
check layout-queue 0 'queued: sgemm f32 64x64x64 tf32 nt, 1 configs' -- \
  "$T" sweep 64 64 64 --math tf32 --layout nt --budget 1
check layout-best-none 1 'no tuned kernel for sgemm:a=f32,b=f32,c=f32,compute=f32,layout=tn 64x64x64' -- "$T" best 64 64 64 --layout tn
usage layout-unknown "unknown layout 'nx' \(known: nn, nt, tn, tt\)" -- "$T" sweep 64 64 64 --layout nx
check layout-transpose 1 'layout LAYOUT_TT is not supported by transpose \(supported: nn\)' -- \
  "$T" sweep --family transpose 64 64 --layout tt
# Epilogues: a 16-bit problem's bias and activation, part of the problem,
# shown after the layout; fp32 and unknown ones refused, nothing queued.
check epilogue-queue 0 'queued: sgemm bf16 16x64x64 nt \+bias_gelu_tanh, 1 configs' -- \
  "$T" sweep 16 64 64 --dtype bf16 --layout nt --epilogue bias_gelu_tanh --budget 1
check epilogue-best-none 1 'no tuned kernel for sgemm:a=bf16,b=bf16,c=bf16,compute=f32,layout=nt,epilogue=bias_relu 16x64x64' -- \
  "$T" best 16 64 64 --dtype bf16 --layout nt --epilogue bias_relu
usage epilogue-unknown "unknown epilogue 'swish' \(known: none, bias, bias_relu, bias_gelu_tanh, bias_gelu_erf\)" -- \
  "$T" sweep 64 64 64 --dtype bf16 --epilogue swish
check epilogue-f32 1 'epilogue EPILOGUE_BIAS is not supported by sgemm in dtype f32 \(supported: none\)' -- \
  "$T" sweep 64 64 64 --epilogue bias
# Kernel specs (a user's own kernel): needs tuned --allow-user-kernels.
src=$(cd "$(dirname "$0")/.." && pwd)
# scripts/run.sh where the daemon cannot start (no GPU here): it ends as the daemon does.
if ! nvidia-smi -L > /dev/null 2>&1; then
  start=$SECONDS
  check run-sh-no-gpu 1 'run.sh: tuned exited \(1\) before it served' -- env TUNED_BIN="$bin" \
    XDG_RUNTIME_DIR="$dir/run-sh" XDG_STATE_HOME="$dir/state-sh" bash "$src/scripts/run.sh"
  if (( SECONDS - start > 10 )); then log "FAIL run-sh-no-gpu: $((SECONDS - start)) s"; fails=$((fails + 1)); fi
fi
spec=$src/examples/kernels/matmul/spec.toml
check spec-not-allowed 1 'allow-user-kernels' -- "$T" family add "$spec"
check spec-missing-file 1 'nope.toml' -- "$T" family add "$dir/nope.toml"
"$bin/tuned" --gpu 5 --compile-only --allow-user-kernels > "$dir/specs.log" 2>&1 &
spid=$!
for _ in $(seq 100); do [[ -S $dir/run/tuned/gpu5.sock ]] && break; sleep 0.1; done
S=("$T" --gpu 5)
check spec-add 0 '^matmul_tiled version [0-9a-f]{12}: 6 configs, registered$' -- "${S[@]}" family add "$spec"
check spec-add-again 0 '^matmul_tiled version [0-9a-f]{12}: 6 configs, already registered$' -- "${S[@]}" family add "$spec"
check spec-families 0 '^matmul_tiled +spec +[0-9a-f]{12} +m,n,k +2 +6 +GFLOPS$' -- "${S[@]}" families
check spec-families-builtin 0 '^sgemm +built-in +- ' -- "${S[@]}" families
check spec-show 0 '^params +TILE: 8, 16, 32  # tile edge' -- "${S[@]}" family show matmul_tiled
check spec-show-args 0 '^ +C: f32\[m \* n\] out$' -- "${S[@]}" family show matmul_tiled
check spec-show-json 0 '"kernel": "matmul_tiled"' -- "${S[@]}" family show matmul_tiled --json
check spec-show-unknown 1 'nope' -- "${S[@]}" family show nope
check spec-sweep 0 '^job 1 queued: matmul_tiled@[0-9a-f]{12} 64x64x64, 6 configs' -- \
  "${S[@]}" sweep --family matmul_tiled 64 64 64
check spec-results 0 'compiled' -- sh -c "sleep 2; '$T' --gpu 5 results --family matmul_tiled 64 64 64"
check spec-rank 1 '' -- "${S[@]}" sweep --family matmul_tiled 64 64
# A config that does not compile: the sweep says how many failed and why, the
# results' table gives each failure's error line, and a config never run is
# "not verified". Where none succeeds (n even: TILE = 3 only), exit 1.
cat > "$dir/fails.toml" <<'EOF'
name = "fails"
source = """
__global__ void fill(float* y, int n) {
  static_assert(TILE != 3, "TILE 3 is not supported");
  const int i = blockIdx.x * TILE + threadIdx.x;
  if (i < n) y[i] = 1.0f;
}
__global__ void fill_ref(float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0f;
}
"""
kernel = "fill"
dims = ["n"]
restrictions = ["n % 2 == 1 || TILE == 3"]
params = [{ name = "TILE", values = [1, 3] }]
arguments = [{ name = "y", type = "f32", size = "n", role = "out" }, { name = "n", type = "i32", value = "n" }]
launch = { block = ["TILE"], grid = ["ceil_div(n, TILE)"] }
verification = { reference = "fill_ref", rtol = 0, atol = 0, launch = { block = [32], grid = ["ceil_div(n, 32)"] } }
EOF
check spec-fails-add 0 'fails version' -- "${S[@]}" family add "$dir/fails.toml"
check spec-fails-sweep 0 '^1 of 2 configs failed:$' -- "${S[@]}" sweep --family fails 63 --wait
check spec-fails-sweep-why 0 '^  fails_TILE3 +compile_error +kernel.cu\([0-9]+\): error: static assertion failed with "TILE 3 is not supported"' -- \
  "${S[@]}" sweep --family fails 65 --wait
check spec-fails-results 0 '^[0-9]+ +fails_TILE3 +compile_error +- +- +not verified +.* error: static assertion failed' -- \
  "${S[@]}" results --family fails 63
check spec-fails-results-compiled 0 '^[0-9]+ +fails_TILE1 +compiled +- +- +not verified ' -- "${S[@]}" results --family fails 63
check spec-fails-none 1 '^1 of 1 configs failed, none succeeded:$' -- "${S[@]}" sweep --family fails 64 --wait
# The newest version: the one registered first most recently. Registering an older one again
# changes nothing (it keeps its place); a problem without --version takes the newest.
mkdir -p "$dir/v2" && cp "$src/examples/kernels/matmul/"* "$dir/v2/"
sed -i 's/^description = "/description = "second version: /' "$dir/v2/spec.toml"
sleep 1  # a later second than the first version's registration
check spec-add-v2 0 '^matmul_tiled version [0-9a-f]{12}: 6 configs, registered$' -- "${S[@]}" family add "$dir/v2/spec.toml"
v2=$("${S[@]}" family add "$dir/v2/spec.toml" | grep -oE 'version [0-9a-f]{12}' | head -1 | cut -d' ' -f2)
check spec-add-old-again 0 "already registered; the newest is version $v2 \(--version [0-9a-f]{12} names this one\)$" -- \
  "${S[@]}" family add "$spec"
check spec-newest-listed 0 "^matmul_tiled +spec +$v2 " -- "${S[@]}" families
check spec-newest-swept 0 "queued: matmul_tiled@$v2 64x64x64" -- "${S[@]}" sweep --family matmul_tiled 64 64 64
# Which daemons run users' code, and what confines their workers.
check daemons-user-kernels 0 ' live +yes +(Landlock ABI [0-9]+|none \(.*\))$' -- "${S[@]}" daemons
check daemons-no-user-kernels 0 ' live +no +(Landlock ABI [0-9]+|none \(.*\))$' -- "$T" daemons
# A recorded workload (tuned.record's file): swept largest share first, reported.
printf '{"format": "tuned-workload-1", "problems": [
  {"family": "transpose", "shape": [48, 20], "calls": 2, "gpu_ms": 0.5},
  {"family": "transpose", "shape": [20, 48], "calls": 1, "gpu_ms": 1.5}]}' > "$dir/w.json"
check workload-sweep 0 '^75.0% +transpose f32 20x48 +- +[0-9]+$' -- "$T" workload sweep "$dir/w.json"
check workload-report 0 '^workload: 2.000 ms recorded, 2.000 ms with the served kernels: saves 0.000 ms' -- \
  "$T" workload report "$dir/w.json"
printf '{"format": "tuned-workload-1", "problems": [{"shape": [1, 2, 3], "calls": 0, "gpu_ms": 1}]}' \
  > "$dir/bad.json"
check workload-bad 1 'bad.json: workload: problems\[0\].calls' -- "$T" workload report "$dir/bad.json"
kill -TERM $spid; wait $spid
# A cancelled job's compile batch is interrupted: the next job does not wait for the rest of it
# (a batch of sgemm kernels takes 15-25 s of NVRTC here). A daemon of its own, with an empty queue.
"$bin/tuned" --gpu 6 --compile-only > "$dir/cancel.log" 2>&1 &
cpid=$!
for _ in $(seq 100); do [[ -S $dir/run/tuned/gpu6.sock ]] && break; sleep 0.1; done
C=("$T" --gpu 6)
"${C[@]}" sweep 512 512 512 --strategy exhaustive > /dev/null
for _ in $(seq 100); do "${C[@]}" job 1 | grep -qE '^state +running' && break; sleep 0.1; done
sleep 1  # its first compile batch under way
check cancel 0 '^state +cancelled' -- "${C[@]}" cancel 1
start=$SECONDS
check cancel-next 0 'state +done' -- "${C[@]}" sweep --family transpose 40 40 --budget 1 --wait
if (( SECONDS - start > 10 )); then
  log "FAIL cancel-next: the next job took $((SECONDS - start)) s after a cancel"; fails=$((fails + 1))
fi
kill -TERM $cpid; wait $cpid
kill -0 $pid 2>/dev/null || { log "FAIL: daemon died"; fails=$((fails + 1)); }
kill -TERM $pid; wait $pid; rc=$?
[[ $rc -eq 0 ]] || { log "FAIL: daemon exit $rc after SIGTERM"; fails=$((fails + 1)); }

# Logs: one JSON object per line, with ts, level, proc and msg (daemon and worker).
check json-logs 0 '^ok [1-9][0-9]* lines$' -- python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert set(e) == {"ts", "level", "proc", "pid", "msg"}, e
    assert e["proc"] in ("tuned", "worker") and e["ts"].endswith("Z"), e
    n += 1
print("ok", n, "lines")' "$dir/tuned.log"

# Remote: TLS + token, as the README's operator section sets it up.
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=tuned-ca -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost \
  -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 \
  -extfile server.ext -out server.pem 2>/dev/null
token=$(openssl rand -hex 24)
echo "ci:$token" > tokens
echo "$token" > ci.token
chmod 600 tokens ci.token  # a secret's file: others may not read it (the daemon and tunectl refuse it)
cd - >/dev/null
"$bin/tuned" --gpu 1 --compile-only --listen 127.0.0.1:0 --tls-cert "$dir/server.pem" \
  --tls-key "$dir/server.key" --token-file "$dir/tokens" > "$dir/tls.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q 'listening tcp' "$dir/tls.log" && break; sleep 0.1; done
port=$(grep -o 'listening tcp 127.0.0.1:[0-9]*' "$dir/tls.log" | cut -d: -f2)
[[ -n $port ]] || { log "TLS daemon did not start"; cat "$dir/tls.log"; exit 1; }
R=(--server "localhost:$port" --tls-ca "$dir/ca.pem")
check tls-no-token 1 'needs a token' -- "$T" "${R[@]}" sweep --family transpose 64 64
check tls-wrong-token 1 'invalid token' -- env TUNED_TOKEN=0123456789abcdef0123 "$T" "${R[@]}" jobs
check tls-env-token 0 'job 1 queued' -- env TUNED_TOKEN="$token" "$T" "${R[@]}" sweep --family transpose 64 64
check tls-token-file 0 '^1 +transpose f32 64x64 .* ci( +-| +.+ gpu 1: [0-9]+)$' -- "$T" "${R[@]}" --token-file "$dir/ci.token" jobs
check tls-env-all 0 'compile-only' -- env TUNED_SERVER="localhost:$port" TUNED_TLS_CA="$dir/ca.pem" \
  TUNED_TOKEN_FILE="$dir/ci.token" "$T" device
check tls-unknown-ca 1 'cannot reach tuned' -- "$T" --server "localhost:$port" --token "$token" jobs
check tls-health 0 '^SERVING$' -- "$T" "${R[@]}" health
check listen-needs-tls 2 'pass --tls-cert FILE --tls-key FILE --token-file FILE' -- \
  "$bin/tuned" --gpu 2 --compile-only --listen 127.0.0.1:0
# A secret's file that others may read is refused, by the daemon and by tunectl (as ssh does).
cp "$dir/tokens" "$dir/open-tokens" && chmod 644 "$dir/open-tokens"
check open-token-file 1 "token file $dir/open-tokens is open to others \(mode 0644\): chmod o-rwx,g-w" -- \
  "$bin/tuned" --gpu 2 --compile-only --listen 127.0.0.1:0 --tls-cert "$dir/server.pem" \
  --tls-key "$dir/server.key" --token-file "$dir/open-tokens"
cp "$dir/server.key" "$dir/open.key" && chmod 604 "$dir/open.key"
check open-tls-key 1 "TLS key $dir/open.key is open to others \(mode 0604\)" -- \
  "$bin/tuned" --gpu 2 --compile-only --listen 127.0.0.1:0 --tls-cert "$dir/server.pem" \
  --tls-key "$dir/open.key" --token-file "$dir/tokens"
cp "$dir/ci.token" "$dir/open.token" && chmod 666 "$dir/open.token"
check open-client-token 1 "token file $dir/open.token is open to others \(mode 0666\)" -- \
  "$T" "${R[@]}" --token-file "$dir/open.token" jobs
check open-client-key 1 "--tls-key file $dir/open.key is open to others \(mode 0604\)" -- \
  "$T" "${R[@]}" --token-file "$dir/ci.token" --tls-cert "$dir/server.pem" --tls-key "$dir/open.key" jobs
kill -TERM $pid; wait $pid; rc=$?
[[ $rc -eq 0 ]] || { log "FAIL: TLS daemon exit $rc after SIGTERM"; fails=$((fails + 1)); }
log "$passes passed, $fails failed"
[[ $fails -eq 0 ]]
