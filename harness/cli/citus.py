"""How the command line shows a Citus cluster (``status``) and what ``distribute`` did.

Pure: lines of text from the domain values; the commands live in :mod:`harness.cli.app`.
"""

from __future__ import annotations

from harness.memory.domain.distribution import ClusterState, DistributionReport

__all__ = ["cluster_lines", "distribution_lines"]


def cluster_lines(state: ClusterState) -> list[str]:
    """``status``'s cluster section: Citus version, each node, each table's placement."""
    workers = [n for n in state.nodes if not n.is_coordinator]
    lines = [
        f"citus           {state.citus_version}, {len(workers)} worker(s), tables "
        + ("distributed by tenant" if state.distributed else "NOT distributed (run distribute)")
    ]
    for node in state.nodes:
        what = "coordinator" if node.is_coordinator else "worker"
        flags = [node.role] + ([] if node.active else ["inactive"])
        flags += ["holds shards"] if node.has_shards else []
        lines.append(f"  node          {node.host}:{node.port} {what} ({', '.join(flags)})")
    for table in state.tables:
        if table.placement == "distributed":
            where = f"distributed by {table.column}, {table.shards} shards"
            where += f", co-location {table.colocation}"
        elif table.placement == "reference":
            where = "reference (a copy on every node)"
        else:
            where = "local to the coordinator"
        lines.append(f"  table         {table.table}: {where}")
    return lines


def distribution_lines(report: DistributionReport) -> list[str]:
    """What ``distribute`` did, then the cluster."""
    lines = []
    if report.login_granted:
        lines.append("application role harness_app may now log in (the workers' connections)")
    for step in report.steps:
        if step.action == "reference":
            lines.append(f"{step.table}: reference table")
        else:
            with_ = f", co-located with {step.colocate_with}" if step.colocate_with else ""
            lines.append(f"{step.table}: distributed by tenant{with_}")
    if not report.steps:
        lines.append("already distributed: nothing to do")
    return lines + cluster_lines(report.state)
