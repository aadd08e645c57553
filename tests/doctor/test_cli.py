"""`labcoat doctor FILE.py[:NAME]`: exit codes, JSON, one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

EXPERIMENT = """
import torch
from torch import nn
import labcoat
from sklearn.datasets import load_digits

def _data():
    x, y = load_digits(return_X_y=True)
    return torch.tensor(x[:400] / 16, dtype=torch.float32), torch.tensor(y[:400])

def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

def experiment():
    m = _model()
    return labcoat.Experiment(m, _data(), nn.CrossEntropyLoss(), torch.optim.Adam(m.parameters(), \
1e-3))

def broken():
    m = _model()
    return labcoat.Experiment(m, _data(), nn.CrossEntropyLoss(), \
torch.optim.Adam(m[0].parameters(), 1e-3))

def raises():
    raise RuntimeError("cannot find the data directory")

def not_an_experiment():
    return 42

def bad_data():
    m = _model()
    return labcoat.Experiment(m, "data.csv", nn.CrossEntropyLoss(), \
torch.optim.Adam(m.parameters(), 1e-3))
"""


@pytest.fixture
def exp_file(tmp_path):
    path = tmp_path / "exp.py"
    path.write_text(EXPERIMENT)
    return path


def test_healthy_exits_0_and_broken_exits_1_with_json(cli, exp_file):
    res = cli("doctor", exp_file, "--json", "--all")
    assert res.code == 0, res.err
    body = json.loads(res.out)
    assert body["ok"] and body["layers_run"][:3] == ["data", "model", "update"]
    res = cli("doctor", f"{exp_file}:broken", "--json")
    assert res.code == 1
    body = json.loads(res.out)
    assert body["failed_layer"] == "update"
    assert any(
        f["check"] == "update.optimizer.coverage" and f["status"] == "fail"
        for f in body["findings"]
    )


def test_json_stays_one_object_when_the_users_code_prints(cli, tmp_path):
    """The prints happen while the file loads and the setup is built, before any layer runs, so
    the broken setup (which stops at update) shows it without training the controls; the full
    ladder's own output is kept off stdout in test_healthy_exits_0_and_broken_exits_1_with_json."""
    path = tmp_path / "chatty.py"
    path.write_text(
        EXPERIMENT.replace(
            "def broken():\n",
            "print('importing')\n\ndef broken():\n    print('loading data')\n",
        )
    )
    res = cli("doctor", f"{path}:broken", "--json", "--no-ledger")
    assert res.code == 1, res.err
    assert json.loads(res.out)["failed_layer"] == "update"
    assert "importing" in res.err and "loading data" in res.err


def test_rich_ladder_highlights_failing_layer(cli, exp_file):
    res = cli("doctor", f"{exp_file}:broken", "--quiet")
    assert res.code == 1
    assert (
        "BROKEN HERE" in res.out
        and "update.optimizer.coverage" in res.out
        and "2.weight" in res.out
    )


