"""Sparse linear constraints built row by row, for the HiGHS MILPs (the evaluation's optimum and the
placement plans): ``low <= A @ x <= high``."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from scipy.optimize import LinearConstraint
from scipy.sparse import coo_matrix


class Rows:
    """Rows of ``A`` as (column, coefficient) entries with their bounds."""

    def __init__(self) -> None:
        self._rows: list[int] = []
        self._cols: list[int] = []
        self._vals: list[float] = []
        self._low: list[float] = []
        self._high: list[float] = []

    def __len__(self) -> int:
        return len(self._low)

    def add(self, entries: Iterable[tuple[int, float]], low: float, high: float) -> None:
        r = len(self._low)
        for col, val in entries:
            self._rows.append(r)
            self._cols.append(col)
            self._vals.append(val)
        self._low.append(low)
        self._high.append(high)

    def constraint(self, n_vars: int) -> LinearConstraint:
        a = coo_matrix((self._vals, (self._rows, self._cols)), shape=(len(self._low), n_vars)).tocsr()
        return LinearConstraint(a, np.array(self._low), np.array(self._high))
