"""Helpers behind scripts/bench_snapshot.py, bench_ab.py, bench_charts.py, readme_results.py.

Modules:
  proc            the one subprocess wrapper: run a command, or probe one that may fail
  humanize        human units for times, rates and percentages; the `percentage` argument type
  markdown        a safe table cell and a table, shared by every generated document
  criterion       reading Criterion 0.8.2's `new/benchmark.json` + `new/estimates.json`
  sidecars        latency and context sidecars written by the bench harness
  registry        benches/units.toml: units of work, which rows are comparable, floor probes
  environment     git, rustc, OS, CPU, Criterion version, dataset fingerprint
  machine         the machine fingerprint and the same-machine rule for cross-run deltas
  history         bench-history/: snapshot files, previous/tagged lookup, renames
  compare         cross-run deltas against a previous snapshot, calibration (information)
  targets         a change's files -> crates -> bench targets -> rows, and which rows are controls
  builds          the baseline's worktree and target dir, building both sides' executables
  drive           measuring both builds of each id in pairs (driven processes or per-pair runs)
  pairing         the pairing rule: paired ratios, the controls' floor, verdicts
  remeasure       the paired re-measurement's plan and run, shared by bench_snapshot and bench_ab
  snapshot_pairs  bench_snapshot's choices for it: baseline, targets, ids, preset
  paired_report   latest.md's verdicts, paired table and floor-probe table
  report          the generated markdown (bench-<UTC>.md and latest.md)
  pagedata        what the report page shows: groups, floor lines, latency families, history
  svg             the report page's inline drawings (log axes, sparklines, latency curves)
  page            the report page, bench-artifacts/index.html (HTML, CSS, the filter script)
  readme          the README's generated result tables
  peers           the peers' results (BENCH_PEERS=1) merged into a snapshot

Python 3.11 standard library only.
"""
