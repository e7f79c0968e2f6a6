"""The Prefect user of `appview.flow_e2e` (benches/benches/appview/flow_e2e.rs).

One long-lived process of the venv's python (prefect 3.9.1), its server
given by PREFECT_API_URL. Prefect is imported and the flow defined once,
before anything is timed. Each line `run` on stdin runs the flow once, as a
user's script would, then drains the client's log and event workers (what a
process does at exit) so every log line and event has been acknowledged by
the server; then answers one JSON line on the protocol channel:
{"id": <flow run id>, "type": <final state type>}. `quit` or EOF ends it.

Prefect's console output goes to stderr: stdout is kept for the answers.
"""

import json
import os
import sys

# The answers' channel is the original stdout; anything Prefect or the user
# prints goes to stderr instead.
_answers = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.events.worker import EventsWorker  # noqa: E402
from prefect.logging.handlers import APILogWorker  # noqa: E402

TASKS = 10
LINES = 5


@task
def step(i: int) -> int:
    logger = get_run_logger()
    for j in range(LINES):
        logger.info("step %d line %d", i, j)
    return i


@flow(name="flow-e2e")
def e2e() -> int:
    return sum(step(i) for i in range(TASKS))


def main() -> None:
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "quit":
            break
        if cmd != "run":
            _answers.write(json.dumps({"error": f"unknown command {cmd!r}"}) + "\n")
            continue
        state = e2e(return_state=True)
        APILogWorker.drain_all()
        EventsWorker.drain_all()
        _answers.write(
            json.dumps({"id": str(state.state_details.flow_run_id), "type": state.type.value}) + "\n"
        )


if __name__ == "__main__":
    main()
