#!/usr/bin/env bash
# Regenerate the dependency locks from pyproject.toml, which is the source of the dependency lists:
#   requirements-dev.txt  [project.dependencies] + the "dev" extra   (installed by scripts/test.sh)
#   requirements.txt      [project.dependencies] at the same versions (scripts/up.sh, the Dockerfile)
# Every package, transitive ones included, is pinned with its sha256 hashes, for CPython 3.11 on
# Linux x86_64; the scripts install them with `pip install --require-hashes`. Versions already in
# the locks are kept, so adding a dependency changes nothing else:
#   bash scripts/lock.sh                          after editing the lists in pyproject.toml
#   bash scripts/lock.sh --upgrade                move everything to the newest allowed release
#   bash scripts/lock.sh --upgrade-package NAME   move one package
# The resolver is uv (`uv pip compile --generate-hashes`), itself installed hash-checked from
# scripts/lock-tool.txt into $NETAWARE_STATE_DIR/tools/uv (./var/tools/uv).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${NETAWARE_STATE_DIR:-$ROOT/var}"
TOOL="$STATE/tools/uv"
cd "$ROOT"

if [ ! -x "$TOOL/bin/uv" ]; then
  python3 -m venv "$TOOL"
  "$TOOL/bin/pip" install -q --disable-pip-version-check --require-hashes -r scripts/lock-tool.txt
fi

common=(--quiet --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28
        --custom-compile-command "bash scripts/lock.sh")
# The dev lock is resolved first; the runtime lock is constrained to its versions so both agree.
"$TOOL/bin/uv" pip compile pyproject.toml --extra dev "${common[@]}" "$@" -o requirements-dev.txt
"$TOOL/bin/uv" pip compile pyproject.toml "${common[@]}" -c requirements-dev.txt -o requirements.txt
echo "locked $(grep -c '^[A-Za-z0-9]' requirements-dev.txt) packages in requirements-dev.txt," \
     "$(grep -c '^[A-Za-z0-9]' requirements.txt) in requirements.txt"
