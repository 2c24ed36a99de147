"""The tidy tables' column types, named without importing polars: a measuring
process (`boatload run`) imports every study record but never builds a table,
and polars is the largest part of its start. `to_polars` gives the polars dtype
where a table is built (Study.table_schema)."""

from __future__ import annotations

Float64, Int64, String, Boolean = "Float64", "Int64", "String", "Boolean"


def List(inner: str) -> tuple[str, str]:  # noqa: N802 (polars' name)
    return ("List", inner)


def to_polars(dtype):
    """The polars dtype a name of this module stands for."""
    import polars as pl

    if isinstance(dtype, tuple) and dtype[:1] == ("List",):
        return pl.List(to_polars(dtype[1]))
    if dtype not in (Float64, Int64, String, Boolean):
        raise TypeError(f"a study's column type: one of boatload.base.dtypes' names, not {dtype!r}")
    return getattr(pl, dtype)
