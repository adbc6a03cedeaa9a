"""One table of run options (conformance/run/options.py RUN_OPTIONS): `conformance run`'s
arguments, the pytest plugin's options and RunOptions are the same options, and what the
command hands to pytest (each xdist worker reads it back) is what it was given."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

import pytest

from conformance import cli
from conformance.run.options import RUN_OPTIONS, RunOptions, add_run_options

FILLED_IN = {"config", "baseline", "seconds"}  # what checked() fills in, never given


def test_the_table_gives_every_field_of_run_options_once() -> None:
    table = [option.field for option in RUN_OPTIONS]
    assert sorted(table) == sorted(f.name for f in fields(RunOptions) if f.name not in FILLED_IN)
    assert len({option.flag for option in RUN_OPTIONS}) == len(RUN_OPTIONS)


def given_line(tmp_path: Path) -> list[str]:
    return ["--target", "http://127.0.0.1:9", "--token", "t0ken", "--config", "c.yaml", "--budget", "quick",
            "--seed", "7", "--level", "should", "--only", "A-*", "--only", "B", "--skip", "C",
            "--report", str(tmp_path / "r"), "--junit", str(tmp_path / "j.xml"), "--fault", "f1",
            "--binding", "grpc,jsonrpc", "--binding", "jsonrpc", "--baseline", "b.yaml", "--allow-untested",
            "--gate", "live", "--max-time", "15m"]


def test_the_command_and_the_plugin_read_one_line_alike(tmp_path: Path) -> None:
    """`conformance run`'s arguments give RunOptions; its pytest_args(), parsed as the plugin
    declares its options, give the same RunOptions back (but --junit, pytest's own --junitxml)."""
    args = cli._parser("run").parse_args(["run", "bindu", *given_line(tmp_path)])
    options = RunOptions.given(args)
    assert options == RunOptions(target="http://127.0.0.1:9", token="t0ken", config_path="c.yaml",
                                 budget="quick", seed=7, level="should", only=("A-*", "B"), skip=("C",),
                                 report=tmp_path / "r", junit=tmp_path / "j.xml", faults=("f1",),
                                 bindings=("grpc", "jsonrpc"), baseline_path="b.yaml", allow_untested=True,
                                 gate="live", max_time="15m")
    plugin = argparse.ArgumentParser()
    add_run_options(plugin.add_argument, pytest=True)
    assert "--junit" not in options.pytest_args()
    back = RunOptions.from_pytest(plugin.parse_args(options.pytest_args()))
    assert back == RunOptions.given(args, junit=None)


def test_defaults_agree_and_only_the_command_reads_the_token_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFORMANCE_TOKEN", "from-env")
    command = RunOptions.given(cli._parser("run").parse_args(["run", "bindu"]))
    plugin = argparse.ArgumentParser()
    add_run_options(plugin.add_argument, pytest=True)
    from_pytest = RunOptions.from_pytest(plugin.parse_args([]))
    assert command.token == "from-env" and from_pytest.token is None
    assert RunOptions() == from_pytest == RunOptions.given(cli._parser("run").parse_args(["run", "bindu"]),
                                                            token=None)


def test_the_plugin_declares_the_table(pytestconfig: pytest.Config) -> None:
    """pytest's own parser takes the plugin's options (each under its prefixed dest)."""
    from conformance.drivers import plugin

    parser = pytest.Parser()
    plugin.pytest_addoption(parser)
    declared = {name for group in parser._groups for option in group.options for name in option.names()}
    assert {o.flag for o in RUN_OPTIONS if o.pytest} <= declared
    assert "--junit" not in declared
