"""Kubernetes resource quantities ("100m", "64Mi", "100M", "1e3") without Django: the one parser the
AppGroup documents, the scheduler's wire format and the scenarios share.

Parsing follows k8s.io/apimachinery resource.Quantity: a signed decimal number followed by a
binary suffix (Ki..Ei), a decimal suffix (n, u, m, k, M, G, T, P, E) or a decimal exponent.
``Decimal`` keeps "0.1" exact so cpu "100m" and "0.1" convert to the same millicores.
"""

from __future__ import annotations

import math
import re
import reprlib
from decimal import Decimal, InvalidOperation

# The pattern the API server (and controller-gen's int-or-string quantities) validate against.
QUANTITY_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
_QUANTITY_RE = re.compile(QUANTITY_PATTERN)
_NUMBER_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")

BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
DECIMAL_SUFFIXES: dict[str, Decimal] = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60


def short(value: object) -> str:
    """A bounded repr of user input for messages."""
    return _SHORT.repr(value)


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity (or not an acceptable one for its use)."""


def parse_quantity(value: str | int | float) -> Decimal:
    """The exact numeric value of a quantity; ints and floats are taken as plain numbers."""
    if isinstance(value, bool):
        raise QuantityError(f"{short(value)} is not a quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{short(value)} is not a finite quantity")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"{short(value)} is not a quantity (expected a string such as '100M')")
    text = value.strip()
    if not text or not _QUANTITY_RE.match(text):
        raise QuantityError(f"{short(value)} is not a Kubernetes quantity (e.g. '100m', '64Mi', '100M')")
    match = _NUMBER_RE.match(text)
    assert match is not None  # guaranteed by the quantity pattern
    number_text, suffix = match.groups()
    try:
        number = Decimal(number_text)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid decimals
        raise QuantityError(f"{short(value)} is not a Kubernetes quantity") from exc
    if suffix in BINARY_SUFFIXES:
        return number * BINARY_SUFFIXES[suffix]
    if suffix in DECIMAL_SUFFIXES:
        return number * DECIMAL_SUFFIXES[suffix]
    # decimal exponent: e3, E-2, e+6
    return number * (Decimal(10) ** Decimal(suffix[1:]))


def _non_negative(value: str | int | float, what: str) -> Decimal:
    number = parse_quantity(value)
    if number < 0:
        raise QuantityError(f"{what} must not be negative (got {short(value)})")
    return number


def cpu_millicores(value: str | int | float) -> int:
    """CPU quantity in millicores, rounded up as the kubelet does ("0.1" -> 100, "1" -> 1000)."""
    return math.ceil(_non_negative(value, "cpu") * 1000)


def memory_bytes(value: str | int | float) -> int:
    """Memory quantity in bytes, rounded up ("64Mi" -> 67108864)."""
    return math.ceil(_non_negative(value, "memory"))


def bandwidth_bps(value: str | int | float) -> float:
    """Bandwidth quantity in bits per second ("100M" -> 1e8, "1Gi" -> 2**30)."""
    return float(_non_negative(value, "bandwidth"))


def format_cpu(millicores: int) -> str:
    """Canonical cpu string: whole cores as "2", anything else in millicores ("100m")."""
    if millicores % 1000 == 0:
        return str(millicores // 1000)
    return f"{millicores}m"


def format_bytes(value: int | float) -> str:
    """Canonical quantity for a byte or bit count: the largest exact suffix, decimal before binary.

    "100M" stays "100M" and "100Mi" stays "100Mi" after a parse/format round trip.
    """
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if number == number.to_integral_value():
        integer = int(number)
        if integer == 0:
            return "0"
        for suffix in ("E", "P", "T", "G", "M", "k"):
            factor = int(DECIMAL_SUFFIXES[suffix])
            if integer % factor == 0:
                return f"{integer // factor}{suffix}"
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            factor = BINARY_SUFFIXES[suffix]
            if integer % factor == 0:
                return f"{integer // factor}{suffix}"
        return str(integer)
    millis = number * 1000
    if millis == millis.to_integral_value():
        return f"{int(millis)}m"
    return format(number.normalize(), "f")
