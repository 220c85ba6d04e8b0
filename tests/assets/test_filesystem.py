"""The file system store across processes: a writer killed (SIGKILL) in the middle of a
large put leaves the old or the new whole file and no partial asset, its temporary file
is swept by the next store opened on the folder, and processes putting and getting one
name at once only ever read whole versions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from amfkit.assets import AssetStore
from amfkit.assets.filesystem import TMP_DIR

SIZE = 40 * 1024 * 1024

WRITER = """
import sys
from amfkit.assets import AssetStore
store = AssetStore.open(sys.argv[1])
size = int(sys.argv[2])
i = 0
while True:
    store.put("big.bin", bytes([i % 2 + 65]) * size)
    i += 1
"""

MIXER = """
import sys, time
from amfkit.assets import AssetStore
store = AssetStore.open(sys.argv[1])
role, seconds, me = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
sizes = {65 + k: 100_000 + 7 * k for k in range(6)}
deadline = time.monotonic() + seconds
reads = bad = 0
while time.monotonic() < deadline:
    if role == "w":
        b = 65 + (me + reads) % 6
        store.put("hot.bin", bytes([b]) * sizes[b])
        reads += 1
    else:
        data = store.get("hot.bin")
        reads += 1
        if not data or data != bytes([data[0]]) * sizes.get(data[0], -1):
            bad += 1
print(reads, bad)
"""


def _sizes(folder) -> list[int]:
    """The sizes of the files in `folder` now (one renamed away meanwhile is skipped)."""
    out = []
    for entry in os.scandir(folder):
        try:
            out.append(entry.stat().st_size)
        except FileNotFoundError:
            pass
    return out


def test_a_writer_killed_mid_put_leaves_a_whole_version_and_no_partial_asset(tmp_path) -> None:
    root = tmp_path / "assets"
    store = AssetStore.open(root)
    store.put("big.bin", b"A" * SIZE)
    store.put("other.txt", b"untouched")
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(root), str(SIZE)])
    try:
        tmp = root / TMP_DIR
        deadline = time.monotonic() + 30
        while True:  # wait until a put is half written
            if any(SIZE // 4 < n < SIZE for n in _sizes(tmp)):
                break
            assert time.monotonic() < deadline, "the writer never got into a put"
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(10)
    assert proc.returncode == -signal.SIGKILL
    left = list((root / TMP_DIR).iterdir())
    assert left, "no temporary file was left: the kill did not land mid-put"
    data = store.get("big.bin")
    assert len(data) == SIZE and data in (b"A" * SIZE, b"B" * SIZE)
    assert list(store) == ["big.bin", "other.txt"] and store.get("other.txt") == b"untouched"
    store.close()
    again = AssetStore.open(root)  # the dead writer's temporary file goes
    assert list((root / TMP_DIR).iterdir()) == []
    assert again.get("big.bin") == data
    again.close()


def test_processes_putting_and_getting_one_name_read_whole_versions_only(tmp_path) -> None:
    root = tmp_path / "assets"
    store = AssetStore.open(root)
    store.put("hot.bin", b"A" * 100_000)
    procs = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(MIXER), str(root), role, "2", str(i)], stdout=subprocess.PIPE, text=True)
        for i, role in enumerate("wwwrrr")
    ]
    results = [p.communicate(timeout=60)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    writes = sum(int(r[0]) for r in results[:3])
    reads = sum(int(r[0]) for r in results[3:])
    assert writes > 30 and reads > 30, (writes, reads)
    assert all(r[1] == "0" for r in results), results
    assert list(store) == ["hot.bin"] and list((root / TMP_DIR).iterdir()) == []
    store.close()
