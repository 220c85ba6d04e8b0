"""The demo's tour (`python -m amfkit.demo`, `make demo`): it round-trips a sample graph
and reads every fixture, and the graph comparison it reports with sees sharing."""

from __future__ import annotations

import math
import re
import subprocess


def test_demo_round_trips_and_reads_the_fixtures(python_exe, python_env, repo_root):
    r = subprocess.run(
        [python_exe, "-m", "amfkit.demo"], capture_output=True, env=python_env, cwd=repo_root, timeout=120
    )
    out = r.stdout.decode()
    assert r.returncode == 0, out + r.stderr.decode()
    assert re.search(r"AMF0: +\d+ bytes, round trip equal: yes", out)
    assert re.search(r"AMF3: +\d+ bytes, round trip equal: yes", out)
    assert "<ref #" in out
    assert "UNEXPECTED" not in out


def test_demo_graph_comparison_sees_sharing():
    from amfkit.compare import first_difference

    def same_graph(a, b):  # the demo's check: equal by AMF meaning, sharing included
        return first_difference(a, b, exact=False) is None

    a = {"x": [1], "y": None}
    a["y"] = a["x"]
    b = {"x": [1], "y": [1]}
    assert same_graph(a, a)
    assert not same_graph(a, b)  # equal values, but b does not share
    c: list = []
    c.append(c)
    d: list = []
    d.append(d)
    assert same_graph(c, d)
    assert not same_graph({"n": math.nan}, {"n": 1.0})
