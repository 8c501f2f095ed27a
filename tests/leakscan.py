"""The leak scan: walk every readable file under a root and report hidden things found there.

It looks for five kinds of leak:
- `array`: 16 bytes of a hidden reference array, raw or inside a zip/npz member;
- `line`: a distinctive line of a solution module (in a notebook, a line of a cell);
- `text`: a hidden value written out as text (`tests/helpers/scanning.py` gives these);
- `marker`: a solution marker (`tests/helpers/scanning.py` gives these);
- `git`: a `.git` folder or file.

A deep scan (`deep=True`, for a release) reads every byte of every file as text, whatever
its suffix and size: in a notebook, every string of its JSON (cells of every type with their
attachments, outputs and metadata, and the notebook's metadata), base64 runs decoded; in a
zip, every member, a numpy text array as its text; and a line counts once stripped of the
`#`, `>>>` or `...` before it (a solution commented out). The filesystem scan of
`tests/test_leaks.py` is not deep: it must finish in the sandbox's time.

`tests/test_leaks.py` runs this file as a student submission inside the sandbox (the needles
are prepended as `NEEDLES = {...}`), and runs it in-process on the project to show it finds
what is there. Only the standard library and numpy are used: it must run in the worker.

A recording scan may be given `vouched` files: their paths, each with the hash that the package
which installed it recorded (a wheel's RECORD, Debian's md5sums). Such a file, when its bytes
still have that hash, is what a package of numpy, torch or Debian holds, never anything of this
project: it is hashed instead of searched, and counted clean (`tests/helpers/scanning.py`'s
`installed_files` gives them, leaving out the grader's own distribution). So is a `__pycache__`
file compiled from such a source, as its header says (the source's size and time).

A file's content is read once for several scans: a scan that records (`record=True`) keeps
the identity of each file it read and found nothing in (`Scan.clean`), and a later scan
given those identities (`known`) opens such a file, to count it as readable or not, without
reading it again. The identity is the device, inode, size and modification time
(`identity`), as make and rsync judge a file unchanged: it names the file whatever path or
hard link reaches it, and survives a new hard link (which changes the inode's change time,
as another suite's venv of hard links does).
"""

import base64
import binascii
import hashlib
import io
import json
import os
import re
import zipfile

import numpy as np

CHUNK = 8 << 20
WINDOW = 16
SKIP = ("/proc", "/sys", "/dev")
TEXT_SUFFIXES = (".py", ".pyi", ".ipynb", ".txt", ".md", ".rst", ".json", ".cfg", ".toml",
                 ".html", ".j2", ".csv", ".yml", ".yaml", "")
MAX_REPORTS = 200
BASE64 = re.compile(r"[A-Za-z0-9+/\r\n]{16,}={0,2}")
PROMPTS = re.compile(r"^(?:#+|>>>|\.\.\.|\s)+")


class Matcher:
    """Finds any of many 16-byte needles in bytes, through a table of 3-byte anchors, and
    before it a table of their first two bytes, small enough to stay in the CPU's cache."""

    def __init__(self, needles):
        self.table = np.zeros(1 << 24, dtype=bool)
        self.pairs = np.zeros(1 << 16, dtype=bool)
        self.by_code = {}
        for needle in needles:
            offset = _anchor(needle)
            code = needle[offset] | needle[offset + 1] << 8 | needle[offset + 2] << 16
            self.table[code] = True
            self.pairs[code & 0xFFFF] = True
            self.by_code.setdefault(code, []).append((offset, needle))

    def search(self, data):
        """True when a needle occurs in `data`. The positions whose two bytes start an anchor
        are found through two views of the data as little-endian 16-bit pairs, one per
        alignment; only at those is the 3-byte code looked up (two zero bytes after the data
        give the last positions their bytes; a needle is compared with the data alone)."""
        if len(data) < WINDOW:
            return False
        padded = bytes(data) + b"\0\0"
        octets = np.frombuffer(padded, dtype=np.uint8)
        for alignment in (0, 1):
            pairs = np.frombuffer(padded, dtype="<u2", count=(len(padded) - alignment - 1) // 2,
                                  offset=alignment)
            positions = np.flatnonzero(self.pairs[pairs]) * 2 + alignment
            codes = (octets[positions].astype(np.uint32)
                     | octets[positions + 1].astype(np.uint32) << 8
                     | octets[positions + 2].astype(np.uint32) << 16)
            hits = self.table[codes]
            for position, code in zip(positions[hits].tolist(), codes[hits].tolist(), strict=True):
                for offset, needle in self.by_code[code]:
                    start = position - offset
                    if start >= 0 and data[start:start + len(needle)] == needle:
                        return True
        return False


