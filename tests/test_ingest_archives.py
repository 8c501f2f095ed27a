"""Hostile archives: zip slip, absolute names, links, duplicates, zip bombs, other encodings.

Each case asserts what is said, the exit code, and that nothing outside --out was written;
where passing a member over is safe, the rest of the class is still graded."""

from __future__ import annotations

import os
import stat
import zipfile

import pytest

from grader import gradebook
from grader.errors import UsageError
from grader.ingest import archives
from tests.helpers.command import run
from tests.helpers.platforms import RIGHT_MODULE, files_outside, zipped
from tests.helpers.sqlite_file import opened

GOOD = "lovelaceada_1001_5001_attention.py"


def batch(source, out):
    return run("batch", str(source), "--assignment", "udl_attention", "--out", str(out),
               "--jobs", "1")


def students(out) -> dict[str, float]:
    with opened(out / gradebook.FILENAME) as db:
        return dict(db.execute("SELECT student, score FROM results"))


def hostile(path, extra: list[tuple[zipfile.ZipInfo | str, bytes]]):
    """A Canvas download with one good submission and the `extra` members."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(GOOD, RIGHT_MODULE.read_bytes())
        for info, data in extra:
            zf.writestr(info, data)
    return path


def link(name: str, target: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


@pytest.mark.parametrize("name, says", [
    ("../../../escaped_1002_5002_x.py", "climbs out of the archive with '..' (zip slip)"),
    ("a/../../../../escaped_1002_5002_x.py", "climbs out of the archive with '..' (zip slip)"),
    ("ABSOLUTE", "its name is an absolute path"),
    ("..\\..\\..\\escaped_1002_5002_x.py", "climbs out of the archive with '..' (zip slip)"),
    ("C:/escaped_1002_5002_x.py", "its name is an absolute path"),
    ("evil\x1b[2J_1002_5002_x.py", "its name holds control characters"),
])
def test_a_member_that_would_land_elsewhere_is_passed_over(tmp_path, name, says):
    if name == "ABSOLUTE":
        name = str(tmp_path / "escaped_1002_5002_x.py")
    out = tmp_path / "out"
    source = hostile(tmp_path / "class.zip", [(name, b"x = 1\n")])
    code, stdout, _ = batch(source, out)
    assert code == 0, stdout
    assert f"{source}: " in stdout and says in stdout and "nothing was written" in stdout
    assert "\x1b" not in stdout
    assert students(out) == {"1001": 10.0}
    assert files_outside(tmp_path, out) == {"class.zip"}
    assert sorted(os.listdir(out / "submissions" / "class")) == [GOOD]


def test_a_symbolic_link_is_never_extracted(tmp_path):
    out = tmp_path / "out"
    source = hostile(tmp_path / "class.zip", [
        (link("hopperg_1003_5003_attention.py", "/etc/passwd"), b"/etc/passwd")])
    code, stdout, _ = batch(source, out)
    assert code == 0
    assert ("'hopperg_1003_5003_attention.py': it is a symbolic link; links are never "
            "extracted") in stdout
    assert students(out) == {"1001": 10.0}
    assert not os.path.lexists(out / "submissions" / "class" / "hopperg_1003_5003_attention.py")


def test_duplicate_names_extract_neither(tmp_path):
    out = tmp_path / "out"
    with pytest.warns(UserWarning, match="Duplicate name"):
        source = hostile(tmp_path / "class.zip", [("hopperg_1003_5003_a.py", b"x = 1\n"),
                                                  ("hopperg_1003_5003_a.py", b"x = 2\n")])
    code, stdout, _ = batch(source, out)
    assert code == 0
    assert "'hopperg_1003_5003_a.py': 2 members have this name; none was extracted" in stdout
    assert students(out) == {"1001": 10.0}


def test_a_member_that_expands_too_much_is_passed_over(tmp_path):
    out = tmp_path / "out"
    bomb = b"\0" * (8 * 1024**2)  # 8 MiB of zeros deflate about 1000 to 1
    source = hostile(tmp_path / "class.zip", [("hopperg_1003_5003_a.py", bomb)])
    code, stdout, _ = batch(source, out)
    assert code == 0
    assert "'hopperg_1003_5003_a.py': expands more than 200 times" in stdout
    assert "a zip bomb; it was not extracted" in stdout
    assert sorted(os.listdir(out / "submissions" / "class")) == [GOOD]


def test_a_header_that_understates_the_size_is_not_believed(tmp_path):
    source = hostile(tmp_path / "class.zip", [("hopperg_1003_5003_a.py", b"y = 2\n" * 1000)])
    data = bytearray(source.read_bytes())
    central = data.rfind(b"hopperg_1003_5003_a.py") - 46  # the central directory's entry
    assert data[central:central + 4] == b"PK\x01\x02"
    data[central + 24:central + 28] = (10).to_bytes(4, "little")  # uncompressed size: 10
    source.write_bytes(bytes(data))
    unpacked = archives.unpack(source, tmp_path / "out" / "x")
    assert any("'hopperg_1003_5003_a.py': cannot be unpacked" in line
               for line in unpacked.passed_over), unpacked.passed_over
    assert sorted(os.listdir(unpacked.folder)) == [GOOD]


def test_an_archive_larger_than_the_total_limit_stops_and_keeps_nothing(tmp_path):
    members = {f"s{i}_{i}_{i}_a.py": os.urandom(400_000) for i in range(3)}
    source = zipped(tmp_path / "class.zip", members)
    target = tmp_path / "out" / "submissions" / "class"
    with pytest.raises(UsageError) as caught:
        archives.unpack(source, target, archives.Limits(total_bytes=1_000_000))
    assert str(caught.value).startswith(f"{source}: unpacks to more than 1000000 bytes "
                                        "(reached at member 's2_2_2_a.py'): a zip bomb")
    assert str(caught.value).endswith("nothing was kept; unpack the archive yourself, check "
                                      "it, and grade the folder")
    assert not target.exists()
    assert files_outside(tmp_path, tmp_path / "out") == {"class.zip"}


def test_too_many_members_stop_before_anything_is_written(tmp_path):
    source = zipped(tmp_path / "class.zip", {f"f{i}.py": b"" for i in range(5)})
    with pytest.raises(UsageError, match=r"class.zip: holds 5 members, more than the 4 "):
        archives.unpack(source, tmp_path / "out", archives.Limits(members=4))
    assert not (tmp_path / "out").exists()


def test_names_in_other_encodings(tmp_path):
    # Written with the UTF-8 flag clear: UTF-8 bytes (as macOS writes them) are read as
    # UTF-8; bytes that are not UTF-8 as zip's CP437.
    source = zipped(tmp_path / "class.zip", {"cafXX_1_2_a.py": b"a = 1\n",
                                             "bYe_3_4_b.py": b"b = 1\n"})
    data = source.read_bytes().replace(b"cafXX", "café".encode()).replace(b"bYe", b"b\x81e")
    source.write_bytes(data)
    unpacked = archives.unpack(source, tmp_path / "out")
    assert sorted(os.listdir(unpacked.folder)) == ["büe_3_4_b.py", "café_1_2_a.py"]
    assert unpacked.passed_over == ()


def test_a_file_that_is_not_a_zip_is_refused(tmp_path):
    source = tmp_path / "class.zip"
    source.write_bytes(b"not a zip")
    code, _, err = batch(source, tmp_path / "out")
    assert code == 2
    assert f"{source}: neither a folder nor a zip archive; name the folder" in err
    assert "Traceback" not in err
