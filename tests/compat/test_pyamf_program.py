"""A program written against PyAMF runs on the door unchanged but for its imports: the
same program, run with Py3AMF (its imports pointed back at `pyamf`) and with
amfkit.compat.pyamf, prints the same lines."""

from __future__ import annotations

import pathlib
import subprocess
import sys

PROGRAM = pathlib.Path(__file__).with_name("pyamf_program.py")


def _run(path: pathlib.Path) -> str:
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_program_prints_the_same_with_the_door_as_with_py3amf(tmp_path):
    source = PROGRAM.read_text(encoding="utf-8")
    imports = [line for line in source.splitlines() if "amfkit" in line and line.startswith(("import ", "from "))]
    # The imports that name amfkit are the door's, and nothing else in the code does.
    assert "amfkit" not in source.split('"""', 2)[2].replace("\n".join(imports), "")
    assert imports == [
        "import amfkit.compat.pyamf as pyamf",
        "from amfkit.compat.pyamf import remoting, sol",
        "from amfkit.compat.pyamf.flex import ArrayCollection, ObjectProxy",
    ]
    with_py3amf = tmp_path / "program_py3amf.py"
    with_py3amf.write_text(source.replace("amfkit.compat.pyamf", "pyamf"), encoding="utf-8")
    ours, theirs = _run(PROGRAM), _run(with_py3amf)
    assert ours == theirs
    # And it did what it says (not two programs failing the same way).
    assert "shared inventory kept: True" in ours and "references across the stream: True" in ours
    assert "loaded class: Item(id=7)" in ours and "answer /2: ErrorFault Game.Full no free slot" in ours
    assert "unregistered: TypedObject com.example.game.Player" in ours and ours.count("\n") == 19