def _anchor(needle):
    """The offset of the 3 bytes of a needle least likely to occur by chance."""
    def plain(offset):
        part = needle[offset:offset + 3]
        return sum(byte in (0, 0xFF, 0x3F, 0x40, 0xBF, 0xC0) for byte in part)
    return min(range(len(needle) - 2), key=plain)


def needles_of(array):
    """16-byte windows of a float64 array's data, starting at every element."""
    data = np.ascontiguousarray(array, dtype="<f8").tobytes()
    return {data[i:i + WINDOW] for i in range(0, len(data) - WINDOW + 1, 8)}


def identity(status):
    """A file's identity (see the module's docstring) from its `os.stat_result`, as 8 bytes."""
    key = f"{status.st_dev}:{status.st_ino}:{status.st_size}:{status.st_mtime_ns}"
    return hashlib.blake2b(key.encode(), digest_size=8).digest()


class Scan:
    """The state of one walk. `known`: identities (`identity`) of files already read by a
    recording scan and found clean, 8 bytes each, joined; `record`: keep the identities of
    the files this scan reads and finds clean, in `clean` (and read none of them twice)."""

    def __init__(self, needles, lines, texts=(), markers=(), deep=False, known=b"",
                 record=False, vouched=None):
        self.matcher = Matcher([bytes.fromhex(n) for n in needles])
        self.lines = set(lines)
        self.texts = sorted(texts)
        # A text needle is found within a run of its own characters (digits, `.`, `e`...): the
        # runs of the content are searched, not the content once per needle (a release's
        # notebook carries its self-check, 120 KB of base64, where runs are short).
        alphabet = "".join(sorted(set("".join(self.texts))))
        self.runs = re.compile(f"[{re.escape(alphabet)}]+") if alphabet else None
        self.text_set = set(self.texts)
        self.text_lengths = sorted({len(text) for text in self.texts})
        self.markers = sorted(markers)
        self.deep = deep
        self.known = {known[i:i + 8] for i in range(0, len(known), 8)}
        self.clean = set() if record else None
        self.vouched = vouched or {}
        self.hashed = 0
        self.found = []
        self.files = self.bytes = self.unreadable = self.skipped = 0
        self.leaked = False

    def report(self, kind, path):
        self.leaked = True
        if len(self.found) < MAX_REPORTS:
            self.found.append((kind, path))

    def walk(self, top):
        for folder, dirs, files in os.walk(top, followlinks=False):
            if folder in SKIP:
                dirs[:] = []
                continue
            for name in dirs + files:
                if name == ".git":
                    self.report("git", os.path.join(folder, name))
            for name in files:
                path = os.path.join(folder, name)
                if not os.path.islink(path) and os.path.isfile(path):
                    self.file(path)

    def file(self, path):
        try:
            stream = open(path, "rb")
        except OSError:
            self.unreadable += 1
            return
        self.files += 1
        status = os.fstat(stream.fileno())
        key = identity(status) if self.known or self.clean is not None else None
        if key in self.known or (self.clean is not None and key in self.clean):
            stream.close()
            self.bytes += status.st_size
            self.skipped += 1
            return
        if self.clean is not None and self._as_installed(path, stream):
            stream.close()
            self.bytes += status.st_size
            self.hashed += 1
            self.clean.add(key)
            return
        self.leaked = False
        self.read(path, stream)
        if self.clean is not None and not self.leaked:
            self.clean.add(key)

    def _as_installed(self, path, stream):
        """Whether the file is byte for byte what a package installed (`vouched`: its path's
        hash algorithm and digest, as the package recorded them), hashed here at a gigabyte a
        second where searching it takes ten; the stream is left at its start."""
        recorded = self.vouched.get(path)
        if recorded is None:
            return path.endswith(".pyc") and self._compiled_from_installed(path, stream)
        algorithm, digest = recorded
        found = hashlib.new(algorithm)
        for chunk in iter(lambda: stream.read(CHUNK), b""):
            found.update(chunk)
        stream.seek(0)
        return found.digest() == digest

    def _compiled_from_installed(self, path, stream):
        """Whether a `__pycache__` file is its source compiled, where the source is as
        installed: the header names the source's size and modification time (a stale one is
        searched), and the source's bytes have their recorded hash."""
        folder, name = os.path.split(path)
        if os.path.basename(folder) != "__pycache__":
            return False
        source = os.path.join(os.path.dirname(folder), name.split(".")[0] + ".py")
        header = stream.read(16)
        stream.seek(0)
        try:
            status = os.stat(source)
        except OSError:
            return False
        if len(header) < 16 or int.from_bytes(header[4:8], "little") != 0:
            return False  # short, or checked by the source's hash (PEP 552): searched
        if (int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")) \
                != (int(status.st_mtime) & 0xFFFFFFFF, status.st_size & 0xFFFFFFFF):
            return False
        with open(source, "rb") as code:
            return self._as_installed(source, code)

    def read(self, path, stream):
        """Look for every kind of leak in the file `stream` opened at `path`."""
        tail = b""
        text = self.deep or os.path.splitext(path)[1] in TEXT_SUFFIXES
        chunks = []
        with stream:
            while True:
                chunk = stream.read(CHUNK)
                if not chunk:
                    break
                self.bytes += len(chunk)
                if self.matcher.search(tail + chunk):
                    self.report("array", path)
                tail = chunk[-WINDOW:]
                if text and (self.deep or len(chunks) < 4):
                    chunks.append(chunk)
        if text and chunks:
            data = b"".join(chunks)
            content = data.decode("latin-1")
            decoded = data.decode("utf-8", "replace") if self.deep else content
            cells = _notebook_text(decoded, self.deep) if path.endswith(".ipynb") else ""
            if self.deep:
                content += "\n" + decoded
            self.text(path, content + "\n" + cells)
        if zipfile.is_zipfile(path):
            self.archive(path)

    def text(self, path, content):
        """Report the lines, text needles and markers in `content`, found in `path`."""
        code = self.code if self.deep else str.strip
        if not self.lines.isdisjoint(map(code, content.splitlines())):
            self.report("line", path)
        if self.runs and self._holds_text(content):
            self.report("text", path)
        if any(marker in content for marker in self.markers):
            self.report("marker", path)

    def _holds_text(self, content):
        """Whether a text needle is in `content`: in one of its runs of the needles'
        characters, as a substring of a length that some needle has."""
        shortest = self.text_lengths[0]
        for run in self.runs.findall(content):
            if len(run) < shortest:
                continue
            for length in self.text_lengths:
                if length > len(run):
                    break
                if any(run[i:i + length] in self.text_set
                       for i in range(len(run) - length + 1)):
                    return True
        return False

    def code(self, line):
        """A line as compared with the solution's: stripped (deep: of a comment's `#` too)."""
        return PROMPTS.sub("", line.strip()).strip() if self.deep else line.strip()

    def archive(self, path):
        try:
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist()[:10000]:
                    if info.file_size > 64 << 20:
                        continue
                    member = archive.read(info.filename)
                    where = f"{path}:{info.filename}"
                    if self.matcher.search(member):
                        self.report("array", where)
                    if self.deep:
                        self.text(where, member.decode("latin-1") + "\n" + _npy_text(member))
        except Exception:  # a damaged archive is not a leak
            pass


def _npy_text(member):
    """A .npy member's text, when it holds a text array (numpy keeps it as UTF-32)."""
    try:
        array = np.lib.format.read_array(io.BytesIO(member), allow_pickle=False)
    except Exception:  # not an array: its bytes were read already
        return ""
    if array.dtype.kind not in "US":
        return ""
    return "\n".join(item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)
                     for item in array.ravel().tolist())


