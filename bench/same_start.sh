#!/usr/bin/env bash
# On the GPU machine: the same-start speed check of a change that should
# leave speed alone. The public suite runs with the bundle of the tree before
# the change (BEFORE, default .bundle-before) and then with the one after it
# (AFTER, default .bundle), each from a fresh database, on one machine start,
# and bench/same_start.py compares the two logs shape by shape.
#   bash bench/same_start.sh OUTDIR fp32|bf16
# fp32: the 12 public shapes side by side with cuBLAS (bench/suite.sh,
# tunebench --side-by-side, about 170 s a bundle on an H200); bf16: the LLM
# suite in layout nt (bench/gemm16.sh --suite llm, about 175 s a bundle).
# Each bundle holds tuned, tuned-worker, tunectl, tunebench and gemm16bench
# (docs/development.md, "Running on the GPU machine"); the shapes files are
# read from $SHAPES_DIR (default .bundle: shapes.txt, llm_shapes.txt). Ends
# with `SUMMARY same_start ieee_fp32|bf16_nt max_change= ...`.
set -u
out=$1 suite=$2
mkdir -p "$out"
shapes=${SHAPES_DIR:-.bundle}
for side in before after; do
  bundle=${AFTER:-.bundle}
  [[ $side == before ]] && bundle=${BEFORE:-.bundle-before}
  rm -rf .devdb
  case $suite in
    fp32)
      BUNDLE=$bundle SUITE_TIMEOUT=${SUITE_TIMEOUT:-250} bash bench/suite.sh "$out/$side" sgemm "$shapes/shapes.txt" --side-by-side
      cp "$out/$side/suite_sgemm.log" "$out/fp32_$side.log" ;;
    bf16)
      BUNDLE=$bundle SUITE_TIMEOUT=${SUITE_TIMEOUT:-230} bash bench/gemm16.sh "$out/$side" "$shapes/llm_shapes.txt" bf16 -- --layout nt --suite llm
      cp "$out/$side/gemm16_bf16_llm_shapes.log" "$out/bf16_$side.log" ;;
    *) echo "same_start.sh: fp32 or bf16, not $suite" >&2; exit 2 ;;
  esac
done
if [[ $suite == fp32 ]]; then name=ieee_fp32 column=4; else name=bf16_nt column=5; fi
python3 bench/same_start.py $name $column "$out/${suite}_before.log" "$out/${suite}_after.log" | tee "$out/${suite}_comparison.txt"
