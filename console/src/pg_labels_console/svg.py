"""Layouts for the two pictures, as coordinates: the templates draw them (and escape every text).

No Graphviz: the lineage is layered by depth (the run at the top, the runs it read from below
it, a layer per step upstream), each layer ordered by the mean position of the runs that read
from it, which keeps most edges from crossing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 190, 46, 30, 70, 20
LABEL_ROOM = 220  # right of the nodes, for the last edge's digest and labels


@dataclass
class Node:
    key: str
    run_id: uuid.UUID | None
    agent: str
    scope: str
    layer: int
    x: float = 0
    y: float = 0
    root: bool = False


@dataclass
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float
    digest: str
    labels: list[str]


@dataclass
class Graph:
    width: float
    height: float
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    node_w: int = NODE_W
    node_h: int = NODE_H


def short(text: str | None, n: int) -> str:
    text = text or ""
    return text if len(text) <= n else text[: n - 1] + "…"


def lineage_graph(
    run: dict[str, Any] | None, run_id: uuid.UUID, rows: list[dict[str, Any]]
) -> Graph:
    nodes: dict[str, Node] = {}
    root_key = str(run_id)
    nodes[root_key] = Node(
        root_key,
        run_id,
        (run or {}).get("agent") or "this run",
        (run or {}).get("scope") or "",
        0,
        root=True,
    )
    pairs: list[tuple[str, str, dict[str, Any]]] = []  # (upstream, reader, row)
    for r in rows:
        key = str(r["run_id"]) if r["run_id"] is not None else f"hidden:{r['artifact_id']}"
        if key not in nodes:
            nodes[key] = Node(
                key,
                r["run_id"],
                r["agent"] or "(not visible in this scope)",
                r["scope"] or "",
                int(r["depth"]),
            )
        reader = str(r["read_by"])
        if reader not in nodes:  # a reader outside what lineage returned: place it a layer below
            nodes[reader] = Node(reader, r["read_by"], "", "", max(0, int(r["depth"]) - 1))
        pairs.append((key, reader, r))
    layers: dict[int, list[Node]] = {}
    for n in nodes.values():
        layers.setdefault(n.layer, []).append(n)
    order: dict[str, float] = {}
    for depth in sorted(layers):
        layer = layers[depth]

        def barycenter(n: Node) -> float:
            xs = [order[rd] for up, rd, _ in pairs if up == n.key and rd in order]
            return sum(xs) / len(xs) if xs else 0.0

        layer.sort(key=lambda n: (barycenter(n), n.agent, n.key))
        for i, n in enumerate(layer):
            order[n.key] = i
    widest = max(len(v) for v in layers.values())
    width = PAD * 2 + widest * NODE_W + (widest - 1) * GAP_X
    for depth, layer in layers.items():
        row_w = len(layer) * NODE_W + (len(layer) - 1) * GAP_X
        x0 = (width - row_w) / 2

        for i, n in enumerate(layer):
            n.x = x0 + i * (NODE_W + GAP_X)
            n.y = PAD + depth * (NODE_H + GAP_Y)
    height = PAD * 2 + (max(layers) + 1) * NODE_H + max(layers) * GAP_Y
    g = Graph(width=width + LABEL_ROOM, height=height, nodes=list(nodes.values()))
    for up, rd, r in pairs:
        a, b = nodes[up], nodes[rd]
        # from the upstream run (below) up to the run that read its artifact
        g.edges.append(
            Edge(
                a.x + NODE_W / 2,
                a.y,
                b.x + NODE_W / 2,
                b.y + NODE_H,
                (r["digest"] or "")[:12],
                list(r["labels"] or []),
            )
        )
    return g


RULE_COLOURS = {
    "data_barrier": "#c0392b",
    "untrusted_to_irreversible": "#8e44ad",
    "approval_required": "#d68910",
    "unknown_tool": "#2471a3",
    "sealed": "#566573",
}
OTHER_COLOURS = ["#117a65", "#a04000", "#6c3483", "#1f618d", "#7d6608"]


@dataclass
class Segment:
    rule: str
    n: int
    x: float
    y: float
    w: float
    h: float
    colour: str


@dataclass
class BarChart:
    width: int
    height: int
    segments: list[Segment]
    ticks: list[tuple[float, str]]  # x, day
    yticks: list[tuple[float, int]]  # y, count
    legend: list[tuple[str, str, int]]  # rule, colour, total
    baseline: float
    left: int


def refusals_chart(rows: list[dict[str, Any]], days: int, today: datetime) -> BarChart:
    left, top, bottom, bar_area_h = 44, 10, 24, 150
    day0 = (today - timedelta(days=days - 1)).date()
    step = 22
    width = left + days * step + 10
    rules = sorted({r["rule"] for r in rows})
    colours: dict[str, str] = {}
    for i, rule in enumerate(rules):
        colours[rule] = RULE_COLOURS.get(rule, OTHER_COLOURS[i % len(OTHER_COLOURS)])
    per_day: dict[int, list[tuple[str, int]]] = {}
    totals: dict[str, int] = {}
    for r in rows:
        d = (r["day"].date() - day0).days
        if 0 <= d < days:
            per_day.setdefault(d, []).append((r["rule"], int(r["n"])))
            totals[r["rule"]] = totals.get(r["rule"], 0) + int(r["n"])
    peak = max([sum(n for _, n in v) for v in per_day.values()] + [1])
    scale = bar_area_h / peak
    baseline = top + bar_area_h
    segs: list[Segment] = []
    for d, parts in per_day.items():
        y: float = baseline
        for rule, n in sorted(parts):
            h = max(n * scale, 1.0)
            y -= h
            segs.append(Segment(rule, n, left + d * step + 3, y, step - 6, h, colours[rule]))
    ticks = [
        (left + d * step + step / 2, (day0 + timedelta(days=d)).strftime("%m-%d"))
        for d in range(0, days, max(1, days // 7))
    ]
    yticks = [(baseline - v * scale, v) for v in sorted({0, peak // 2, peak})]
    legend = [(rule, colours[rule], totals.get(rule, 0)) for rule in rules]
    return BarChart(width, top + bar_area_h + bottom, segs, ticks, yticks, legend, baseline, left)
