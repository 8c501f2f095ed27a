"""The leak scan: walk every readable file under a root and report hidden things found there.

It looks for four kinds of leak:
- `array`: 16 bytes of a hidden reference array, raw or inside a zip/npz member;
- `line`: a distinctive line of a solution module (in a notebook, a line of a cell);
- `text`: a hidden value written out as text (`tests/test_release.py` gives these);
- `git`: a `.git` folder or file.

`tests/test_leaks.py` runs this file as a student submission inside the sandbox (the needles
are prepended as `NEEDLES = {...}`), and runs it in-process on the project to show it finds
what is there. Only the standard library and numpy are used: it must run in the worker.
"""

import json
import os
import zipfile

import numpy as np

CHUNK = 8 << 20
WINDOW = 16
SKIP = ("/proc", "/sys", "/dev")
TEXT_SUFFIXES = (".py", ".pyi", ".ipynb", ".txt", ".md", ".rst", ".json", ".cfg", ".toml",
                 ".html", ".j2", ".csv", ".yml", ".yaml", "")
MAX_REPORTS = 200


class Matcher:
    """Finds any of many 16-byte needles in bytes, through a table of 3-byte anchors."""

    def __init__(self, needles):
        self.table = np.zeros(1 << 24, dtype=bool)
        self.by_code = {}
        for needle in needles:
            offset = _anchor(needle)
            code = needle[offset] | needle[offset + 1] << 8 | needle[offset + 2] << 16
            self.table[code] = True
            self.by_code.setdefault(code, []).append((offset, needle))

    def search(self, data):
        """True when a needle occurs in `data`."""
        if len(data) < WINDOW:
            return False
        a = np.frombuffer(data, dtype=np.uint8)
        codes = (a[:-2].astype(np.uint32) | a[1:-1].astype(np.uint32) << 8
                 | a[2:].astype(np.uint32) << 16)
        for position in np.flatnonzero(self.table[codes]).tolist():
            for offset, needle in self.by_code[int(codes[position])]:
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


class Scan:
    """The state of one walk."""

    def __init__(self, needles, lines, texts=()):
        self.matcher = Matcher([bytes.fromhex(n) for n in needles])
        self.lines = set(lines)
        self.texts = sorted(texts)
        self.found = []
        self.files = self.bytes = self.unreadable = 0

    def report(self, kind, path):
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
        tail = b""
        text = os.path.splitext(path)[1] in TEXT_SUFFIXES
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
                if text and len(chunks) < 4:
                    chunks.append(chunk)
        if text and chunks:
            content = b"".join(chunks).decode("latin-1")
            cells = _notebook_text(content) if path.endswith(".ipynb") else ""
            if any(line.strip() in self.lines
                   for line in (content + "\n" + cells).splitlines()):
                self.report("line", path)
            if any(needle in content or needle in cells for needle in self.texts):
                self.report("text", path)
        if zipfile.is_zipfile(path):
            self.archive(path)

    def archive(self, path):
        try:
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist()[:10000]:
                    if info.file_size <= 64 << 20 and \
                            self.matcher.search(archive.read(info.filename)):
                        self.report("array", f"{path}:{info.filename}")
        except Exception:  # a damaged archive is not a leak
            pass


def _notebook_text(content):
    """A notebook's cells and outputs as plain text (in the file, JSON escapes hide them)."""
    try:
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


def main(needles, lines, top="/", texts=()):
    """Walk `top`; print one LEAK line per finding and a SCANNED summary."""
    scan = Scan(needles, lines, texts)
    scan.walk(top)
    for kind, path in scan.found:
        print("LEAK", kind, path)
    print("SCANNED", scan.files, scan.bytes, scan.unreadable)
    return scan
