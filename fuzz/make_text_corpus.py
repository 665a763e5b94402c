#!/usr/bin/env python3
"""Writes the seed corpora of the text-input fuzz targets (spec, config,
tunectl) into fuzz/corpus/<target>/ from the repository's own specs, config
and commands. The binary ones (rpc, import_kernel) are written by the targets
themselves: TUNED_FUZZ_WRITE_SEEDS=fuzz/corpus build-fuzz/fuzz/rpc_fuzz.
Inputs named regress-* (crashes found, fixed) are never touched."""
import json
import pathlib
import tomllib

root = pathlib.Path(__file__).resolve().parent.parent
corpus = root / "fuzz" / "corpus"


def write(target, name, data):
    d = corpus / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


# spec: byte 0 picks the mode (0 TOML, 1 JSON, 2 expression, 3 CUDA source).
specs = sorted((root / "examples" / "kernels").glob("*/spec.toml"))
for path in specs:
    name = path.parent.name
    text = path.read_text()
    source = (path.parent / tomllib.loads(text)["source_file"]).read_text()
    lines = [l for l in text.splitlines() if not l.startswith("source_file")]
    # The source inline, as ParseSpecToml takes it (it reads no file).
    toml = "\n".join(lines[:1] + ["source = '''" + source + "'''"] + lines[1:]) + "\n"
    write("spec", f"toml-{name}", b"\x00" + toml.encode())
    tree = tomllib.loads(toml)
    tree.pop("description", None)
    write("spec", f"json-{name}", b"\x01" + json.dumps(tree, indent=1).encode())
    write("spec", f"cuda-{name}", b"\x03" + source.encode())
write("spec", "toml-transpose", b"\x00" + (root / "families/transpose/spec.toml").read_bytes())
expressions = [
    "m % TILE == 0 && n % TILE == 0 && k % TILE == 0", "ceil_div(n, 16)", "2 * m * n * k",
    "min(m, n, k) > 0 ? m / TILE : max(n, 1)", "!(VEC < 4) || k % (TILE * VEC) != 0",
    "(m + TILE - 1) / TILE * TILE * 4 * (TILE + 1)", "m / 0", "n % -3", "-m * 9007199254740993",
    "ceil_div(m, 0)", "1.5 * TILE", "m ? n : k", "max(m)", "x + 1", "((((m))))",
]
for i, e in enumerate(expressions):
    write("spec", f"expr-{i:02d}", b"\x02" + e.encode())

# config: the daemon's TOML config (keys: the long flag names).
write("config", "deploy-tuned", (root / "deploy/config/tuned.toml").read_bytes())
configs = {
    "every-setting": """gpu = 1
db = "/var/lib/tuned/gpu1.db"
socket = "/run/tuned/gpu1.sock"
max-jobs-per-client = 4
max-configs-per-client = 5000
drain-seconds = 2.5
compile-only = true
device-memory-mib = 1024
run-timeout-floor = 10
run-timeout-multiple = 100
compile-timeout = 60
compile-batch = 8
lease-seconds = 3
quarantine-after = 1
strategy = "exhaustive"
budget = "64"
allow-user-kernels = true
enable-fault-test-family = false
log-level = "debug"
compile-ahead = false
""",
    "listen-without-tls": 'listen = "127.0.0.1:50051"\n',
    "listen-with-tls": 'listen = "127.0.0.1:50051"\ntls-cert = "c.pem"\ntls-key = "k.pem"\ntoken-file = "t"\nallow-anonymous-reads = true\n',
    "section": "[tuned]\ngpu = 0\n",
    "unknown-key": "colour = \"blue\"\n",
    "negative": "max-jobs-per-client = -1\n",
    "bad-strategy": 'strategy = "random"\n',
    "bad-budget": 'budget = "ten seconds"\n',
    "lease-range": "lease-seconds = 0.01\n",
    "log-level": 'log-level = "loud"\n',
    "array": "gpu = [0, 1]\n",
    "config-key": 'config = "other.toml"\n',
    "no-compile-ahead": "no-compile-ahead = true\n",
    "db-postgres": 'db = "postgresql://tuned@localhost:5432/tuned?sslmode=disable"\nmetrics-listen = "127.0.0.1:9100"\nhealth-listen = "127.0.0.1:9101"\n',
    "string-number": 'gpu = "zero"\n',
    "inline-table": "gpu = { a = 1 }\n",
    "dotted": "a.b = 1\n",
}
for name, text in configs.items():
    write("config", name, text)

# tunectl: one argument a line (argv[0] is added).
commands = {
    "sweep": "sweep\n1024\n1024\n1024",
    "sweep-wait-transpose": "sweep\n--family\ntranspose\n64\n64\n--wait",
    "sweep-strategy": "sweep\n--strategy\nmodel\n--budget\n10s\n512\n512\n512",
    "sweep-spec": "sweep\n--family\nmatmul_tiled\n--version\n0123abcd\n256\n256\n256",
    "sweep-rank": "sweep\n--family\ntranspose\n64\n64\n64",
    "best-json": "--json\nbest\n1000\n17\n4097\n--math\ntf32",
    "best-tune": "best\n--tune-if-missing\n64\n64\n64",
    "best-bad-math": "best\n--math\nfp16\n64\n64\n64",
    "best-not-a-number": "best\n64\nx\n64",
    "results": "results\n--top\n3\n512\n512\n512",
    "results-negative": "results\n--top\n-1\n512\n512\n512",
    "report": "report\n--out\nr.svg\n256\n256\n256",
    "jobs": "jobs\n--limit\n5",
    "jobs-zero": "jobs\n--limit\n0",
    "job": "job\n1",
    "watch": "--json\nwatch\n3",
    "cancel": "cancel\n2",
    "device": "device\n--gpu\n1",
    "gpu-negative": "--gpu\n-1\ndevice",
    "daemons": "daemons\n--all",
    "health": "health\n--service\ntuned.v1.Tuner",
    "export": "export\n--out\nx\n64\n64\n64",
    "dump": "dump\n--out\nd",
    "family-add": "family\nadd\nspec.toml",
    "family-show": "family\nshow\nmatmul_tiled\n--version\nabc\n--json",
    "families": "families\n--json",
    "import": "import\nkernels",
    "help": "--help",
    "sweep-help": "sweep\n--help",
    "none": "",
    "unknown": "frobnicate",
    "token-file": "--token-file\nmissing-token\njobs",
    "tls": "--server\nlocalhost:1\n--tls-ca\nca.pem\n--tls-cert\nc.pem\n--tls-key\nk.pem\n--tls-server-name\nx\n--token\n0123456789abcdef\njobs",
}
for name, text in commands.items():
    write("tunectl", name, text)
