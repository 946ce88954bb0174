"""Build an isolated virtual environment for each released synthetic-data generator.

Usage::

    python build_env.py NAME [NAME ...]
    python build_env.py --list

For each NAME this creates ``experiments/.envs/gen-NAME`` as a Python 3.11 venv, installs
``requirements/NAME.txt`` into it (a ``torch==`` pin there is installed first and on its own, so that pip
takes the local CPU wheel and never resolves another torch), writes the resolved ``pip freeze`` to
``freeze.txt`` and a stamp holding the sha256 of the requirements file. A second call with unchanged
requirements prints "up to date" and does nothing. pip's output ends up in ``gen-NAME/build.log``; a failed
build removes the half-built folder, leaves that output in ``experiments/.envs/gen-NAME.log`` and exits
non-zero with one line.

Standard library only; run it with any Python 3.11.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements"
ENVS = HERE.parent / ".envs"
STAMP = "requirements.sha256"
PYENV_PYTHON = Path("/root/.pyenv/versions/3.11.7/bin/python3")


class BuildError(Exception):
    """A build step failed; the message is the one line to print."""


def known_names() -> list[str]:
    """Names that have a requirements file."""
    return sorted(p.stem for p in REQUIREMENTS.glob("*.txt"))


def base_python() -> str:
    """The Python 3.11 interpreter that new venvs are made from."""
    if PYENV_PYTHON.exists():
        return str(PYENV_PYTHON)
    base = getattr(sys, "_base_executable", sys.executable)
    if sys.version_info[:2] != (3, 11):
        raise BuildError(f"need Python 3.11 to make the venv, found {sys.version.split()[0]} at {base}")
    return base


def torch_pin(requirements: Path) -> str | None:
    """The ``torch==X`` line of a requirements file, if it has one."""
    for line in requirements.read_text().splitlines():
        spec = line.split("#", 1)[0].strip().replace(" ", "")
        if spec.lower().startswith("torch=="):
            return spec
    return None


def run_logged(cmd: list[str], log: Path, step: str) -> None:
    """Run ``cmd``, appending its output to ``log``; raise BuildError naming ``step`` on failure."""
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in log.read_text().splitlines() if ln.strip()]
        errors = [ln for ln in lines if "ERROR" in ln]
        last = (errors or lines or ["no output"])[-1].strip()
        raise BuildError(f"{step} failed (exit {proc.returncode}): {last}")


def build(name: str) -> str:
    """Build (or confirm) the environment for ``name``; return a one-line status."""
    requirements = REQUIREMENTS / f"{name}.txt"
    if not requirements.exists():
        raise BuildError(f"no requirements file {requirements}")
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    env = ENVS / f"gen-{name}"
    stamp = env / STAMP
    if stamp.exists() and stamp.read_text().strip() == digest:
        return f"{name}: up to date ({env})"
    if env.exists():
        shutil.rmtree(env)
    ENVS.mkdir(parents=True, exist_ok=True)
    log = ENVS / f"gen-{name}.log"
    log.write_text("")
    start = time.monotonic()
    try:
        run_logged([base_python(), "-m", "venv", str(env)], log, "venv")
        pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
        torch = torch_pin(requirements)
        if torch is not None:
            run_logged([*pip, torch], log, f"pip install {torch}")
        run_logged([*pip, "-r", str(requirements)], log, "pip install -r")
        freeze = subprocess.run(
            [str(env / "bin" / "python"), "-m", "pip", "freeze", "--all"],
            capture_output=True,
            text=True,
            check=True,
        )
        (env / "freeze.txt").write_text(freeze.stdout)
        log.replace(env / "build.log")
        stamp.write_text(digest + "\n")
    except (BuildError, OSError, subprocess.CalledProcessError) as exc:
        shutil.rmtree(env, ignore_errors=True)
        raise BuildError(f"{name}: {exc} (log: {log})") from exc
    return f"{name}: built {env} in {time.monotonic() - start:.0f}s"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="generators to build")
    parser.add_argument("--list", action="store_true", help="print the known generator names")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(known_names()))
        return 0
    if not args.names:
        parser.error("give at least one NAME, or --list")
    failed = False
    for name in args.names:
        try:
            print(build(name), flush=True)
        except BuildError as exc:
            print(f"build_env: {exc}", file=sys.stderr, flush=True)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