def _strings(value):
    """Every key and string of a JSON value, lists of strings also joined, base64 runs
    decoded."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
            for match in BASE64.finditer(item):
                run = re.sub(r"\s", "", match.group())
                try:
                    found.append(base64.b64decode(run[:len(run) // 4 * 4], validate=True)
                                 .decode("utf-8", "replace"))
                except (binascii.Error, ValueError):
                    pass
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
            if all(isinstance(part, str) for part in item):
                stack.append("".join(item))
    return found


def _notebook_text(content, deep=False):
    """A notebook's cells and outputs as plain text (in the file, JSON escapes hide them);
    deep: every string of it."""
    try:
        if deep:
            return "\n".join(_strings(json.loads(content)))
        cells = json.loads(content).get("cells", [])
    except (ValueError, AttributeError):
        return ""
    parts = []
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        parts.append(cell.get("source", ""))
        for output in cell.get("outputs", []):
            if isinstance(output, dict):
                parts += [output.get("text", ""), output.get("data", {}).get("text/plain", "")]
    return "\n".join("".join(part) if isinstance(part, list) else str(part) for part in parts)


def main(needles, lines, top="/", texts=(), markers=(), deep=False, known=""):
    """Walk `top`; print one LEAK line per finding and a SCANNED summary (files readable,
    their bytes, files unreadable, and how many of the readable were known clean, not read
    again). `known`: `Scan`'s, in base64."""
    scan = Scan(needles, lines, texts, markers, deep, base64.b64decode(known))
    scan.walk(top)
    for kind, path in scan.found:
        print("LEAK", kind, path)
    print("SCANNED", scan.files, scan.bytes, scan.unreadable, scan.skipped)
    return scan
