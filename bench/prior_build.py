#!/usr/bin/env python3
"""Builds a prior file (format: prior/README.md) from bench/prior_data.sh's output.

Usage: bench/prior_build.py OUT DATADIR... [--exclude SHAPES_FILE] [--source TEXT]

Each DATADIR holds device.json (`tunectl device --json`) and
measurements/MATH_MxNxK.json.gz (`tunectl results --json --top 0`); every OK
measurement goes in, sorted by family, dtype, math mode, shape and time, so
that a rebuild from the same data writes the same file. --exclude leaves out
the shapes of a shape file (M N K a line): a prior held out from a suite.
"""
import argparse
import glob
import gzip
import json
import os
import sys


def shapes_of(path):
    out = set()
    for line in open(path):
        line = line.split('#')[0].split()
        if line:
            out.add(tuple(int(x) for x in line))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('data', nargs='+')
    ap.add_argument('--exclude', action='append', default=[])
    ap.add_argument('--source', default='')
    a = ap.parse_args()
    excluded = set()
    for f in a.exclude:
        excluded |= shapes_of(f)
    device = None
    blocks = {}  # (family, dtype, math, shape) -> [(ms, params)]
    params = {}  # family -> set of parameter names
    for d in a.data:
        dev = json.load(open(os.path.join(d, 'device.json')))
        kind = (dev['name'], dev['cc_major'], dev.get('cc_minor', 0), dev['sm_count'],
                dev['driver_version'], dev['nvrtc_version'])
        if device is not None and kind != device:
            sys.exit('%s: measured on %s, not %s: one prior holds one GPU kind' % (d, kind, device))
        device = kind
        for path in sorted(glob.glob(os.path.join(d, 'measurements', '*.json.gz'))):
            ms = json.load(gzip.open(path)).get('measurements', [])
            for m in ms:
                if m.get('status') != 'MEASUREMENT_OK' or not m.get('median_ms'):
                    continue
                p = m['config']['params']
                family = m['config']['name'].split('_')[0]
                name = os.path.basename(path)[:-len('.json.gz')]
                math, dims = name.rsplit('_', 1)
                shape = tuple(int(x) for x in dims.split('x'))
                if shape in excluded:
                    continue
                params.setdefault(family, set()).update(p)
                blocks.setdefault((family, 'f32', math, shape), []).append(
                    (float(m['median_ms']), {k: int(v) for k, v in p.items()}))
    if device is None:
        sys.exit('no data')
    lines = ['tuned-prior\t1',
             'device\t%s\t%d.%d\t%d\t%d\t%s' % device]
    if a.source:
        lines.append('source\t' + a.source)
    for family in sorted(params):
        names = sorted(params[family])
        lines.append('params\t%s\t%s' % (family, '\t'.join(names)))
        for key in sorted(k for k in blocks if k[0] == family):
            lines.append('shape\t%s\t%s\t%s\t%s' % (family, key[1], key[2], 'x'.join(map(str, key[3]))))
            for ms, p in sorted(blocks[key], key=lambda r: r[0]):
                lines.append('%.5g\t%s' % (ms, '\t'.join(str(p[n]) if n in p else '-' for n in names)))
    with open(a.out, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    rows = sum(len(v) for v in blocks.values())
    print('%s: %d measurements of %d problems (%s)' % (a.out, rows, len(blocks), device[0]))


if __name__ == '__main__':
    main()
