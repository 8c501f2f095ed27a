"""Memory measurement: this process's resident memory, now and at its peak."""

from __future__ import annotations


def resident_mb(field: str = "VmRSS") -> float:
    """This process's resident memory now (VmRSS), or at its peak (VmHWM)."""
    with open("/proc/self/status") as stream:
        for row in stream:
            if row.startswith(f"{field}:"):
                return int(row.split()[1]) / 1024
    raise AssertionError(f"no {field}")


def reset_peak() -> None:
    """Start counting the peak afresh: earlier tests of the same process count for nothing."""
    with open("/proc/self/clear_refs", "w") as stream:
        stream.write("5")

