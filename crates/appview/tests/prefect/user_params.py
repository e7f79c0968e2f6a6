"""A Prefect user's flows with parameters of every JSON type, unchanged, against the appview.

Run by `cargo test -p appview --test prefect_tasks` (its `user_params` test) with
PREFECT_API_URL at the server (the venv from scripts/prefect_venv.py). The flows take int,
float, bool, list, dict, str and None parameters, some left to their defaults; one runs
through flow.with_options under another name, one raises (FAILED). Then `prefect flow ls`,
`prefect flow-run ls` and `prefect flow-run inspect ID` run as typed, through the CLI's own
entry point (`prefect.cli.app`, what the `prefect` script calls) in this process, which saves
a Python start per command. Each flow run is read back raw (GET /flow_runs/{id}): its
parameters must be the text Prefect's server answers for what the client sent, Python's
`json.dumps(sent, ensure_ascii=False, separators=(",", ":"))`. Prints a final JSON line that
the Rust test reads back through the REST API.
"""

import contextlib
import io
import json
import os
import sys

import httpx
from prefect import flow
from prefect.cli import app

# The harness watches what the client sends (the user's code below is
# untouched): the parameters of every POST /flow_runs/ on the wire.
SENT = []
_send, _async_send = httpx.Client.send, httpx.AsyncClient.send


def _watch(request):
    if request.method == "POST" and request.url.path.endswith("/flow_runs/"):
        SENT.append(json.loads(request.content)["parameters"])


def _spy(self, request, *args, **kwargs):
    _watch(request)
    return _send(self, request, *args, **kwargs)


async def _async_spy(self, request, *args, **kwargs):
    _watch(request)
    return await _async_send(self, request, *args, **kwargs)


httpx.Client.send, httpx.AsyncClient.send = _spy, _async_spy


@flow(name="params-typed")
def typed(n: int, x: float, ok: bool, items: list, cfg: dict, note: str = "d\u00e9faut", maybe=None):
    return {"n": n, "x": x, "ok": ok, "items": items, "cfg": cfg, "note": note, "maybe": maybe}


@flow(name="params-defaults")
def defaults(n: int = 3, x: float = 0.5, ok: bool = False, items: list = [1, 2, 3], cfg: dict = {"region": "eu", "retries": 2}):
    return n * x


@flow(name="params-raises")
def raises(limit: int = 1, ratio: float = 1.0):
    raise ValueError(f"limit {limit} exceeded")


def run(name, fn, *args, **kwargs):
    state = fn(*args, return_state=True, **kwargs)
    print(f"{name}: {state.type.value}", flush=True)
    return {"flow_run_id": str(state.state_details.flow_run_id), "state": state.type.value, "sent": SENT[-1]}


def cli(*args):
    """`prefect ARGS...` through the CLI's entry point: (exit code, output)."""
    out = io.StringIO()
    argv, sys.argv = sys.argv, ["prefect", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            app()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
    print(out.getvalue(), flush=True)
    return code, out.getvalue()


def main():
    runs = {}
    runs["typed"] = run(
        "typed",
        typed,
        7,
        1.0,
        True,
        [1, 2.5, "three", None, {"four": [4]}],
        {"zeta": 1, "alpha": {"deep": [1e-05, 1e16, -0.0]}, "flag": False},
    )
    runs["defaults"] = run("defaults", defaults)
    renamed = typed.with_options(name="params-renamed")
    runs["renamed"] = run(
        "renamed", renamed, n=-2**63, x=123.456, ok=False, items=[10**20, -(2**70)], cfg={}, note="\u00e9\n\t\"", maybe=2**64 - 1
    )
    runs["raises"] = run("raises", raises, limit=5)
    api = os.environ["PREFECT_API_URL"]
    for r in runs.values():
        raw = httpx.get(f"{api}/flow_runs/{r['flow_run_id']}").text
        want = '"parameters":' + json.dumps(r["sent"], ensure_ascii=False, separators=(",", ":"))
        r["byte_equal"] = want in raw
        if not r["byte_equal"]:
            print(f"want {want}\nraw {raw}", flush=True)
    flow_ls = cli("flow", "ls")
    run_ls = cli("flow-run", "ls")
    inspect = cli("flow-run", "inspect", runs["typed"]["flow_run_id"])
    print(
        json.dumps(
            {
                "runs": runs,
                "flow_ls": flow_ls,
                "flow_run_ls": run_ls,
                "inspect": inspect,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
