"""``python -m studio.risk.check MODEL.json``: the contract the comparison with Storm runs on."""

import json
import subprocess
import sys

import pytest

from studio.risk.check import main


def run(tmp_path, model) -> subprocess.CompletedProcess:
    path = tmp_path / "model.json"
    path.write_text(model if isinstance(model, str) else json.dumps(model))
    return subprocess.run([sys.executable, "-m", "studio.risk.check", str(path)],
                          capture_output=True, text=True, timeout=60)


CHAIN = {"states": 4,
         "transitions": [[0, 1, 0.5], [0, 2, 0.5], [1, 3, 1.0], [2, 2, 1.0], [3, 3, 1.0]],
         "unsafe": [3], "horizon": None}


def test_prints_the_probability_of_every_state(tmp_path):
    done = run(tmp_path, CHAIN)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"probabilities": [0.5, 1.0, 0.0, 1.0]}


def test_a_horizon_bounds_the_steps(tmp_path):
    done = run(tmp_path, {**CHAIN, "horizon": 1})
    assert json.loads(done.stdout) == {"probabilities": [0.0, 1.0, 0.0, 1.0]}
    done = run(tmp_path, {**CHAIN, "horizon": 2})
    assert json.loads(done.stdout) == {"probabilities": [0.5, 1.0, 0.0, 1.0]}


@pytest.mark.parametrize("change,message", [
    ({"transitions": [[0, 1, 0.5], [0, 2, 0.4], [1, 3, 1.0], [2, 2, 1.0], [3, 3, 1.0]]},
     "transitions: the probabilities out of state 0 sum to 0.9, not 1"),
    ({"transitions": [[0, 1, 1.0], [1, 4, 1.0]]},
     "transitions[1]: to state 4 is not a state index (0 to 3)"),
    ({"transitions": [[0, 1, 1.0], [-1, 1, 1.0]]},
     "transitions[1]: from state -1 is not a state index (0 to 3)"),
    ({"transitions": [[0, 1, 1.5]]}, "transitions[0]: probability 1.5 is not a number in [0, 1]"),
    ({"transitions": [[0, 1]]}, "transitions[0]: must be [from, to, probability]"),
    ({"unsafe": [0, 7]}, "unsafe[1]: 7 is not a state index (0 to 3)"),
    ({"horizon": -1}, "horizon: must be null or a whole number of steps, 0 or more (got -1)"),
    ({"horizon": 2.5}, "horizon: must be null or a whole number of steps"),
    ({"states": 0}, "states: must be a whole number of states, 1 or more (got 0)"),
])
def test_bad_models_are_refused_naming_field_and_index(tmp_path, change, message):
    done = run(tmp_path, {**CHAIN, **change})
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_file_that_is_not_json_is_refused_with_its_position(tmp_path, capsys):
    path = tmp_path / "model.json"
    path.write_text('{"states": 2,\n "transitions": [}')
    assert main([str(path)]) == 2
    assert "not JSON at line 2, column 18" in capsys.readouterr().err


def test_a_missing_file_is_refused(tmp_path, capsys):
    assert main([str(tmp_path / "absent.json")]) == 2
    assert "cannot read the model" in capsys.readouterr().err
