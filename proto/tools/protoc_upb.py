#!/usr/bin/env python3
"""Run protoc with protoc-gen-upb and protoc-gen-upbdefs on Arion's protos.

Usage: protoc_upb.py PROTOC UPB_PLUGIN UPBDEFS_PLUGIN DESCSET PROTO_ROOT OUTDIR PROTO...

Everything goes to OUTDIR/gen/<path>.upb(defs).{c,h}, where code includes
it by path as it does gRPC's; each file is also copied to OUTDIR/<path with
/ as _>.upb(defs).{c,h}, the flat names meson declares as outputs (meson
outputs cannot have directories). Dependents compile the flat .c files and
wait for the flat .h files, so the headers under gen/ exist before them. Imports resolve against DESCSET, the
descriptors compiled into libgrpc (see descset.c).
"""
import os
import shutil
import subprocess
import sys

protoc, upb, upbdefs, descset, root, outdir = sys.argv[1:7]
protos = [os.path.relpath(p, root) for p in sys.argv[7:]]
gen = os.path.join(outdir, 'gen')
os.makedirs(gen, exist_ok=True)
cmd = [protoc, '--plugin=protoc-gen-upb=' + upb, '--plugin=protoc-gen-upbdefs=' + upbdefs,
       '--descriptor_set_in=' + descset, '-I' + root,
       '--upb_out=' + gen, '--upbdefs_out=' + gen] + protos
r = subprocess.run(cmd)
if r.returncode != 0:
    sys.exit('protoc failed: ' + ' '.join(cmd))
for p in protos:
    base = p[:-len('.proto')]
    for suffix in ('.upb.c', '.upbdefs.c', '.upb.h', '.upbdefs.h'):
        shutil.copyfile(os.path.join(gen, base + suffix),
                        os.path.join(outdir, base.replace('/', '_') + suffix))
