"""Unpacking a platform's zip safely: an archive is hostile input.

What is written is allowed, not what is forbidden: a member is extracted only when its name,
decoded, is a relative path of ordinary names under the target folder, it is a regular file
or a folder, no other member has the same name, and its bytes, counted as they are
decompressed (never from the sizes the archive declares), stay within the limits. Every file
is created new (`O_EXCL | O_NOFOLLOW`) in folders this module made, so nothing outside the
target folder is ever written. A member that breaks a rule is passed over with the reason; an
archive that breaks the total limits, or is no zip at all, stops with one UsageError.
"""

from __future__ import annotations

import os
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from grader import text
from grader.errors import UsageError

MAX_TOTAL_BYTES = 2 * 1024**3
"""The most an archive may unpack to, all members together."""
MAX_MEMBERS = 20_000
"""The most members an archive may hold."""
MAX_RATIO = 200
"""The most a member may expand, uncompressed bytes per compressed byte, once it is larger
than `RATIO_FLOOR` (notebooks compress about 5 to 1; a zip bomb 1000 to 1 and more)."""
RATIO_FLOOR = 1024**2
"""Members smaller than this are never held to `MAX_RATIO`."""
CHUNK = 64 * 1024
UTF8_FLAG = 0x800
FIX = "unpack the archive yourself, check it, and grade the folder"


@dataclass(frozen=True)
class Unpacked:
    """An archive extracted, and what was passed over."""

    folder: Path
    """Where its members are."""
    passed_over: tuple[str, ...]
    """Members not extracted, each as "archive: member: why; fix"."""


@dataclass(frozen=True)
class Limits:
    """How much an archive may unpack to."""

    total_bytes: int = MAX_TOTAL_BYTES
    """All members together, counted as they are decompressed."""
    members: int = MAX_MEMBERS
    """Members, folders included."""
    ratio: int = MAX_RATIO
    """Uncompressed bytes per compressed byte of one member above `floor`."""
    floor: int = RATIO_FLOOR
    """Members no larger than this are not held to `ratio`."""


def decoded(info: zipfile.ZipInfo) -> str:
    """The member's name as its maker meant it: UTF-8 when flagged so; otherwise the CP437
    that zip defines, unless the bytes are valid UTF-8 (macOS and many tools write UTF-8
    without the flag)."""
    if info.flag_bits & UTF8_FLAG:
        return info.filename
    try:
        raw = info.filename.encode("cp437")
    except UnicodeEncodeError:
        return info.filename
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return info.filename


def safe_parts(name: str) -> tuple[tuple[str, ...] | None, str]:
    """The parts of a member's relative path, or None and why it may not be extracted."""
    if text.clean(name) != name or "\n" in name or "\t" in name:
        return None, "its name holds control characters"
    posix = name.replace("\\", "/")
    if posix.startswith("/") or (len(posix) > 1 and posix[1] == ":"):
        return None, "its name is an absolute path"
    parts = tuple(part for part in PurePosixPath(posix).parts if part not in ("", "."))
    if ".." in parts:
        return None, "its name climbs out of the archive with '..' (zip slip)"
    if not parts:
        return None, "it has no name"
    if any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in parts):
        return None, "a part of its name is longer than 255 bytes"
    return parts, ""


def _kind(info: zipfile.ZipInfo) -> str | None:
    """Why a member is neither a regular file nor a folder, or None (no file type: a file,
    as most zip makers write it)."""
    mode = info.external_attr >> 16
    if stat.S_IFMT(mode) in (0, stat.S_IFREG, stat.S_IFDIR):
        return None
    if stat.S_ISLNK(mode):
        return "it is a symbolic link; links are never extracted"
    return "it is not a regular file or a folder"


