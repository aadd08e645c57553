"""A missing optional dependency and an unwritable output path: one line, exit 2, before any
work starts (issue 24, items 3 and 4)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import numpy as np
import pytest

from labcoat.errors import InputError, LabcoatError
from labcoat.extras import EXTRAS, MissingExtraError, import_module, install_hint, require
from labcoat.outputs import check_writable


def block(monkeypatch, *modules: str) -> None:
    """Make ``modules`` look uninstalled: ``sys.modules[name] = None`` makes the import system
    answer "not found" (find_spec returns None, ``import`` raises ImportError)."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


# -- the helper -----------------------------------------------------------------------------


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_every_extra_names_its_pip_install_when_missing(monkeypatch, extra):
    require(extra)  # the healthy twin: the dev environment has every extra
    block(monkeypatch, *EXTRAS[extra])
    with pytest.raises(MissingExtraError) as caught:
        require(extra)
    message = str(caught.value)
    assert f'pip install "labcoat[{extra}]"' in message and "\n" not in message
    assert caught.value.exit_code == 2 and isinstance(caught.value, ImportError)
    with pytest.raises(MissingExtraError, match=r"labcoat\[" + extra):
        import_module(EXTRAS[extra][0], extra)


def test_require_loads_nothing(monkeypatch):
    """Checking for matplotlib must not import it (a second of startup for nothing)."""
    code = (
        "import sys; from labcoat.extras import require; require('report'); "
        "print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_only_part_of_an_extra(monkeypatch):
    block(monkeypatch, "datasketch")
    require("audit", modules=("cleanlab",))  # cleanlab is there
    with pytest.raises(MissingExtraError, match="datasketch"):
        require("audit", modules=("datasketch",))


def test_a_library_with_a_broken_dependency_is_not_called_missing(monkeypatch, tmp_path):
    """An ImportError from inside an installed library is its own, re-raised as it is."""
    (tmp_path / "fakelib").mkdir()
    (tmp_path / "fakelib" / "__init__.py").write_text("import not_a_module_anywhere_42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as caught:
        import_module("fakelib", "report")
    assert not isinstance(caught.value, MissingExtraError)


# -- the commands: checked before any work --------------------------------------------------


@pytest.fixture
def experiment_file(tmp_path):
    """An experiment file that leaves a marker when labcoat runs it: the work started."""
    marker = tmp_path / "ran.marker"
    path = tmp_path / "exp.py"
    path.write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "def experiment():\n    raise SystemExit('should not get here')\n"
    )
    return path, marker


@pytest.fixture
def scores(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "a.csv"
    path.write_text(
        "id,acc\n" + "".join(f"q{i},{int(v)}\n" for i, v in enumerate(rng.uniform(size=60) < 0.7))
    )
    return path


def _one_line_install(res, extra: str) -> None:
    assert res.code == 2, (res.code, res.err)
    assert install_hint(extra) in res.err and res.err.count("\n") == 1, res.err
    assert "internal error" not in res.err and res.out == ""


def test_doctor_html_without_matplotlib_stops_before_the_file_runs(
    cli, monkeypatch, experiment_file, tmp_path
):
    path, marker = experiment_file
    block(monkeypatch, "matplotlib")
    res = cli("doctor", path, "--no-ledger", "--html", tmp_path / "d.html")
    _one_line_install(res, "report")
    assert not marker.exists()


def test_doctor_html_to_a_missing_folder_stops_before_the_file_runs(cli, experiment_file, tmp_path):
    path, marker = experiment_file
    res = cli("doctor", path, "--no-ledger", "--html", tmp_path / "missing" / "dir" / "d.html")
    assert res.code == 2 and "does not exist" in res.err and "mkdir -p" in res.err, res.err
    assert not marker.exists()
    # the healthy twin: a writable path lets the file run (it then fails on its own terms)
    res = cli("doctor", path, "--no-ledger", "--html", tmp_path / "d.html")
    assert marker.exists()


@pytest.mark.parametrize("command", [("mean", "--score", "acc")])
def test_stats_html_checked_first_and_written_after_the_answer(
    cli, monkeypatch, scores, tmp_path, command
):
    page = tmp_path / "m.html"
    ok = cli("stats", command[0], scores, *command[1:], "--no-ledger", "--html", page, "--json")
    assert ok.code == 0 and json.loads(ok.out)["n"] == 60 and page.exists()
    bad = cli("stats", command[0], scores, *command[1:], "--html", tmp_path / "no" / "m.html")
    assert bad.code == 2 and "does not exist" in bad.err and bad.out == ""
    folder = cli("stats", command[0], scores, *command[1:], "--html", tmp_path)
    assert folder.code == 2 and "is a folder" in folder.err
    block(monkeypatch, "matplotlib")
    _one_line_install(
        cli("stats", command[0], scores, *command[1:], "--html", tmp_path / "x.html"), "report"
    )
    assert not (tmp_path / "x.html").exists()


def test_watch_report_html_without_matplotlib(cli, monkeypatch, tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text("")
    assert cli("watch", "report", events, "--html", tmp_path / "w.html").code == 0
    block(monkeypatch, "matplotlib")
    _one_line_install(cli("watch", "report", events, "--html", tmp_path / "w2.html"), "report")
    res = cli("watch", "report", events, "--html", tmp_path / "nope" / "w.html")
    assert res.code == 2 and "report" in res.err  # the extra is checked first


def test_labcoat_report_without_matplotlib_in_a_subprocess(tmp_path, subprocess_env):
    """The whole command in a fresh interpreter with matplotlib made uninstallable."""
    code = (
        "import sys; sys.modules['matplotlib'] = None; "
        "from labcoat.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    args = [sys.executable, "-c", code, "report", "--ledger", str(tmp_path / "none.db")]
    res = subprocess.run(
        [*args, "-o", str(tmp_path / "r.html")], capture_output=True, text=True, env=subprocess_env
    )
    assert res.returncode == 2 and 'pip install "labcoat[report]"' in res.stderr, res.stderr
    assert "ModuleNotFoundError" not in res.stderr
    # the healthy twin: without the block the same command gets past the check (no ledger there)
    code = "import sys; from labcoat.cli.main import main; sys.exit(main(sys.argv[1:]))"
    res = subprocess.run(
        [sys.executable, "-c", code, *args[3:], "-o", str(tmp_path / "r.html")],
        capture_output=True,
        text=True,
        env=subprocess_env,
    )
    assert res.returncode == 2 and "no ledger" in res.stderr, res.stderr


def test_audit_commands_check_their_extras_first(cli, monkeypatch, tmp_path):
    rows = tmp_path / "t.csv"
    rows.write_text("text\nthe cat sat\nthe cat sat\na dog ran\n")
    labels = tmp_path / "labels.npy"
    probs = tmp_path / "probs.npy"
    np.save(labels, np.array([0, 1, 0, 1]))
    np.save(probs, np.full((4, 2), 0.5))
    ok = cli("audit", "duplicates", rows, "--text-column", "text", "--no-ledger", "--json")
    assert ok.code in (0, 1) and "exact" in ok.out, ok.err
    block(monkeypatch, "datasketch", "cleanlab", "ray")
    _one_line_install(cli("audit", "duplicates", rows, "--text-column", "text"), "audit")
    _one_line_install(
        cli("audit", "labels", "--pred-probs", probs, "--labels", tmp_path / "absent.npy"), "audit"
    )
    _one_line_install(
        cli("audit", "duplicates", rows, "--text-column", "text", "--engine", "ray"), "ray"
    )


@pytest.mark.parametrize(
    "module, blocked, extra",
    [
        (
            "lightning",
            ("lightning", "pytorch_lightning", "lightning.pytorch.callbacks"),
            "lightning",
        ),
        ("huggingface", ("transformers",), "huggingface"),
    ],
)
def test_the_trainer_callbacks_without_their_framework(monkeypatch, module, blocked, extra):
    name = f"labcoat.watch.integrations.{module}"
    block(monkeypatch, *blocked)
    monkeypatch.setitem(sys.modules, name, None)  # restored as it was after the test
    del sys.modules[name]
    with pytest.raises(MissingExtraError, match=rf'pip install "labcoat\[{extra}\]"'):
        importlib.import_module(name)


def test_parquet_without_pyarrow(monkeypatch, tmp_path):
    from labcoat.stats.readers import read_table

    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"acc": [1, 0, 1]}), path)
    assert read_table(path).scores("acc").tolist() == [1, 0, 1]
    block(monkeypatch, "pyarrow", "pyarrow.parquet")
    with pytest.raises(LabcoatError, match=r'pip install "labcoat\[parquet\]"'):
        read_table(path)


# -- the output-path helper -----------------------------------------------------------------


def test_check_writable_changes_nothing_and_names_the_fix(tmp_path):
    before = sorted(tmp_path.rglob("*"))
    assert check_writable(tmp_path / "x.html", "--html") == tmp_path / "x.html"
    with pytest.raises(InputError, match="--html .*does not exist.*mkdir -p"):
        check_writable(tmp_path / "a" / "b" / "x.html", "--html")
    with pytest.raises(InputError, match="is a folder"):
        check_writable(tmp_path, "-o")
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="is a file, not a folder"):
        check_writable(tmp_path / "file" / "x.html", "-o")
    (tmp_path / "file").unlink()
    assert sorted(tmp_path.rglob("*")) == before


def test_ledger_export_output_is_checked_before_reading(cli, tmp_path):
    res = cli("ledger", "export", "--ledger", tmp_path / "l.db", "-o", tmp_path / "no" / "x.md")
    assert res.code == 2 and "does not exist" in res.err, res.err
