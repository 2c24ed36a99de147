"""What the notebook tests share: reading the data a saved figure plots."""

from __future__ import annotations


def spec_records(spec: dict) -> list[dict]:
    """All inline data rows of a Vega-Lite spec (top-level datasets and data.values)."""
    rows: list[dict] = []
    for values in spec.get("datasets", {}).values():
        rows.extend(values)

    def walk(node):
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, dict) and isinstance(data.get("values"), list):
                rows.extend(data["values"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in spec.items() if k != "datasets"})
    return rows
