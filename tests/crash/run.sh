#!/usr/bin/env bash
# Crash test: kill -9 the server during concurrent writes, restart it, check that nothing
# acknowledged is lost and that the token ledger still adds up (see README.md here).
#
#   bash tests/crash/run.sh <path-to-signage-binary>
#
# It builds nothing. Ends with the line `N passed, M failed` and exits 1 on any failure.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:-}"
if [ ! -x "$bin" ]; then
  echo "usage: $0 <path-to-signage-binary>" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
# crash.py stops its servers and removes its files on exit, SIGINT and SIGTERM; each server also
# gets SIGKILL from the kernel if crash.py dies (PR_SET_PDEATHSIG). This shell forwards a signal and
# removes the scratch directory whatever happened to crash.py.
CRASH_TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/signage-crash.XXXXXX")"
export CRASH_TMPDIR
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
  rm -rf "$CRASH_TMPDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
python3 "$here/crash.py" "$bin" &
pid=$!
wait "$pid"
status=$?
pid=
exit "$status"
