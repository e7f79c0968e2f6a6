// The measurement loop every peer probe shares (our own code; no package).
//
// A probe names an id, an operation and its throughput; this file runs the
// operation for the mode's budget and writes one JSON result per id in the
// shape the harness checks (benches/src/peers/mod.rs) and the snapshot reads
// (scripts/atbench_snapshot/peers.py):
//
//   {id, peer, versions, node, created, callers, ops, runs: [{ops, seconds, ops_per_sec}],
//    ops_per_sec (median run), mean_ns, p50_ns, p95_ns, p99_ns, max_ns,
//    throughput: {kind, per_iteration}, timing, verified, check, ...extra}
//
// Two timings:
//  - "batched": operations far shorter than the clock's resolution run in
//    batches of at least 1 ms; each batch gives one per-operation sample
//    (its time / its size), so percentiles are over batch means.
//  - "per-op": each operation is timed alone, from `callers` concurrent
//    async loops on node's one thread (how a node server serves concurrent
//    requests); ops/s is all operations over the wall time of the run.
'use strict'

const fs = require('node:fs')
const path = require('node:path')

const BUDGETS = {
  full: { runs: 3, warmMs: 500, runMs: 2000 },
  quick: { runs: 1, warmMs: 150, runMs: 600 },
  smoke: { runs: 1, warmMs: 20, runMs: 100 },
}

function parseArgs(argv) {
  const args = { inputs: null, out: null, mode: 'full', groups: null }
  for (let i = 2; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]]
    if (value === undefined) throw new Error(`${flag} needs a value`)
    if (flag === '--inputs') args.inputs = value
    else if (flag === '--out') args.out = value
    else if (flag === '--mode') args.mode = value
    else if (flag === '--groups') args.groups = value ? new Set(value.split(',')) : null
    else throw new Error(`unknown option ${flag}`)
  }
  if (!args.inputs || !args.out) throw new Error('usage: probe.js --inputs DIR --out DIR [--mode full|quick|smoke] [--groups a,b]')
  if (!BUDGETS[args.mode]) throw new Error(`unknown mode ${args.mode}`)
  args.budget = BUDGETS[args.mode]
  return args
}

const now = () => process.hrtime.bigint()

function percentile(sorted, q) {
  if (sorted.length === 0) return 0
  const rank = Math.max(1, Math.ceil(q * sorted.length))
  return sorted[rank - 1]
}

function median(values) {
  const s = [...values].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

// Runs `op(i)` (awaited when `isAsync`) in batches; returns runs and samples.
async function batched(op, isAsync, budget) {
  let i = 0
  const runBatch = async (size) => {
    const t0 = now()
    if (isAsync) for (let k = 0; k < size; k++) await op(i++)
    else for (let k = 0; k < size; k++) op(i++)
    return Number(now() - t0)
  }
  // Warm-up, growing the batch until one takes >= 1 ms.
  let size = 1
  const warmEnd = Date.now() + budget.warmMs
  while (Date.now() < warmEnd || size === 1) {
    const ns = await runBatch(size)
    if (ns < 1e6) size *= 2
    else if (Date.now() >= warmEnd) break
  }
  const runs = []
  const samples = []
  for (let r = 0; r < budget.runs; r++) {
    let ops = 0
    let total = 0
    const end = Date.now() + budget.runMs
    while (Date.now() < end) {
      const ns = await runBatch(size)
      ops += size
      total += ns
      samples.push(ns / size)
    }
    runs.push({ ops, seconds: total / 1e9, ops_per_sec: ops / (total / 1e9) })
  }
  return { runs, samples, callers: 1 }
}

// Runs `callers` concurrent loops of `makeOp(caller)(i)`, timing each op.
async function perOp(makeOp, callers, budget) {
  const ops = await Promise.all(Array.from({ length: callers }, (_, c) => makeOp(c)))
  const counters = new Array(callers).fill(0)
  const phase = async (ms, record) => {
    const end = Date.now() + ms
    let done = 0
    const t0 = now()
    await Promise.all(
      ops.map(async (op, c) => {
        while (Date.now() < end) {
          const s = now()
          await op(counters[c]++)
          if (record) record.push(Number(now() - s))
          done++
        }
      }),
    )
    return { ops: done, seconds: Number(now() - t0) / 1e9 }
  }
  await phase(budget.warmMs, null)
  const runs = []
  const samples = []
  for (let r = 0; r < budget.runs; r++) {
    const run = await phase(budget.runMs, samples)
    runs.push({ ...run, ops_per_sec: run.ops / run.seconds })
  }
  return { runs, samples, callers }
}

function packageVersion(dir, name) {
  const file = path.join(dir, 'node_modules', ...name.split('/'), 'package.json')
  return JSON.parse(fs.readFileSync(file, 'utf8')).version
}

// The result record of one id.
function result({ id, peer, versions, measured, throughput, timing, check, extra }) {
  const sorted = [...measured.samples].sort((a, b) => a - b)
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length)
  return {
    id,
    peer,
    versions,
    node: process.version,
    created: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    callers: measured.callers,
    ops: measured.runs.reduce((a, r) => a + r.ops, 0),
    runs: measured.runs,
    ops_per_sec: median(measured.runs.map((r) => r.ops_per_sec)),
    mean_ns: mean,
    p50_ns: percentile(sorted, 0.5),
    p95_ns: percentile(sorted, 0.95),
    p99_ns: percentile(sorted, 0.99),
    max_ns: sorted.length ? sorted[sorted.length - 1] : 0,
    samples: sorted.length,
    throughput,
    timing,
    verified: true,
    check,
    ...(extra || {}),
  }
}

// Writes a result as <out>/<id with / as __>.json and prints a progress line.
function write(out, record) {
  fs.mkdirSync(out, { recursive: true })
  fs.writeFileSync(path.join(out, record.id.replaceAll('/', '__') + '.json'), JSON.stringify(record, null, 2))
  const us = (ns) => (ns / 1000).toFixed(ns < 10000 ? 2 : 0)
  process.stderr.write(
    `atbench: peers: ${record.id}: ${record.ops_per_sec.toFixed(0)} ops/s, p50 ${us(record.p50_ns)} µs, ` +
      `p99 ${us(record.p99_ns)} µs (${record.runs.length} run(s), ${record.ops} ops)\n`,
  )
  return record.id
}

// Throws with `what` when `ok` is false: a probe whose peer computed
// something else than ours must not report a rate for it.
function check(ok, what) {
  if (!ok) throw new Error(`verification failed: ${what}`)
}

const bytesEqual = (a, b) => a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0

module.exports = { parseArgs, batched, perOp, packageVersion, result, write, check, bytesEqual, median }
