import subprocess
import sys

import click
import pytest

from labcoat.cli import main as cli_main
from labcoat.errors import InputError


@pytest.fixture
def boom_command(monkeypatch):
    @click.command()
    @click.option("--kind", default="input")
    def boom(kind):
        if kind == "input":
            raise InputError("data: expected (X, y) tensors; got a str")
        raise RuntimeError("a labcoat bug")

    monkeypatch.setitem(cli_main.COMMANDS, "boom", "tests.test_cli_main:_BOOM")
    monkeypatch.setattr(sys.modules[__name__], "_BOOM", boom, raising=False)
    return boom


def test_input_error_is_one_line_and_exit_2(boom_command, capsys):
    assert cli_main.main(["boom"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "labcoat: error: data: expected (X, y) tensors; got a str"


def test_debug_shows_traceback(boom_command, capsys):
    assert cli_main.main(["boom", "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_internal_error_is_one_line_exit_3(boom_command, capsys):
    assert cli_main.main(["boom", "--kind", "bug"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error" in err[0]


def test_usage_error_exit_2(capsys):
    assert cli_main.main(["no-such-command"]) == 2


def test_debug_after_double_dash_is_not_ours():
    args, debug = cli_main._split_debug(["run", "--", "python", "x.py", "--debug"])
    assert not debug and args[-1] == "--debug"


def test_python_dash_m_matches_script(subprocess_env):
    out = subprocess.run([sys.executable, "-m", "labcoat", "--help"], capture_output=True, text=True, env=subprocess_env)
    assert out.returncode == 0 and "labcoat" in out.stdout


def test_command_exit_codes_pass_through(monkeypatch):
    @click.command()
    def verdict():
        raise click.exceptions.Exit(1)

    monkeypatch.setitem(cli_main.COMMANDS, "verdict", "tests.test_cli_main:_VERDICT")
    monkeypatch.setattr(sys.modules[__name__], "_VERDICT", verdict, raising=False)
    assert cli_main.main(["verdict"]) == 1