@pytest.mark.parametrize(
    "target, message",
    [
        ("missing.py", "no such file"),
        ("{exp}:nope", "no function 'nope'; functions defined there: bad_data, broken, experiment"),
        ("{exp}:raises", "raises() raised RuntimeError: cannot find the data directory"),
        ("{exp}:not_an_experiment", "returned int; it must return labcoat.Experiment"),
        ("{exp}:bad_data", "data: expected (X, y) tensors"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, exp_file, target, message):
    res = cli("doctor", target.format(exp=exp_file))
    assert res.code == 2
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("labcoat: error:") and message in lines[0], (
        res.err
    )


@pytest.mark.parametrize(
    "source, message",
    [
        (
            "import sys\nsys.exit(0)\n\ndef experiment():\n    pass\n",
            "importing it called sys.exit(0); put the script's top-level code under",
        ),
        (
            "import sys\ndef experiment():\n    sys.exit(0)\n",
            "experiment() called sys.exit(0); it must return",
        ),
    ],
)
def test_a_file_that_exits_is_an_input_error_not_a_silent_exit(cli, tmp_path, source, message):
    path = tmp_path / "exits.py"
    path.write_text(source)
    res = cli("doctor", path)
    assert res.code == 2 and message in res.err and res.err.count("\n") == 1, res.err


def test_a_directory_is_named_as_one(cli, tmp_path):
    res = cli("doctor", tmp_path)
    assert res.code == 2 and "is a directory; pass a Python file" in res.err


def test_a_negative_seed_is_an_input_error(cli, exp_file):
    res = cli("doctor", exp_file, "--seed", "-1")
    assert res.code == 2 and "'--seed': -1 is not in the range x>=0" in res.err


def test_debug_shows_the_traceback(cli, exp_file):
    res = cli("doctor", f"{exp_file}:raises", "--debug")
    assert res.code == 2 and "Traceback" in res.err


def test_syntax_error_in_file_is_one_line(cli, tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("def experiment(:\n")
    res = cli("doctor", path)
    assert res.code == 2 and "syntax error" in res.err and "Traceback" not in res.err


# slow: six whole doctor runs (~10 s); the fast tier runs README.md's two of them (digits.py
# healthy, head_not_in_optimizer broken at update) in tests/test_docs.py
@pytest.mark.slow
def test_shipped_examples_behave_as_documented(cli):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import digits_bugs
    finally:
        sys.path.remove(str(EXAMPLES))
    assert cli("doctor", EXAMPLES / "digits.py", "--json").code == 0
    for name, layer in digits_bugs.EXPECTED_LAYER.items():
        res = cli("doctor", f"{EXAMPLES / 'digits_bugs.py'}:{name}", "--json")
        assert res.code == 1 and json.loads(res.out)["failed_layer"] == layer, name


# slow: a fresh interpreter with torch (~8 s loaded); the fast tier runs `python -m labcoat --help`
# (tests/test_cli_main.py) and the doctor's exit codes in-process
@pytest.mark.slow
def test_python_m_labcoat_doctor_matches_script(exp_file, subprocess_env):
    out = subprocess.run(
        [sys.executable, "-m", "labcoat", "doctor", f"{exp_file}:broken", "--json"],
        capture_output=True,
        text=True,
        env=subprocess_env,
        timeout=120,
    )
    assert out.returncode == 1 and json.loads(out.stdout)["failed_layer"] == "update"


def test_checks_lists_every_registered_check(cli):
    from labcoat.doctor import REGISTRY
    from labcoat.watch import INVARIANTS

    res = cli("checks", "--json", "--engine", "doctor")
    assert res.code == 0
    listed = json.loads(res.out)["checks"]
    assert [c["id"] for c in listed] == [c.id for c in REGISTRY]
    assert all(c["falsifies"] and c["predicts"] for c in listed)
    every = json.loads(cli("checks", "--json").out)["checks"]
    from labcoat.engines import names

    assert {c["engine"] for c in every} == set(names())
    watch = [c for c in every if c["engine"] == "watch"]
    assert [c["id"] for c in watch] == list(INVARIANTS.ids())
    assert next(c for c in watch if c["id"] == "spike")["options"]["window"] == 50
    assert cli("checks", "--engine", "nope").code == 2


def test_ledger_option_records_findings(cli, exp_file, tmp_path):
    import labcoat

    path = tmp_path / "notebook.db"
    res = cli("doctor", f"{exp_file}:broken", "--json", "--ledger", path)
    assert res.code == 1
    assert json.loads(res.out)["ledger"]["findings"]
    assert labcoat.Ledger(path).findings(status="fail")[0].check == "update.optimizer.coverage"


# -- the experiment file is looked over before it runs (issue 24, item 7) ----------------------


@pytest.mark.slow
def test_a_missing_file_is_named_before_torch_is_imported(subprocess_env, tmp_path):
    """Planted: a missing file and a file without the function; both are said without torch.
    Twin: a file that has the function is imported (torch with it)."""
    good = tmp_path / "good.py"
    good.write_text("import torch\n\ndef experiment():\n    return 42\n")
    lacking = tmp_path / "lacking.py"
    lacking.write_text("import torch\n\ndef other():\n    return 42\n")
    code = (
        "import sys\nfrom labcoat.cli.main import main\n"
        "rc = main(['doctor', sys.argv[1]])\nprint(rc, 'torch' in sys.modules)\n"
    )
    seen = {}
    for target in ("nope.py", lacking, good):
        out = subprocess.run(
            [sys.executable, "-c", code, str(target)],
            capture_output=True,
            text=True,
            env=subprocess_env,
            timeout=120,
        )
        seen[str(target)] = (out.stdout.split(), out.stderr)
    assert seen["nope.py"][0] == ["2", "False"] and "no such file" in seen["nope.py"][1]
    assert seen[str(lacking)][0] == ["2", "False"]
    assert "no function 'experiment'; functions defined there: other" in seen[str(lacking)][1]
    assert seen[str(good)][0] == ["2", "True"] and "returned int" in seen[str(good)][1]


def test_a_file_without_the_function_does_not_run_its_top_level_code(cli, tmp_path):
    marker = tmp_path / "ran"
    body = f"open({str(marker)!r}, 'w').write('x')\n\ndef {{name}}():\n    return 42\n"
    path = tmp_path / "script.py"
    path.write_text(body.format(name="train"))
    res = cli("doctor", path)
    assert res.code == 2 and "no function 'experiment'; functions defined there: train" in res.err
    assert not marker.exists()
    # twin: with the function there, the file is imported (its top-level code runs) and called
    path.write_text(body.format(name="experiment"))
    res = cli("doctor", path)
    assert res.code == 2 and "returned int" in res.err and marker.exists()


@pytest.mark.parametrize(
    "source",
    [
        "from helper import *\n",  # a star import: the tree cannot tell, so the file is run
        "globals()['experiment'] = lambda: 42\n",
        "import helper\nexperiment = helper.experiment\n",
        "if True:\n    from helper import experiment\n",
    ],
)
def test_a_function_bound_another_way_than_def_is_still_found(cli, tmp_path, source):
    (tmp_path / "helper.py").write_text("def experiment():\n    return 42\n")
    path = tmp_path / "exp_indirect.py"
    path.write_text(source)
    res = cli("doctor", path)
    assert res.code == 2 and "returned int" in res.err, res.err


def test_a_name_bound_to_something_else_is_named_as_such(cli, tmp_path):
    path = tmp_path / "exp_value.py"
    path.write_text("experiment = 3\n\ndef build():\n    return 1\n")
    res = cli("doctor", path)
    assert res.code == 2 and "'experiment' is an int, not a function" in res.err, res.err


ARGV_FILE = """
import sys
AT_IMPORT = list(sys.argv)

def experiment():
    raise RuntimeError(repr((AT_IMPORT, sys.argv)))
"""


def test_the_file_runs_with_an_argv_of_its_own(cli, tmp_path):
    path = tmp_path / "argv_exp.py"
    path.write_text(ARGV_FILE)
    before = list(sys.argv)
    res = cli("doctor", path, "--quiet", "--", "--lr", "3e-4", "--debug")
    assert res.code == 2
    expected = [str(path), "--lr", "3e-4", "--debug"]
    assert repr((expected, expected)) in res.err, res.err
    assert "Traceback" not in res.err  # a --debug after -- is the file's, not labcoat's
    # twin: without -- the file sees only its own name, never labcoat's `doctor` and options
    res = cli("doctor", path, "--quiet")
    assert repr(([str(path)], [str(path)])) in res.err, res.err
    assert sys.argv == before
    # an option labcoat does not know, given before --, is named with where it belongs
    res = cli("doctor", path, "--lr", "3e-4")
    assert (
        res.code == 2
        and "the file's own arguments go after --: labcoat doctor FILE.py -- --lr" in res.err
    )


# -- warnings reach the verdict, the JSON and the exit code (issue 24, item 2) ------------------

EVAL_MODE = """
import torch
from torch import nn
import labcoat
from sklearn.datasets import load_digits

def _data():
    x, y = load_digits(return_X_y=True)
    x, y = x[:400], y[:400]
    x = x[:, (x > 0).mean(0) > 0.1]  # no constant pixel: data.features.constant warns of them
    return torch.tensor(x / 16, dtype=torch.float32), torch.tensor(y)

def _model(dropout):
    torch.manual_seed(0)
    layers = [nn.Linear(_data()[0].shape[1], 32), nn.ReLU()]
    layers += [nn.Dropout(0.3)] if dropout else []
    return nn.Sequential(*layers, nn.Linear(32, 10)).eval()

def _experiment(dropout):
    m = _model(dropout)
    return labcoat.Experiment(m, _data(), nn.CrossEntropyLoss(), \
torch.optim.Adam(m.parameters(), 1e-3))

def left_in_eval():
    return _experiment(dropout=True)

def eval_without_dropout():
    return _experiment(dropout=False)
"""


@pytest.mark.slow
def test_a_warning_is_named_in_the_verdict_the_json_and_strict_exit(cli, tmp_path):
    path = tmp_path / "eval_mode.py"
    path.write_text(EVAL_MODE)
    opts = ("--json", "--no-ledger", "--all")
    # planted: dropout left in eval mode warns; the verdict names it, --strict fails on it
    res = cli("doctor", f"{path}:left_in_eval", *opts, "--", "--layers")
    body = json.loads(res.out)
    assert res.code == 0 and body["ok"], res.err
    warned = [w["check"] for w in body["warnings"]]
    assert "update.mode.as_given" in warned
    assert body["verdict"].startswith(f"healthy, with {len(warned)} warning")
    assert "update.mode.as_given" in body["verdict"]
    assert list(body)[:6] == ["kind", "version", "target", "ok", "verdict", "warnings"]
    assert cli("doctor", f"{path}:left_in_eval", *opts, "--strict").code == 1
    # twin: the same model in eval mode without dropout warns of nothing and passes --strict
    res = cli("doctor", f"{path}:eval_without_dropout", *opts, "--strict")
    body = json.loads(res.out)
    assert res.code == 0 and body["warnings"] == [], body["warnings"]
    assert body["verdict"].startswith("healthy: no check failed")
