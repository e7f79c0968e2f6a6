"""A Prefect user's logging, unchanged, against the appview.

Run by `cargo test -p appview --test prefect_logs` with PREFECT_API_URL at
the server (the venv from scripts/prefect_venv.py). The flows log with
get_run_logger() at INFO, WARNING and ERROR in the flow and in its tasks,
and print() under log_prints=True; a second flow run logs too, so reading
one run's lines must leave the other's out. Then `prefect flow-run logs
ID` (all lines, and `--tail`) and `prefect flow-run inspect ID` run as a
user types them. Prints a final JSON line: every log line the client
handed its log worker, the runs, and the CLI's output, which the Rust test
reads back through the REST API.
"""

import json
import subprocess
import sys

import orjson
from prefect import flow, get_run_logger, task
from prefect.events.worker import EventsWorker
from prefect.logging.handlers import APILogWorker

# The harness watches what the client reports (the user's code below is
# untouched): every line the client hands its log worker.
REPORTED = []
_send = APILogWorker.send


def _spy(self, item):
    log = orjson.loads(item) if isinstance(item, (bytes, bytearray)) else dict(item)
    log.pop("__payload_size__", None)
    REPORTED.append(log)
    return _send(self, item)


APILogWorker.send = _spy


@task
def shout(n):
    logger = get_run_logger()
    logger.info("task %d says info", n)
    logger.warning("task %d says warning", n)
    logger.error("task %d says error", n)
    print(f"task {n} prints")
    return n


@flow(name="logs-flow", log_prints=True)
def noisy():
    logger = get_run_logger()
    logger.info("flow says info")
    logger.warning("flow says warning")
    total = shout(1) + shout(2)
    logger.error("flow says error: total %d", total)
    print("flow prints")
    return total


@flow(name="logs-other")
def other():
    get_run_logger().info("the other run's line")


def cli(*args):
    p = subprocess.run(
        [sys.executable, "-m", "prefect", *args], capture_output=True, text=True
    )
    print(p.stdout, p.stderr, flush=True)
    return {"rc": p.returncode, "out": p.stdout, "err": p.stderr}


def main():
    state = noisy(return_state=True)
    run_id = str(state.state_details.flow_run_id)
    other_state = other(return_state=True)
    # The client ships lines in the background (a batch every 2 s); drain
    # both workers so every line reached the server before anything reads.
    APILogWorker.drain_all()
    EventsWorker.drain_all()
    logs = cli("flow-run", "logs", run_id)
    tail = cli("flow-run", "logs", run_id, "--tail", "--num-logs", "3")
    inspect = cli("flow-run", "inspect", run_id)
    print(
        json.dumps(
            {
                "flow_run_id": run_id,
                "state": state.type.value,
                "other_run_id": str(other_state.state_details.flow_run_id),
                "reported": REPORTED,
                "logs": logs,
                "tail": tail,
                "inspect": inspect,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
