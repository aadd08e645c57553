"""The ledger from the shell: every command, --json on each, and `labcoat run -- CMD`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from labcoat.ledger import Ledger

from .tamper import raw_sql


def as_json(res):
    assert res.code == 0, res.err
    return json.loads(res.out)


@pytest.fixture
def book(cli, location):
    """Three entries added and resolved through the CLI."""
    L = ("--ledger", location)
    first = as_json(
        cli(
            "ledger",
            "add",
            "bad batches cause spikes",
            "--predict",
            "spikes repeat at batch 1234",
            "--tag",
            "spikes",
            "--tag",
            "data",
            *L,
            "--json",
        )
    )
    second = as_json(
        cli(
            "ledger",
            "add",
            "Adam eps too small",
            "--predict",
            "eps=1e-6 removes spikes",
            "--tag",
            "spikes",
            "--parent",
            str(first["id"]),
            *L,
            "--json",
        )
    )
    third = as_json(
        cli(
            "ledger",
            "add",
            "eval leaks train",
            "--predict",
            "overlap is 0",
            "--tag",
            "eval",
            *L,
            "--json",
        )
    )
    as_json(
        cli(
            "ledger",
            "resolve",
            str(first["id"]),
            "--result",
            "spikes moved after reshuffle",
            "--verdict",
            "refuted",
            "--conclusion",
            "not the data",
            *L,
            "--json",
        )
    )
    as_json(
        cli(
            "ledger",
            "resolve",
            str(second["id"]),
            "--result",
            "gone with eps=1e-6",
            "--verdict",
            "confirmed",
            *L,
            "--json",
        )
    )
    return L, first["id"], second["id"], third["id"]


def listed(cli, L, *args):
    return [e["id"] for e in as_json(cli("ledger", "list", *L, "--json", *args))["entries"]]


def test_add_prints_the_id(book):
    L, a, b, c = book
    assert (a, b, c) == (1, 2, 3)


def test_list_filters_with_and_and_or(cli, book):
    L, a, b, c = book
    assert listed(cli, L) == [a, b, c]
    assert listed(cli, L, "--tag", "spikes", "--verdict", "confirmed") == [b]  # AND
    assert listed(cli, L, "--verdict", "refuted", "--verdict", "open") == [
        a,
        c,
    ]  # OR within a filter
    assert listed(cli, L, "--tag", "eval", "--verdict", "refuted", "--any") == [
        a,
        c,
    ]  # OR across filters
    assert listed(cli, L, "--text", "RESHUFFLE") == [a]
    assert listed(cli, L, "--since", "2000-01-01", "--until", "2999-12-31") == [a, b, c]
    assert listed(cli, L, "--until", "2000-01-01") == []
    assert listed(cli, L, "--limit", "1") == [a]
    table = cli("ledger", "list", *L)
    assert table.code == 0 and "Adam" in table.out and "confirmed" in table.out


def test_show_entry_with_history(cli, book):
    L, a, b, c = book
    shown = as_json(cli("ledger", "show", str(b), *L, "--json"))
    assert shown["entry"]["parents"] == [a] and [h["verdict"] for h in shown["history"]] == [
        "open",
        "confirmed",
    ]
    text = cli("ledger", "show", str(b), *L)
    assert text.code == 0 and "eps=1e-6 removes spikes" in text.out and "revisions" in text.out
    assert cli("ledger", "show", *L).code == 2
    missing = cli("ledger", "show", "99", *L)
    assert missing.code == 2 and "entry 99: there is no such entry" in missing.err


def test_resolve_validates_the_verdict(cli, book):
    L, a, b, c = book
    res = cli("ledger", "resolve", str(c), "--result", "r", "--verdict", "open", *L)
    assert res.code == 2


def test_verify_json_and_exit_status(cli, book, location):
    L = book[0]
    good = as_json(cli("ledger", "verify", *L, "--json"))
    assert good["ok"] is True and good["predictions"]["predicted_first"] == 2
    raw_sql(location, "UPDATE entry_revisions SET result = 'spikes stayed' WHERE id = 4")
    bad = cli("ledger", "verify", *L, "--json")
    assert bad.code == 1
    report = json.loads(bad.out)
    assert (
        report["ok"] is False
        and report["breaks"][0]["table"] == "entry_revisions"
        and report["breaks"][0]["row_id"] == 4
    )
    text = cli("ledger", "verify", *L)
    assert text.code == 1 and "BROKEN" in text.out and "entry_revisions row 4" in text.out


def test_export_markdown_and_json(cli, book, tmp_path):
    L, a, b, c = book
    md = cli("ledger", "export", "--format", "md", *L)
    assert md.code == 0
    assert "# Ledger chronicle" in md.out and "### #2 Adam eps too small — **confirmed**" in md.out
    assert "Follows from: #1" in md.out and "Prediction (revision 1" in md.out
    out = tmp_path / "ledger.json"
    summary = as_json(cli("ledger", "export", "--format", "json", "-o", str(out), *L, "--json"))
    assert summary["output"] == str(out)
    data = json.loads(out.read_text())
    assert [e["id"] for e in data["entries"]] == [a, b, c] and len(
        data["entries"][0]["history"]
    ) == 2
    assert data["verify"]["ok"] is True
    inline = as_json(cli("ledger", "export", "--format", "md", *L, "--json"))
    assert inline["content"].startswith("# Ledger chronicle")


def test_export_to_an_unwritable_path_is_one_line(cli, book, tmp_path):
    L = book[0]
    res = cli("ledger", "export", "-o", tmp_path / "no" / "such" / "dir" / "out.md", *L)
    assert res.code == 2 and res.err.count("\n") == 1
    assert "does not exist" in res.err and "mkdir -p" in res.err


def test_every_ledger_command_has_json_and_ledger_options(cli):
    from labcoat.cli.ledger import ledger, run_command

    for command in [*ledger.commands.values(), run_command]:
        names = {p.name for p in command.params}
        assert {"as_json", "location"} <= names, command.name


@pytest.fixture
def child_env(monkeypatch, subprocess_env):
    monkeypatch.setenv("PYTHONPATH", subprocess_env["PYTHONPATH"])


def test_run_wraps_a_command_tees_output_and_exits_with_its_code(cli, location, child_env):
    script = (
        "import sys; print('epoch 1 loss 0.5'); print('warning: slow', file=sys.stderr); "
        "sys.exit(3)"
    )
    res = cli(
        "run",
        "--ledger",
        location,
        "--config",
        '{"lr": 0.1}',
        "--seed",
        "torch=0",
        "--",
        sys.executable,
        "-c",
        script,
    )
    assert res.code == 3
    assert "epoch 1 loss 0.5" in res.out and "warning: slow" in res.err
    assert "run 1 recorded (failed, exit 3" in res.err
    with Ledger(location, create=False) as ledger:
        run = ledger.get_run(1)
        assert (run.status, run.exit_status, run.config, run.seeds["torch"]) == (
            "failed",
            3,
            {"lr": 0.1},
            0,
        )
        assert run.command == [sys.executable, "-c", script]
        output = ledger.run_output(1)
        assert "epoch 1 loss 0.5" in output and "warning: slow" in output


def test_run_json_keeps_stdout_for_the_record(cli, location, child_env):
    res = cli("run", "--ledger", location, "--json", "--", sys.executable, "-c", "print('hello')")
    assert res.code == 0
    record = json.loads(res.out)
    assert (record["run"], record["status"], record["exit_status"]) == (1, "ok", 0)
    assert "hello" in res.err


def test_wrapped_command_records_findings_into_its_run(cli, location, child_env):
    script = (
        "from labcoat.findings import Finding; from labcoat.ledger import Ledger; "
        "Ledger.existing().record_findings([Finding('grads_flow', 'model', 'fail', 'no grad', "
        "falsifies='graph detached')], source='doctor')"
    )
    res = cli("run", "--ledger", location, "--", sys.executable, "-c", script)
    assert res.code == 0, res.err
    shown = as_json(cli("ledger", "show", "--run", "1", "--ledger", location, "--json", "--output"))
    checks = [f["check"] for f in shown["findings"]]
    # the command's own finding, then what `labcoat run` read in its logs (labcoat.logs)
    assert [c for c in checks if not c.startswith("logs.")] == ["grads_flow"]
    assert shown["entries"] == []


def test_run_of_a_missing_command_is_recorded_and_exits_127(cli, location):
    res = cli("run", "--ledger", location, "--", "labcoat-no-such-program")
    assert res.code == 127 and res.err.startswith(
        "labcoat: error: cannot start 'labcoat-no-such-program'"
    )
    with Ledger(location, create=False) as ledger:
        assert ledger.get_run(1).exit_status == 127


def test_run_killed_by_a_signal(cli, location, child_env):
    res = cli(
        "run",
        "--ledger",
        location,
        "--",
        sys.executable,
        "-c",
        "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
    )
    assert res.code == 128 + 15
    with Ledger(location, create=False) as ledger:
        assert ledger.get_run(1).status == "killed"


def test_runs_and_diff_commands(cli, location, child_env, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("1\n")
    assert (
        cli(
            "run",
            "--ledger",
            location,
            "--data",
            str(data),
            "--config",
            '{"lr": 0.1}',
            "--",
            sys.executable,
            "-c",
            "pass",
        ).code
        == 0
    )
    data.write_text("2\n")
    assert (
        cli(
            "run",
            "--ledger",
            location,
            "--data",
            str(data),
            "--config",
            '{"lr": 0.2}',
            "--",
            sys.executable,
            "-c",
            "pass",
        ).code
        == 0
    )
    runs = as_json(cli("ledger", "runs", "--ledger", location, "--json"))
    assert [r["id"] for r in runs["runs"]] == [1, 2] and runs["runs"][0]["status"] == "ok"
    diff = as_json(cli("ledger", "provenance-diff", "1", "2", "--ledger", location, "--json"))
    assert [c["key"] for c in diff["changes"]["config"]] == ["lr"]
    assert [c["key"] for c in diff["changes"]["data"]] == [str(data)]
    text = cli("ledger", "provenance-diff", "1", "2", "--ledger", location)
    assert text.code == 0 and "lr" in text.out
    shown = cli("ledger", "show", "--run", "2", "--ledger", location)
    assert shown.code == 0 and "config" in shown.out


@pytest.fixture
def unreadable(monkeypatch):
    """Make files named 'secret*' unreadable, as chmod 000 would for anyone but root."""
    import builtins
    import pathlib

    def refuse(real):
        def wrapper(target, *args, **kwargs):
            if pathlib.Path(target).name.startswith("secret"):
                raise PermissionError(13, "Permission denied", str(target))
            return real(target, *args, **kwargs)

        return wrapper

    # the package re-exports a function named fingerprint, so reach the module through sys.modules
    monkeypatch.setattr(
        sys.modules["labcoat.provenance.fingerprint"], "open", refuse(builtins.open), raising=False
    )
    monkeypatch.setattr(pathlib.Path, "read_text", refuse(pathlib.Path.read_text))


@pytest.mark.parametrize(
    "option, says",
    [
        ("--config", "--config: cannot read {path} (Permission denied)"),
        ("--data", "data: cannot read '{path}' (Permission denied)"),
    ],
)
def test_run_with_an_unreadable_file_is_one_line(cli, tmp_path, unreadable, option, says):
    path = tmp_path / "secret.json"
    path.write_text("{}")
    res = cli(
        "run", "--ledger", tmp_path / "ledger.db", option, path, "--", sys.executable, "-c", "pass"
    )
    assert res.code == 2 and res.err.strip() == "labcoat: error: " + says.format(path=path) + (
        ""
        if option == "--config"
        else "; fix its permissions or leave it out of the data to fingerprint"
    )


def test_run_config_from_files(cli, tmp_path, child_env):
    location = str(tmp_path / "ledger.db")
    toml = tmp_path / "cfg.toml"
    toml.write_text('lr = 0.1\n[opt]\nname = "adam"\n')
    yaml_like = tmp_path / "cfg.yaml"
    yaml_like.write_text("lr: 0.1\n")
    assert (
        cli(
            "run", "--ledger", location, "--config", str(toml), "--", sys.executable, "-c", "pass"
        ).code
        == 0
    )
    assert (
        cli(
            "run",
            "--ledger",
            location,
            "--config",
            str(yaml_like),
            "--",
            sys.executable,
            "-c",
            "pass",
        ).code
        == 0
    )
    with Ledger(location) as ledger:
        assert ledger.get_run(1).config == {"lr": 0.1, "opt": {"name": "adam"}}
        assert ledger.get_run(2).config == {"file": str(yaml_like), "text": "lr: 0.1\n"}
    bad = cli(
        "run", "--ledger", location, "--config", "{lr: 0.1}", "--", sys.executable, "-c", "pass"
    )
    assert bad.code == 2 and "--config: inline JSON does not parse" in bad.err


SLEEPER = "import time; print('started', flush=True); time.sleep(30)"


@pytest.mark.parametrize("how", ["ctrl-c to the process group", "sigterm to labcoat"])
def test_signals_reach_the_command_and_are_recorded(tmp_path, subprocess_env, how):
    location = str(tmp_path / "ledger.db")
    cmd = [
        sys.executable,
        "-m",
        "labcoat",
        "run",
        "--ledger",
        location,
        "--",
        sys.executable,
        "-c",
        SLEEPER,
    ]
    proc = subprocess.Popen(
        cmd,
        env=subprocess_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout.readline() == "started\n"
    if (
        how == "ctrl-c to the process group"
    ):  # what a terminal does: labcoat and the command both get it
        os.killpg(proc.pid, signal.SIGINT)
        expected = ("interrupted", 130)
    else:
        proc.send_signal(signal.SIGTERM)
        expected = ("killed", 128 + signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == expected[1]
    with Ledger(location, create=False) as ledger:
        run = ledger.get_run(1)
        assert (run.status, run.exit_status) == expected and run.duration_s < 20


def test_the_real_command_line(tmp_path, subprocess_env):
    location = str(tmp_path / "ledger.db")
    cmd = [sys.executable, "-m", "labcoat"]
    out = subprocess.run(
        [*cmd, "run", "--ledger", location, "--", sys.executable, "-c", "print('live')"],
        env=subprocess_env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and out.stdout == "live\n"
    verify = subprocess.run(
        [*cmd, "ledger", "verify", "--ledger", location, "--json"],
        env=subprocess_env,
        capture_output=True,
        text=True,
    )
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"] is True


@pytest.fixture
def no_drain3(monkeypatch):
    """drain3 absent, as in `make demo`'s environment: a run notes that its logs are not kept."""
    import labcoat.extras

    present = labcoat.extras.available
    monkeypatch.setattr(labcoat.extras, "available", lambda lib: lib != "drain3" and present(lib))


@pytest.mark.parametrize("option", [("--seed", "nope"), ("--factor", "lr")])
def test_a_bad_run_option_is_one_line_before_any_note_or_ledger(cli, tmp_path, no_drain3, option):
    location = tmp_path / "ledger.db"
    res = cli("run", "--ledger", location, *option, "--", sys.executable, "-c", "pass")
    assert res.code == 2 and res.err.count("\n") == 1, res.err
    assert res.err.startswith(f"labcoat: error: {option[0]}: expected NAME=")
    assert not location.exists()  # refused before the ledger was created


def test_a_good_run_option_without_drain3_notes_it_and_runs(cli, tmp_path, no_drain3, child_env):
    location = tmp_path / "ledger.db"
    res = cli("run", "--ledger", location, "--seed", "torch=0", "--", sys.executable, "-c", "pass")
    assert res.code == 0 and "drain3 is not installed" in res.err and location.exists()
