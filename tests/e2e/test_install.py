"""`conformance` installed from a wheel (not editable) finds its profiles, specs and run.ini.

The wheel is built from a copy of the checkout (`pip wheel .` builds in-tree: it would leave
build/ and *.egg-info in the working tree, and a stale build/lib can leak into later wheels).
It is installed into a fresh venv that sees the running interpreter's dependencies through a
.pth file (no download at test time), and the commands run from a scratch directory, so
neither the source tree nor the editable install of the running environment is imported."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.version import Version

from conformance.profiles import load_profile

ROOT = Path(__file__).resolve().parents[2]
# cheap requirements of the bindu profile (see `conformance list bindu`)
ONLY = ("BINDU-RPC-PARSE-ERROR", "BINDU-RPC-METHOD-NOT-FOUND", "BINDU-TASK-NOT-FOUND")
IGNORE = shutil.ignore_patterns(".git", ".venv", ".tox", "build", "dist", "*.egg-info", "reports",
                                "__pycache__", ".*_cache", ".hypothesis")
# pip could not get the build backend (setuptools>=68) because there is no package index
OFFLINE = ("Could not find a version that satisfies the requirement setuptools",
           "No matching distribution found for setuptools")


def run(*cmd: str | Path, cwd: Path, timeout: float = 120,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def can_build_without_isolation() -> bool:
    """setuptools>=68 (as pyproject.toml requires) plus bdist_wheel in this interpreter."""
    try:
        setuptools = Version(version("setuptools"))
    except PackageNotFoundError:
        return False
    if setuptools >= Version("70.1"):  # bdist_wheel is part of setuptools
        return True
    if setuptools < Version("68"):
        return False
    try:
        version("wheel")
    except PackageNotFoundError:
        return False
    return True


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=IGNORE)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(tmp / "dist"), "."]
    if can_build_without_isolation():
        cmd.insert(-1, "--no-build-isolation")
    result = run(*cmd, cwd=src, timeout=300)
    if result.returncode != 0:
        output = result.stdout + result.stderr
        if any(text in output for text in OFFLINE):
            pytest.skip("cannot build the wheel: setuptools>=68 is not installed here and the package "
                        f"index cannot be reached for it:\n{output[-2000:]}")
        pytest.fail(f"pip wheel failed ({result.returncode}):\n{output[-4000:]}")
    (found,) = (tmp / "dist").glob("conformance-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh venv with the wheel in it: its bin dir, its python and a scratch working dir."""
    tmp = tmp_path_factory.mktemp("installed")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / ("python.exe" if os.name == "nt" else "python")
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                  cwd=tmp, timeout=30).stdout.strip()
    # the dependencies: plain paths, so the .pth files there (the editable finder of the
    # running environment's conformance) are not processed
    paths = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    Path(purelib, "_host_site_packages.pth").write_text(
        "".join(f"{p}\n" for p in paths if Path(p).is_dir()), encoding="utf-8")
    result = run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
                 wheel, cwd=tmp, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    work = tmp / "work"
    work.mkdir()
    return {"env": env_dir, "bin": bin_dir, "python": python, "work": work}


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}


def test_wheel_carries_profiles_specs_and_run_ini(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "conformance/run.ini" in names
    assert "conformance/_data/specs/bindu/openapi.yaml" in names
    assert "conformance/_data/profiles/bindu.yaml" in names
    expected = {f"conformance/_data/{p.relative_to(ROOT).as_posix()}"
                for folder in ("profiles", "specs") for p in (ROOT / folder).rglob("*") if p.is_file()}
    assert expected - names == set()
    # pyproject.toml lists the packages by hand: every module of the source must be in the wheel
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "conformance").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert modules - names == set()


def test_installed_package_is_the_wheels(installed: dict[str, Path]) -> None:
    code = ("import json, conformance, conformance.profiles as p; print(json.dumps("
            "{'file': conformance.__file__, 'data': str(p.DATA_ROOT), 'ini': str(p.RUN_INI)}))")
    result = run(installed["python"], "-c", code, cwd=installed["work"], env=clean_env(), timeout=60)
    assert result.returncode == 0, result.stderr
    where = json.loads(result.stdout)
    env_dir = installed["env"].resolve()
    assert Path(where["file"]).resolve().is_relative_to(env_dir)
    assert Path(where["data"]) == Path(where["file"]).resolve().parent / "_data"
    assert Path(where["ini"]).is_file()


def test_installed_list(installed: dict[str, Path]) -> None:
    result = run(installed["bin"] / "conformance", "list", cwd=installed["work"], env=clean_env(), timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("bindu", "canon-verbs"):
        count = len(load_profile(name).requirements)
        assert re.search(rf"^{re.escape(name)}\s+{count} requirements\b", result.stdout, re.M), result.stdout


def test_installed_run(installed: dict[str, Path]) -> None:
    report = installed["work"] / "r"
    only = [arg for rid in ONLY for arg in ("--only", rid)]
    result = run(installed["bin"] / "conformance", "run", "bindu", "--budget", "quick", *only,
                 "--report", report, cwd=installed["work"], env=clean_env(), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (report / "report.html").is_file()
    summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
    assert summary["spec"]["path"] == "specs/bindu/openapi.yaml"
    # the page quotes the spec, read from the installed package data
    assert "specs/bindu/openapi.yaml around line" in (report / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("how", ["copied-file", "by-name"])
def test_installed_pytest_plugin_runs_a_profile_outside_the_checkout(installed: dict[str, Path],
                                                                     how: str) -> None:
    """`pytest bindu.yaml` on a copy of the profile (or `pytest --conformance-profile bindu`)
    in a folder of the user's: collected, graded, with the reports `conformance run` writes."""
    work = installed["work"] / how
    work.mkdir()
    target = ["bindu.yaml"] if how == "copied-file" else ["--conformance-profile", "bindu"]
    if how == "copied-file":
        shutil.copy(ROOT / "profiles" / "bindu.yaml", work / "bindu.yaml")
    only = [arg for rid in ONLY for arg in ("--only", rid)]
    result = run(installed["python"], "-m", "pytest", *target, "-p", "no:cacheprovider", "--budget", "quick",
                 *only,
                 "--report", "r", cwd=work, env=clean_env(), timeout=180)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    # --only: the rest is skipped, not run
    assert f"{len(load_profile('bindu').requirements)} passed" not in out
    assert re.search(r"^PASS: .*Grade: ungraded\.$", result.stdout, re.M), out[-3000:]
    assert "report: r/report.html" in result.stdout
    for name in ("summary.json", "junit.xml", "report.html", "badge.svg", "allure-results"):
        assert (work / "r" / name).exists(), name
    summary = json.loads((work / "r" / "summary.json").read_text(encoding="utf-8"))
    assert [r["id"] for r in summary["requirements"] if r["status"] == "passed"] == list(ONLY)
