"""A Prefect user's ordinary flows and tasks, unchanged, against the appview.

Run by `cargo test -p appview --test prefect_tasks` with PREFECT_API_URL at
the server (the venv from scripts/prefect_venv.py). The flows use @task
calls in sequence, .submit(), .map(), a retry that fails once, a task that
fails, a flow that raises, a subflow and flow.with_options, all in this one
process. Then `prefect task-run ls` and `prefect task-run inspect ID` run
as a user types them. Prints a final JSON line: what the client reported
(each flow run's final state, each task run's final state by name), which
the Rust test reads back through the REST API.
"""

import json
import subprocess
import sys

from prefect import flow, task
from prefect.events.worker import EventsWorker

# The harness watches what the client reports (the user's code below is
# untouched): every task-run event the client hands its events worker.
REPORTED = []
_send = EventsWorker.send


def _spy(self, event):
    if event.event.startswith("prefect.task-run."):
        REPORTED.append(
            {
                "id": str(event.id),
                "task_run": event.resource.id.removeprefix("prefect.task-run."),
                "type": event.resource["prefect.state-type"],
                "name": event.resource["prefect.state-name"],
                "occurred": event.occurred.isoformat(),
            }
        )
    return _send(self, event)


EventsWorker.send = _spy

ATTEMPTS = {"flaky": 0}


@task
def add(x, y):
    return x + y


@task
def double(x):
    return 2 * x


@task(retries=2, retry_delay_seconds=0)
def flaky():
    ATTEMPTS["flaky"] += 1
    if ATTEMPTS["flaky"] == 1:
        raise RuntimeError("fails once")
    return "ok"


@task
def broken():
    raise ValueError("this task fails")


@flow(name="tasks-sequential")
def sequential():
    a = add(1, 2)
    b = add(a, 3)
    return double(b)


@flow(name="tasks-submit-map")
def submit_and_map():
    f = add.submit(2, 3)
    doubled = double.map([1, 2, 3])
    return f.result() + sum(d.result() for d in doubled)


@flow(name="tasks-retry")
def with_retry():
    return flaky()


@flow(name="tasks-failing-task")
def failing_task():
    state = broken(return_state=True)
    return "handled" if state.is_failed() else "?"


@flow(name="tasks-raises")
def raises():
    add(1, 1)
    raise RuntimeError("the flow raises")


@flow(name="tasks-child")
def child():
    return double(21)


@flow(name="tasks-parent")
def parent():
    return child()


def run(name, fn):
    state = fn(return_state=True)
    print(f"{name}: {state.type.value}", flush=True)
    return {"flow_run_id": str(state.state_details.flow_run_id), "state": state.type.value}


def main():
    runs = {}
    runs["sequential"] = run("sequential", sequential)
    runs["submit_and_map"] = run("submit_and_map", submit_and_map)
    runs["retry"] = run("retry", with_retry)
    runs["failing_task"] = run("failing_task", failing_task)
    runs["raises"] = run("raises", raises)
    runs["parent"] = run("parent", parent)
    renamed = sequential.with_options(name="tasks-renamed", description="renamed")
    runs["renamed"] = run("renamed", renamed)
    # Every event the client queued reaches the server before the CLI reads.
    EventsWorker.drain_all()
    ls = subprocess.run(
        [sys.executable, "-m", "prefect", "task-run", "ls"], capture_output=True, text=True
    )
    print(ls.stdout, ls.stderr, flush=True)
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        some = client.read_task_runs(limit=1)
    inspect = subprocess.run(
        [sys.executable, "-m", "prefect", "task-run", "inspect", str(some[0].id)],
        capture_output=True,
        text=True,
    )
    print(inspect.stdout, inspect.stderr, flush=True)
    print(
        json.dumps(
            {
                "runs": runs,
                "reported": REPORTED,
                "ls_rc": ls.returncode,
                "ls_out": ls.stdout,
                "inspect_rc": inspect.returncode,
                "inspect_out": inspect.stdout,
                "inspected": str(some[0].id),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
