"""bench/bench_picture.py, the cost of the state's picture part by part: it runs, and prints
each part's time for the first picture in a fork and for the later ones. (Speed itself is
measured in bench/, never asserted here.)"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_the_picture_bench_prints_each_part_cold_and_warm(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_picture.py"),
                          "--forks", "2", "--warm", "3"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == ("loops.ipynb: the picture's parts in ms, medians of 2 forks "
                        "(warm: 3 pictures after the first in each)")
    assert lines[1].split() == ["globals", "interpreter", "modules", "files", "all"]
    rows = {line.split()[0]: [float(cell) for cell in line.split()[1:]] for line in lines[2:]}
    assert sorted(rows) == ["cold", "warm"]
    for parts in rows.values():
        assert len(parts) == 5 and all(ms > 0 for ms in parts)
        assert abs(sum(parts[:4]) - parts[4]) < 0.005  # "all" is the sum of the four parts
    assert list(tmp_path.iterdir()) == []  # its scratch folder is gone, none left here
