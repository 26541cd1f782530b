"""The impact as a terminal tree (rich): what is deleted, under what, and what is at risk, loudly.

:func:`render_impact` returns a rich renderable; nothing here reads the cluster. The tree follows
the cascade (each object under the owner through which it is reached; namespace content under the
namespace). Under each node, children are grouped by kind and long groups are cut at
``limit`` with a count of the rest (``-o json`` has everything). Data at risk comes first in red,
then finalizers, orphaned and surviving objects, warnings, and the plan id with the confirm command.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.text import Text
from rich.tree import Tree

from kubeloop.api import FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS
from kubeloop.guard._model import Entry, Impact

__all__ = ["confirm_command", "render_impact"]


def confirm_command(impact: Impact) -> str:
    t = impact.target
    cmd = f"kubeloop delete {t.display}"
    if t.namespace:
        cmd += f" -n {t.namespace}"
    if impact.cascade != "background":
        cmd += f" --cascade {impact.cascade}"
    return f"{cmd} --confirm {impact.plan_id}"


def _label(entry: Entry) -> Text:
    text = Text(entry.ref.display)
    if entry.ref.namespace and not entry.parent:
        text.append(f" -n {entry.ref.namespace}", style="dim")
    tags = []
    if entry.blocking:
        tags.append(("blocks owner deletion", "yellow"))
    if entry.being_deleted:
        tags.append(("already terminating", "dim"))
    if entry.protected:
        tags.append(("PROTECTED", "bold magenta"))
    if entry.ref.kind in ("PersistentVolumeClaim", "PersistentVolume") and entry.ref.group == "":
        tags.append(("DATA", "bold red"))
    custom = [f for f in entry.finalizers if f not in (FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS)]
    if custom:
        tags.append((f"finalizers: {', '.join(custom)}", "yellow"))
    for tag, style in tags:
        text.append("  [")
        text.append(tag, style=style)
        text.append("]")
    return text


def _grouped(children: Iterable[Entry]) -> list[list[Entry]]:
    groups: dict[str, list[Entry]] = defaultdict(list)
    for child in children:
        groups[child.ref.display.split("/", 1)[0]].append(child)
    return [sorted(g, key=lambda e: e.ref.name) for _, g in sorted(groups.items())]


def render_impact(impact: Impact, *, limit: int = 20) -> RenderableType:
    children: dict[str, list[Entry]] = defaultdict(list)
    for entry in impact.deleted[1:]:
        children[entry.parent].append(entry)
    root_entry = impact.deleted[0]
    verb = {"orphan": "deleted (dependents orphaned)"}.get(impact.cascade, f"deleted ({impact.cascade} cascade)")
    root = Tree(Text.assemble(("DELETE ", "bold red"), _label(root_entry), (f"  {verb}", "dim")))
    placed = {root_entry.ref.uid}

    def grow(node: Tree, uid: str) -> None:
        for group in _grouped(children.get(uid, ())):
            for entry in group[:limit]:
                if entry.ref.uid in placed:
                    continue
                placed.add(entry.ref.uid)
                grow(node.add(_label(entry)), entry.ref.uid)
            if len(group) > limit:
                more = group[limit:]
                placed.update(e.ref.uid for e in more)
                for e in more:
                    _mark_subtree(children, e.ref.uid, placed)
                node.add(Text(f"… and {len(more)} more {more[0].ref.display.split('/', 1)[0]}", style="dim"))

    grow(root, root_entry.ref.uid)
    unplaced = [e for e in impact.deleted if e.ref.uid not in placed]
    for entry in unplaced:  # ownership cycles: shown flat under the target
        root.add(_label(entry))
    parts: list[RenderableType] = [
        Text(f"Deleting {impact.target.display_ns} removes {len(impact.deleted)} object(s):", style="bold"), root,
    ]
    if impact.data:
        parts.append(Text("\nDATA AT RISK:", style="bold red"))
        for d in impact.data:
            style = "bold red" if d.fate == "deleted" else "yellow"
            vol = f" (volume {d.volume})" if d.volume else ""
            parts.append(Text(f"  {d.fate.upper():8} {d.ref.display_ns} {d.capacity}{vol}: {d.detail}", style=style))
    if impact.finalizers:
        parts.append(Text("\nFinalizers that block or delay:", style="bold"))
        for f in impact.finalizers:
            parts.append(Text(f"  {'BLOCKS' if f.blocks else 'delays':7}{f.ref.display_ns}: {f.finalizer}: {f.effect}",
                              style="yellow" if f.blocks else ""))
    if impact.orphaned:
        parts.append(Text(f"\nOrphaned (kept, ownerReference removed): {len(impact.orphaned)}", style="bold"))
        parts.extend(Text(f"  {e.ref.display_ns}") for e in impact.orphaned[:limit])
        if len(impact.orphaned) > limit:
            parts.append(Text(f"  … and {len(impact.orphaned) - limit} more", style="dim"))
    if impact.surviving:
        parts.append(Text(f"\nSurviving (another owner remains): {len(impact.surviving)}", style="bold"))
        parts.extend(Text(f"  {s.ref.display_ns} (kept by {', '.join(s.kept_by)})") for s in impact.surviving[:limit])
    for warning in impact.warnings:
        parts.append(Text(f"Warning: {warning}", style="yellow"))
    parts.append(Text.assemble("\nPlan ", (impact.plan_id, "bold"), ". To execute exactly this plan: ",
                               (confirm_command(impact), "bold")))
    return Group(*parts)


def _mark_subtree(children: dict[str, list[Entry]], uid: str, placed: set[str]) -> None:
    stack = [uid]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child.ref.uid not in placed:
                placed.add(child.ref.uid)
                stack.append(child.ref.uid)
