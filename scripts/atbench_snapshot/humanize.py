"""Human-readable units: durations (ns/µs/ms/s), throughput (B/s..GiB/s, elem/s..Gelem/s),
signed percentages and ratios. Owns every number-to-text conversion the report and charts use,
and the one text-to-number conversion of the command lines: `percentage`."""

from __future__ import annotations

import argparse

TIME_UNITS = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")]
BYTE_RATE_UNITS = [(1024.0**4, "TiB/s"), (1024.0**3, "GiB/s"), (1024.0**2, "MiB/s"), (1024.0, "KiB/s"), (1.0, "B/s")]
COUNT_UNITS = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"), (1.0, "")]
ELEMENT_RATE_UNITS = [(1e12, "Telem/s"), (1e9, "Gelem/s"), (1e6, "Melem/s"), (1e3, "Kelem/s"), (1.0, "elem/s")]


def three_digits(value: float) -> str:
    """Three significant digits without an exponent: 1.23, 12.3, 123, 1234."""
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _scaled(value: float, units: list[tuple[float, str]]) -> str:
    for scale, name in units:
        # 0.9995: a value that would print as "1000" in a unit prints as "1.00" in the next one.
        if abs(value) >= scale * 0.9995:
            return f"{three_digits(value / scale)} {name}"
    scale, name = units[-1]
    return f"{three_digits(value / scale)} {name}"


def duration(ns: float) -> str:
    """A duration given in nanoseconds, e.g. 1514.6 -> '1.51 µs'."""
    return _scaled(ns, TIME_UNITS)


def rate(per_sec: float | None, kind: str | None) -> str:
    """A throughput: bytes/s in binary units, elements/s in decimal units; '—' when absent."""
    if per_sec is None or kind is None:
        return "—"
    if kind == "bytes":
        return _scaled(per_sec, BYTE_RATE_UNITS)
    return _scaled(per_sec, ELEMENT_RATE_UNITS)


def count(value: float) -> str:
    """A large count in decimal units, e.g. 1234567 -> '1.23M'."""
    return _scaled(value, COUNT_UNITS).replace(" ", "")


def percent(fraction: float | None) -> str:
    """A signed change given as a fraction, e.g. 0.047 -> '+4.7%'; 'n/a' when absent."""
    if fraction is None:
        return "n/a"
    return f"{fraction * 100:+.1f}%"


def ratio(value: float) -> str:
    """A ratio to the best row, e.g. 3.4127 -> '3.41x'."""
    return f"{value:.2f}x"


def cpu_per_op(latency: dict) -> str:
    """Process CPU time per operation of a latency record, '—' when not recorded; with the
    whole machine's (servers included) beside it when recorded."""
    cpu = latency.get("cpu_ns_per_op")
    if cpu is None:
        return "—"
    machine = latency.get("machine_cpu_ns_per_op")
    return duration(cpu) if machine is None else f"{duration(cpu)} (machine {duration(machine)})"


def cores_busy(latency: dict) -> str:
    """CPU time per second of wall time (cores kept busy on average), '—' when not recorded."""
    cpu = latency.get("cpu_ns_per_op")
    return "—" if cpu is None else f"{cpu * latency['ops_per_sec'] / 1e9:.2f}"


def percentage(value: str) -> float:
    """An argparse type: a non-negative percentage, as a fraction ("5" -> 0.05)."""
    try:
        percent = float(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{value!r} is not a percentage") from error
    if percent < 0:
        raise argparse.ArgumentTypeError("a percentage floor cannot be negative")
    return percent / 100
