#!/usr/bin/env bash
# Rewrites tests/golden/source_hashes.json from the current generator: the
# sha256 of `kdajit emit` for every shipped schedule with a code generator and
# every target it lists (default shape key; the LLVM IR for llvm-backend ones). Run after a deliberate change to
# templates/, the emitter or a schedule, and say why in the commit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kdajit="${KDAJIT_BUILD_DIR:-$root/build}/tools/kdajit"
python3 - "$root" "$kdajit" <<'PY'
import hashlib, json, subprocess, sys, glob, os
root, kdajit = sys.argv[1], sys.argv[2]
path = os.path.join(root, "tests/golden/source_hashes.json")
doc = json.load(open(path))
sources = {}
for f in sorted(glob.glob(os.path.join(root, "schedules/*.json"))):
    s = json.load(open(f))
    hashes = {}
    for t in s["targets"]:
        llvm = s.get("backend") == "llvm"  # its IR (emit --json's "ir"), not IR and PTX
        r = subprocess.run([kdajit, "emit", "--schedule", s["name"], "--target", t] + (["--json"] if llvm else []),
                           capture_output=True)
        if r.returncode != 0:
            break  # no code generator for this design yet
        text = json.loads(r.stdout)["ir"].encode() if llvm else r.stdout
        hashes[t] = hashlib.sha256(text).hexdigest()
    if hashes:
        sources[s["name"]] = hashes
doc["sources"] = sources
open(path, "w").write(json.dumps(doc, indent=2) + "\n")
print(f"{sum(len(h) for h in sources.values())} hashes for {len(sources)} schedules written to {path}")
PY