def unpack(archive: Path, target: Path, limits: Limits | None = None) -> Unpacked:
    """Extract `archive` into `target` (made new; an earlier extraction there is replaced)."""
    limits = limits or Limits()
    try:
        zf = zipfile.ZipFile(archive)
    except (OSError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{archive}: not a zip archive that can be read ({exc}); download it "
                         "again, or unpack it yourself and grade the folder") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.members:
            raise UsageError(f"{archive}: holds {len(infos)} members, more than the "
                             f"{limits.members} allowed; {FIX}")
        if target.is_symlink():
            raise UsageError(f"{target}: is a symbolic link; remove it and grade again")
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(mode=0o700, parents=True)
        passed: list[str] = []
        chosen = _choose(archive, infos, passed)
        total = 0
        for parts, info in chosen:
            if info.is_dir():
                _folder(target, parts)
                continue
            total = _extract(zf, info, archive, parts, target, limits, total, passed)
    return Unpacked(target, tuple(passed))


def _choose(archive: Path, infos: list[zipfile.ZipInfo], passed: list[str]
            ) -> list[tuple[tuple[str, ...], zipfile.ZipInfo]]:
    """The members that may be extracted, with their paths; the rest go in `passed`."""
    named: dict[tuple[str, ...], list[zipfile.ZipInfo]] = {}
    for info in infos:
        name = decoded(info)
        shown = text.one_line(name)
        parts, why = safe_parts(name)
        why = why or _kind(info) or ""
        if parts is None or why:
            passed.append(f"{archive}: {shown!r}: {why}; nothing was written for it")
            continue
        named.setdefault(parts, []).append(info)
    chosen = []
    files = {parts for parts, same in named.items() if not same[0].is_dir()}
    for parts, same in named.items():
        shown = text.one_line("/".join(parts))
        if len(same) > 1 and not all(info.is_dir() for info in same):
            passed.append(f"{archive}: {shown!r}: {len(same)} members have this name; none "
                          "was extracted, since either could be the one meant; make an "
                          "archive with one")
            continue
        if any(parts[:i] in files for i in range(1, len(parts))):
            passed.append(f"{archive}: {shown!r}: a file of the archive has the name of one "
                          "of its folders; it was not extracted")
            continue
        chosen.append((parts, same[0]))
    return chosen


def _folder(target: Path, parts: tuple[str, ...]) -> Path:
    """The folder `target/parts`, made one level at a time, never through a link."""
    folder = target
    for part in parts:
        folder = folder / part
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            if folder.is_symlink() or not folder.is_dir():
                raise NotADirectoryError(str(folder)) from None
    return folder


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive: Path,
             parts: tuple[str, ...], target: Path, limits: Limits, total: int,
             passed: list[str]) -> int:
    """Stream one member to a new file, counting bytes as they come; the new total."""
    shown = text.one_line("/".join(parts))
    try:
        folder = _folder(target, parts[:-1])
        fd = os.open(folder / parts[-1],
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        passed.append(f"{archive}: {shown!r}: cannot be written ({exc.strerror or exc}); "
                      "it was not extracted")
        return total
    path = folder / parts[-1]
    written, why = 0, ""
    with os.fdopen(fd, "wb") as out:
        try:
            with zf.open(info) as member:
                while chunk := member.read(CHUNK):
                    written += len(chunk)
                    if total + written > limits.total_bytes:
                        out.close()
                        shutil.rmtree(target)
                        raise UsageError(
                            f"{archive}: unpacks to more than {limits.total_bytes} bytes "
                            f"(reached at member {shown!r}): a zip bomb, or not a class's "
                            f"submissions; nothing was kept; {FIX}")
                    if written > limits.floor and written > limits.ratio * max(
                            info.compress_size, 1):
                        why = (f"expands more than {limits.ratio} times ({info.compress_size} "
                               f"bytes compressed, more than {written} unpacked): a zip bomb")
                        break
                    out.write(chunk)
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError,
                ValueError) as exc:
            why = f"cannot be unpacked ({exc})"
    if why:
        path.unlink()
        passed.append(f"{archive}: {shown!r}: {why}; it was not extracted; {FIX}")
        return total
    return total + written
