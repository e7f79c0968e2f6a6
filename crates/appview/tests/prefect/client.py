"""Prefect's own Python client, unchanged, against the appview's REST server.

Run by `cargo test -p appview --test prefect_client` with PREFECT_API_URL at
the server (the venv from scripts/prefect_venv.py). Drives the client's
public API only: creates flows and runs, walks states through a lifecycle,
has a transition refused, reads a run, filters with sort/limit/offset,
counts, lists flows. Prints one line per step and a final JSON summary line
that the Rust test checks against the server's index.
"""

import asyncio
import json
import sys

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterId,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.client.schemas.responses import SetStateStatus
from prefect.client.schemas.sorting import FlowRunSort, FlowSort
from prefect.states import Completed, Crashed, Failed, Pending, Running


@flow(name="client-etl")
def etl():
    pass


@flow(name="client-audit")
def audit():
    pass


def step(msg):
    print(msg, flush=True)


def state_filter(*types):
    return FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=list(types))))


async def main():
    async with get_client() as client:
        etl_id = await client.create_flow(etl)
        audit_id = await client.create_flow(audit)
        assert await client.create_flow(etl) == etl_id, "a flow's name finds it again"
        step(f"flows created: client-etl {etl_id}, client-audit {audit_id}")

        runs = []
        for i in range(6):
            f = etl if i % 2 == 0 else audit
            run = await client.create_flow_run(f, name=f"run-{i}", parameters={"batch": str(i)}, tags=["client"])
            assert run.state is not None and run.state.type == StateType.PENDING, run.state
            runs.append(run)
        step(f"{len(runs)} runs created PENDING: {', '.join(r.name for r in runs)}")

        # Lifecycles: 0 and 1 complete, 2 fails, 3 runs on, 4 and 5 stay PENDING.
        for i, ends in [(0, Completed), (1, Completed), (2, Failed), (3, None)]:
            result = await client.set_flow_run_state(runs[i].id, Running())
            assert result.status == SetStateStatus.ACCEPT, result
            if ends is not None:
                result = await client.set_flow_run_state(runs[i].id, ends(message=f"run-{i} done"))
                assert result.status == SetStateStatus.ACCEPT, result
                assert result.state.type == ends().type
        step("lifecycles: run-0, run-1 COMPLETED; run-2 FAILED; run-3 RUNNING; run-4, run-5 PENDING (all ACCEPT)")

        refused = await client.set_flow_run_state(runs[0].id, Crashed())
        assert refused.status == SetStateStatus.ABORT, refused
        assert refused.state.type == StateType.COMPLETED
        step(f"COMPLETED -> CRASHED refused: {refused.status.value}: {refused.details.reason}")
        refused = await client.set_flow_run_state(runs[3].id, Pending())
        assert refused.status == SetStateStatus.ABORT, refused
        step(f"RUNNING -> PENDING refused: {refused.status.value}: {refused.details.reason}")

        run0 = await client.read_flow_run(runs[0].id)
        assert run0.name == "run-0" and run0.state_type == StateType.COMPLETED
        assert run0.run_count == 1 and run0.start_time is not None and run0.end_time is not None
        assert run0.parameters == {"batch": "0"} and run0.tags == ["client"]
        assert run0.state.message == "run-0 done"
        step(f"read run-0: {run0.state_type.value}, run_count {run0.run_count}, total_run_time {run0.total_run_time}")

        page = await client.read_flow_runs(sort=FlowRunSort.EXPECTED_START_TIME_DESC, limit=2, offset=1)
        assert [r.name for r in page] == ["run-4", "run-3"], [r.name for r in page]
        step(f"filter EXPECTED_START_TIME_DESC offset 1 limit 2: {[r.name for r in page]}")
        active = await client.read_flow_runs(flow_run_filter=state_filter(StateType.RUNNING, StateType.PENDING))
        assert [str(r.id) for r in active] == sorted((str(runs[i].id) for i in (3, 4, 5)), reverse=True)
        step(f"filter RUNNING or PENDING (ID_DESC): {[r.name for r in active]}")
        done = await client.read_flow_runs(
            flow_filter=FlowFilter(id=FlowFilterId(any_=[etl_id])),
            flow_run_filter=state_filter(StateType.COMPLETED, StateType.FAILED),
            sort=FlowRunSort.START_TIME_DESC,
        )
        assert [r.name for r in done] == ["run-2", "run-0"], [r.name for r in done]
        step(f"filter client-etl COMPLETED or FAILED, START_TIME_DESC: {[r.name for r in done]}")

        completed = await client.count_flow_runs(flow_run_filter=state_filter(StateType.COMPLETED))
        total = await client.count_flow_runs()
        assert (completed, total) == (2, 6), (completed, total)
        step(f"count COMPLETED: {completed}; count all: {total}")

        flows = await client.read_flows(sort=FlowSort.NAME_ASC, limit=200)
        assert [f.name for f in flows] == ["client-audit", "client-etl"], flows
        step(f"flows NAME_ASC: {[f.name for f in flows]}")

        print(json.dumps({"flows": 2, "runs": 6, "states": 6 + 7, "completed": completed}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
