# Helpers of the GPU machine's scripts (sourced; the machine has python3, no bc or jq).

# since START: seconds since START (date +%s.%N), 2 decimals.
since() { python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 2))" "$1"; }
# field PATH < JSON: the value at a dotted path of a JSON document (0 if absent).
field() { python3 -c "import json,sys; j=json.load(sys.stdin); v=j
for k in sys.argv[1].split('.'): v=v.get(k, {}) if isinstance(v, dict) else {}
print(v if v != {} else 0)" "$1"; }
