#!/bin/sh
# The CI workflows (.github/workflows/*.yml) against the GitHub Actions
# workflow schema, with action-validator (npm @action-validator/cli, installed
# under build/tools the first time), and the MI50 gate's steps present.
#   tests/test_workflows.sh
set -u
checks=0
fail() { echo "workflows: FAIL $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# ACTION_VALIDATOR, one on PATH, or build/tools' (installed there the first time)
validator=${ACTION_VALIDATOR:-$(command -v action-validator)} || validator=build/tools/node_modules/.bin/action-validator
if [ ! -x "$validator" ] && command -v npm >/dev/null 2>&1; then
    echo "workflows: installing @action-validator/cli@0.6.0 under build/tools (npm)"
    npm install --prefix build/tools --no-audit --no-fund --silent @action-validator/cli@0.6.0 >"$tmp/npm.log" 2>&1 ||
        { cat "$tmp/npm.log"; fail "npm install @action-validator/cli failed"; }
fi
[ -x "$validator" ] || fail "action-validator not found and no npm to install it (Debian: apt-get install npm; .ci/run does)"
set -- .github/workflows/*.yml
[ -f "$1" ] || fail "no workflow in .github/workflows"
for wf in "$@"; do
    "$validator" "$wf" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "$wf does not match the workflow schema"; }
    checks=$((checks + 1))
done
# the checker can fail: the same file with a misspelt key is refused
sed 's/runs-on:/runs_on:/' .github/workflows/mi50.yml >"$tmp/bad.yml"
"$validator" "$tmp/bad.yml" >/dev/null 2>&1 && fail "action-validator accepted a job without runs-on"
checks=$((checks + 1))
# the gate: the ladder with its log and report, the compare with the MI50
# baseline, after failures too, and the artifacts always
for step in 'runs-on: \[self-hosted, mi50\]' 'test_deltanet --log results/ --junit report.xml' \
    'test_deltanet --compare results/baseline-mi50.tsv' 'if: success() || failure()' 'actions/upload-artifact@'; do
    grep -q -- "$step" .github/workflows/mi50.yml || fail "mi50.yml has no '$step'"
    checks=$((checks + 1))
done
echo "workflows: $checks checks passed"
