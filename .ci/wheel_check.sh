#!/usr/bin/env bash
# The wheel as users get it (issue 32): build it, check that it holds one top-level package, install it into a fresh
# virtual environment (no editable install, no repository on sys.path) and run the quickstart and `privgame report`
# from a research folder that has packages of its own named analysis, attacks, games, mechanisms and data.  Each of
# those raises on import, so privgame reaching for any of them fails the check.  The shipped data sets must load
# from the installed package.  Usage: .ci/wheel_check.sh [PYTHON]   (default: .venv/bin/python, which builds)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=${1:-.venv/bin/python}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/privgame-wheel.XXXXXX")
trap 'rm -rf "$WORK" "$REPO/build"' EXIT

rm -rf dist build
"$PY" -m pip wheel --no-deps --no-build-isolation --quiet -w dist . 2>&1 | grep -v "^WARNING: Location" || true
WHEEL=$(ls dist/privgame-*.whl)
TOP=$("$PY" - "$WHEEL" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
print(" ".join(sorted({n.split("/")[0] for n in names})))
EOF
)
echo "wheel top level: $TOP"
case "$TOP" in
    "privgame privgame-"*".dist-info") ;;
    *) echo "FAIL: the wheel must hold one top-level package, privgame/ (and its dist-info); it holds: $TOP" >&2; exit 1 ;;
esac

# a fresh environment; the project's dependencies come from the package index (pip's cache after make test)
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet "$WHEEL" 2>&1 | grep -v "^WARNING: Location" || true

# a research folder with packages of its own under privgame's old top-level names, and a data/ package
mkdir -p "$WORK/research"
for pkg in analysis attacks games mechanisms data; do
    mkdir "$WORK/research/$pkg"
    echo "raise ImportError('the research folder\\'s own $pkg package was imported')" > "$WORK/research/$pkg/__init__.py"
done
cp experiments/quickstart.toml "$WORK/research/"
cd "$WORK/research"
export PYTHONPATH=""  # nothing of the repository on sys.path
"$WORK/venv/bin/python" - "$REPO" <<'EOF'
import sys
from pathlib import Path
import privgame
repo = Path(sys.argv[1]).resolve()
where = Path(privgame.__file__).resolve()
assert repo not in where.parents, f"privgame was imported from the repository ({where}), not from the wheel"
assert not any(str(repo) == str(Path(p).resolve()) for p in sys.path if p), sys.path
from privgame.data import dataset_names, get_dataset
sizes = {name: len(get_dataset(name).table()) for name in dataset_names()}
assert sizes == {"adult": 48_842, "compas": 7_214, "digits": 1_797}, sizes
print(f"privgame imported from {where.parent}; shipped data sets load: {sizes}")
EOF
"$WORK/venv/bin/privgame" run quickstart.toml --out runs/quickstart --n-jobs 2 --no-progress
"$WORK/venv/bin/privgame" report runs/quickstart --format csv > report.csv
"$WORK/venv/bin/privgame" report runs/quickstart
"$WORK/venv/bin/python" - <<'EOF'
import pandas as pd
import privgame

def median_at_4(table):
    row = table[table["mechanism.epsilon"] == 4.0].iloc[0]
    return round(float(row["steinke.epsilon_lb_median"]), 3)

cli = median_at_4(pd.read_csv("report.csv"))
results = privgame.run("quickstart.toml")  # the Python API, into a temporary directory
api = median_at_4(results.summary())
assert cli == api == 3.883, (cli, api)
print(f"wheel check passed: epsilon = 4, median lower bound {cli} (privgame run) and {api} (privgame.run)")
EOF
