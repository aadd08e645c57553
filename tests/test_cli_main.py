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
    out = subprocess.run(
        [sys.executable, "-m", "labcoat", "--help"],
        capture_output=True,
        text=True,
        env=subprocess_env,
    )
    assert out.returncode == 0 and "labcoat" in out.stdout


def test_command_exit_codes_pass_through(monkeypatch):
    @click.command()
    def verdict():
        raise click.exceptions.Exit(1)

    monkeypatch.setitem(cli_main.COMMANDS, "verdict", "tests.test_cli_main:_VERDICT")
    monkeypatch.setattr(sys.modules[__name__], "_VERDICT", verdict, raising=False)
    assert cli_main.main(["verdict"]) == 1


def _one_error_line(res) -> str:
    lines = res.err.strip().splitlines()
    assert res.code == 2 and len(lines) == 1, res.err
    assert lines[0].startswith("labcoat: error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ("no-such-command",),
            "no such command 'no-such-command'; choose one of: audit, checks, ",
        ),
        (("stats", "mean"), "stats mean: missing argument 'FILE'; see 'labcoat stats mean --help'"),
        (("stats", "mean", "x.csv"), "stats mean: missing option '--score'"),
        (
            ("doctor", "x.py", "--effort", "huge"),
            "doctor: invalid value for '--effort': 'huge' is not one of",
        ),
        (("ledger", "list", "--limit", "0"), "ledger list: invalid value for '--limit'"),
        (("checks", "extra"), "checks: got unexpected extra argument (extra)"),
    ],
)
def test_usage_errors_are_one_line_naming_the_command(cli, args, says):
    assert says in _one_error_line(cli(*args))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("doctr",), "no such command 'doctr' (did you mean 'doctor'?); see 'labcoat --help'"),
        (("stats", "compre"), "stats: no such command 'compre' (did you mean 'compare'?)"),
        (("watch", "reprot"), "watch: no such command 'reprot' (did you mean 'report'?)"),
    ],
)
def test_a_mistyped_command_names_the_closest_one(cli, args, says):
    assert says in _one_error_line(cli(*args))


def test_a_command_nothing_like_any_suggests_none_and_a_real_one_still_runs(cli):
    line = _one_error_line(cli("frobnicate"))
    assert "did you mean" not in line and "choose one of: audit, checks, " in line
    assert cli("checks", "--json", "--engine", "doctor").code == 0


def test_a_directory_given_for_a_file_is_a_one_line_error(cli, tmp_path):
    assert "is a directory" in _one_error_line(cli("stats", "mean", tmp_path, "--score", "acc"))


@pytest.mark.parametrize(
    ("args", "choices"),
    [
        ((), ", ".join(sorted(cli_main.COMMANDS))),
        (("watch",), "report"),
        (("ledger",), "add, export, findings"),
    ],
)
def test_a_group_without_its_command_lists_the_choices(cli, args, choices):
    line = _one_error_line(cli(*args))
    assert "missing command; choose one of: " + choices in line
    assert cli(*args, "--help").code == 0


def test_help_of_every_command_is_quick_and_does_not_import_torch(subprocess_env):
    code = (
        "import contextlib, io, sys\nfrom labcoat.cli.main import COMMANDS, main\nfor args in "
        "[[]] + [[name] for name in COMMANDS] + [['stats', 'mean'], ['ledger', 'add'], ['watch', "
        "'report']]:\n    with contextlib.redirect_stdout(io.StringIO()) as out:\n        assert "
        "main([*args, '--help']) == 0 and 'Usage: labcoat' in out.getvalue(), args\nassert "
        "'torch' not in sys.modules, 'torch was imported'\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr


def _leaf_commands():
    ctx = click.Context(cli_main.cli)
    stack = [(name, cli_main.cli.get_command(ctx, name)) for name in cli_main.COMMANDS]
    while stack:
        name, command = stack.pop()
        if isinstance(command, click.Group):
            stack += [
                (f"{name} {sub}", command.get_command(ctx, sub))
                for sub in command.list_commands(ctx)
            ]
        else:
            yield name, command


def test_every_command_has_json_and_help_text():
    leaves = dict(_leaf_commands())
    assert {"doctor", "checks", "stats mean", "ledger add", "run", "watch report"} <= set(leaves)
    for name, command in leaves.items():
        assert "as_json" in {p.name for p in command.params}, name
        assert command.help and all(
            getattr(p, "help", None) for p in command.params if isinstance(p, click.Option)
        ), name


def test_the_listed_help_of_each_command_is_its_own():
    """``labcoat --help`` reads summaries() instead of importing the commands: it must say what
    each command's own help says, at every width click may cut it to."""
    ctx = click.Context(cli_main.cli)
    assert set(cli_main.summaries()) == set(cli_main.COMMANDS)
    for name, summary in cli_main.summaries().items():
        command = cli_main.cli.get_command(ctx, name)
        for limit in (30, 45, 70, 200):
            listed = click.Command(name, help=summary).get_short_help_str(limit)
            assert listed == command.get_short_help_str(limit)


def test_top_level_help_imports_no_command_module(subprocess_env):
    code = (
        "import contextlib, io, sys\nfrom labcoat.cli.main import COMMANDS, main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n    assert main(['--help']) == 0\n"
        "assert all(name in out.getvalue() for name in COMMANDS)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('labcoat.cli.') and m not in "
        "('labcoat.cli.main', 'labcoat.cli.group'))))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == []
