"""Helpers behind scripts/bench_snapshot.py and scripts/bench_charts.py.

Modules:
  humanize     human units for times, rates and percentages
  criterion    reading Criterion 0.8.2's `new/benchmark.json` + `new/estimates.json`
  sidecars     latency and context sidecars written by the bench harness
  registry     benches/units.toml: units of work and which rows are comparable
  environment  git, rustc, OS, CPU, Criterion version, dataset fingerprint
  machine      the machine fingerprint and the same-machine rule for baselines
  history      bench-history/: snapshot files, previous/tagged lookup, renames
  compare      deltas against a previous snapshot, calibration, verdicts
  report       the generated markdown (bench-<UTC>.md and latest.md)
  pagedata     what the report page shows: groups, floor lines, latency families, history
  svg          the report page's inline drawings (log axes, sparklines, latency curves)
  page         the report page, bench-artifacts/index.html (HTML, CSS, the filter script)

Python 3.11 standard library only.
"""
