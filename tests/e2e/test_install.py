"""`conformance` installed from a wheel (not editable) finds its profiles, specs and run.ini, and
runs; the wheel is the distribution `conformance-kit` (the name `conformance` on PyPI is another
project's) with the extras docs/fuzz.md's recipes install it with.

The wheel is built from a copy of the checkout (`pip wheel .` builds in-tree: it would leave
build/ and *.egg-info in the working tree, and a stale build/lib can leak into later wheels).
It is installed into a fresh venv that sees the running interpreter's dependencies through a
.pth file (no download at test time), and the commands run from a scratch directory, so
neither the source tree nor the editable install of the running environment is imported."""

from __future__ import annotations

import email
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
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from conformance.run.profiles import load_profile

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTION = "conformance-kit"
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
    (found,) = (tmp / "dist").glob("conformance_kit-*.whl")
    return found


def metadata(wheel: Path) -> email.message.Message:
    archive = zipfile.ZipFile(wheel)
    [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    return email.message_from_bytes(archive.read(name))


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
    code = ("import json, conformance, conformance.run.profiles as p; print(json.dumps("
            "{'file': conformance.__file__, 'data': str(p.DATA_ROOT), 'ini': str(p.RUN_INI)}))")
    result = run(installed["python"], "-c", code, cwd=installed["work"], env=clean_env(), timeout=60)
    assert result.returncode == 0, result.stderr
    where = json.loads(result.stdout)
    env_dir = installed["env"].resolve()
    assert Path(where["file"]).resolve().is_relative_to(env_dir)
    assert Path(where["data"]) == Path(where["file"]).resolve().parent / "_data"
    assert Path(where["ini"]).is_file()


def test_installed_list(installed: dict[str, Path]) -> None:
    """`conformance list` names each profile with its document (from its YAML, none loaded);
    `conformance list PROFILE` ends with its counts."""
    result = run(installed["bin"] / "conformance", "list", cwd=installed["work"], env=clean_env(), timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("bindu", "canon-verbs"):
        profile = load_profile(name)
        assert re.search(rf"^{re.escape(name)}\s+{re.escape(profile.spec_relpath)}\s", result.stdout,
                         re.M), result.stdout
        one = run(installed["bin"] / "conformance", "list", name, cwd=installed["work"], env=clean_env(),
                  timeout=60)
        assert one.returncode == 0, one.stdout + one.stderr
        assert one.stdout.splitlines()[-1].startswith(
            f"{name}: {len(profile.requirements)} requirements, {len(profile.faults)} faults, "
            f"{len(profile.variants)} variants; "), one.stdout[-500:]


def test_installed_run(installed: dict[str, Path]) -> None:
    """The README's first command, from the installed wheel: every requirement of the profile."""
    report = installed["work"] / "r"
    result = run(installed["bin"] / "conformance", "run", "bindu", "--budget", "quick",
                 "--report", report, cwd=installed["work"], env=clean_env(), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (report / "report.html").is_file()
    summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
    assert summary["spec"]["path"] == "specs/bindu/openapi.yaml"
    assert summary["counts"]["passed"] == len(load_profile("bindu").requirements), summary["counts"]
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


def test_the_wheel_is_the_kit_distribution_with_its_extras(wheel: Path) -> None:
    """Named `conformance-kit` (free on PyPI; `conformance` is taken), the command `conformance`, and
    the `redis` extra bringing what the shared example database needs."""
    meta = metadata(wheel)
    assert canonicalize_name(meta["Name"]) == DISTRIBUTION
    assert "redis" in meta.get_all("Provides-Extra")
    needs = [Requirement(r) for r in meta.get_all("Requires-Dist")]
    assert [r.name for r in needs if r.marker and r.marker.evaluate({"extra": "redis"})
            and not r.marker.evaluate({"extra": ""})] == ["redis"]
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in zipfile.ZipFile(wheel).namelist()
                                                    if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "conformance = conformance.cli:main" in entry_points


FUZZ = ROOT / "docs" / "fuzz.md"


def recipe_installs() -> list[str]:
    """Every requirement docs/fuzz.md's recipes install the kit by (`pip install ...` lines)."""
    text = FUZZ.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if re.search(r"\bpip install\b", line)]
    return [spec for line in lines for spec in re.findall(r'"([^"]*conformance[^"]*)"', line)]


def test_the_recipes_install_the_kit_by_its_name_with_only_the_extras_they_need(wheel: Path,
                                                                               tmp_path: Path) -> None:
    """docs/fuzz.md's Kubernetes and shell recipes: the kit by its distribution name, with the `redis`
    extra their shared Redis database needs and nothing else (no dev extra, no placeholder git URL);
    pip finds the wheel by that very requirement."""
    specs = recipe_installs()
    assert len(specs) >= 2, specs  # one per recipe
    provided = set(metadata(wheel).get_all("Provides-Extra"))
    for spec in specs:
        requirement = Requirement(spec)
        assert canonicalize_name(requirement.name) == DISTRIBUTION and requirement.url is None, spec
        assert requirement.extras == {"redis"} <= provided, spec
    target = tmp_path / "site"
    result = run(sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--find-links",
                 wheel.parent, "--target", target, specs[0], cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (target / "conformance" / "cli.py").is_file()
