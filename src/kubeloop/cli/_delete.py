"""``kubeloop delete KIND/NAME``: preview a delete's full cascade, then execute exactly the reviewed plan.

Without ``--confirm`` nothing is written to the cluster: the impact is printed as a tree (or as
JSON with ``-o json``), saved under its plan id in the plan directory, and the command exits 0.
With ``--confirm PLAN`` the impact is recomputed; if its plan id differs, the command prints what
changed and exits 1 without deleting; otherwise it approves protected objects, issues the DELETE
with uid+resourceVersion preconditions and the cascade policy, prints what it did and, with
``--wait``, shows progress until everything the plan deletes is gone (exit 1 on ``--timeout``).
Every API or configuration error exits 1 with a one-line reason.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kubeloop.client import Client
    from kubeloop.guard import Impact

__all__ = ["delete"]


@click.command()
@click.argument("target")
@click.argument("name", required=False)
@click.option("-n", "--namespace", default=None, help="Namespace of the object (default: the kubeconfig's).")
@click.option("--cascade", type=click.Choice(["background", "foreground", "orphan"]), default="background",
              show_default=True, help="Propagation policy, as kubectl delete --cascade.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="Kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config).")
@click.option("--context", default=None, help="Kubeconfig context to use.")
@click.option("-o", "--output", type=click.Choice(["tree", "json"]), default="tree", show_default=True)
@click.option("--confirm", "plan", default=None, metavar="PLAN",
              help="Execute the delete if its impact still has this plan id.")
@click.option("--wait/--no-wait", default=False, help="With --confirm: wait until everything deleted is gone.")
@click.option("--timeout", default=300.0, show_default=True, help="Seconds --wait waits.")
@click.option("--limit", default=20, show_default=True, help="Objects shown per kind under each node of the tree.")
@click.option("--plan-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where previews are kept (default: $KUBELOOP_PLAN_DIR or ~/.cache/kubeloop/plans).")
def delete(
    target: str, name: str | None, namespace: str | None, cascade: str, kubeconfig: str | None,
    context: str | None, output: str, plan: str | None, wait: bool, timeout: float, limit: int,
    plan_dir: Path | None,
) -> None:
    """Preview what deleting TARGET (KIND/NAME, or KIND NAME) removes; execute it with --confirm PLAN.

    The preview lists every object the delete would remove (recursively, through ownerReferences,
    as the garbage collector and the namespace controller do), the objects it would orphan or
    leave with another owner, finalizers that block or delay it, and the claims and volumes whose
    data is at risk. It ends with a plan id; `--confirm PLAN` deletes only if the impact is unchanged.
    """
    from kubeloop.api import ApiError
    from kubeloop.client import ConfigError
    from kubeloop.guard import split_target

    try:
        kind, obj_name = (target, name) if name else split_target(target)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    import asyncio  # here, not at the top: every ``kubeloop`` command imports this module (``_main``)

    try:
        code = asyncio.run(_run(kind, obj_name, namespace=namespace, cascade=cascade, kubeconfig=kubeconfig,
                                context=context, output=output, plan=plan, wait=wait, timeout=timeout,
                                limit=limit, plan_dir=plan_dir))
    except (ApiError, ConfigError) as exc:
        raise click.ClickException(str(getattr(exc, "message", exc)).splitlines()[0]) from None
    sys.exit(code)


async def _run(
    kind: str, name: str, *, namespace: str | None, cascade: str, kubeconfig: str | None, context: str | None,
    output: str, plan: str | None, wait: bool, timeout: float, limit: int, plan_dir: Path | None,
) -> int:
    from rich.console import Console

    from kubeloop.client import Client
    from kubeloop.guard import PlanStore, preview_delete, render_impact

    console = Console(highlight=False, soft_wrap=True)
    store = PlanStore(plan_dir)
    async with Client.from_kubeconfig(kubeconfig, context=context) as client:
        if plan is None:
            impact = await preview_delete(client, kind, name, namespace=namespace, cascade=cascade)
            store.save(impact)
            if output == "json":
                _json(impact.to_json())
            else:
                console.print(render_impact(impact, limit=limit))
            return 0
        return await _confirm(client, console, store, kind, name, namespace=namespace, cascade=cascade, plan=plan,
                              output=output, wait=wait, timeout=timeout, limit=limit)


async def _confirm(
    client: Client, console: Any, store: Any, kind: str, name: str, *, namespace: str | None, cascade: str,
    plan: str, output: str, wait: bool, timeout: float, limit: int,
) -> int:
    from kubeloop.guard import PlanChanged, confirm_delete, render_impact, wait_for_impact

    reviewed: Impact | None = store.load(plan)
    try:
        outcome = await confirm_delete(client, kind, name, namespace=namespace, cascade=cascade, plan=plan,
                                       reviewed=reviewed)
    except PlanChanged as changed:
        store.save(changed.current)
        lines = changed.diff.lines() if changed.diff is not None else []
        if output == "json":
            _json({"executed": False, "planId": changed.current.plan_id, "reviewedPlanId": plan,
                   "message": changed.message, "changes": lines, "impact": changed.current.to_json()})
            return 1
        console.print(f"[bold red]Refused:[/] {changed.message}")
        if lines:
            console.print("What changed:")
            for line in lines:
                console.print(f"  {line}", markup=False)
        elif reviewed is None:
            console.print(f"(plan {plan} is not in {store.directory}, so the difference cannot be shown)")
        console.print("\nThe impact now:")
        console.print(render_impact(changed.current, limit=limit))
        return 1
    impact = outcome.impact
    if output == "json":
        _json({"executed": True, "planId": plan, "approved": [r.display_ns for r in outcome.approved],
               "response": outcome.response, "impact": impact.to_json()})
    else:
        for ref in outcome.approved:
            console.print(f"approved {ref.display_ns} for plan {plan}")
        policy = cascade.capitalize()
        console.print(f"deleted {impact.target.display_ns} (propagationPolicy={policy}, plan {plan}): "
                      f"{len(impact.deleted)} object(s) will be removed, {len(impact.orphaned)} orphaned")
    if wait:
        from rich.progress import Progress

        with Progress(console=console, transient=output == "json") as progress:
            task = progress.add_task("removing", total=len(impact.deleted))

            def report(removed: int, total: int) -> None:
                progress.update(task, completed=removed, total=total)

            await wait_for_impact(client, impact, timeout=timeout, progress=report)
        if output != "json":
            console.print(f"all {len(impact.deleted)} object(s) of plan {plan} are gone")
    return 0


def _json(doc: Any) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
