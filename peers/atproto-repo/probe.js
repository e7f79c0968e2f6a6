// atbench peer probe: @atproto/repo (with @atproto/crypto and its DAG-CBOR
// codec, @atproto/lex-cbor) through the units of work of `--bench repo`.
//
//   node probe.js --inputs DIR --out DIR [--mode full|quick|smoke] [--groups a,b]
//
// DIR holds inputs.json and the files it names (benches/src/peers/repo_inputs.rs
// writes them, with our outputs). Every id is checked against ours before it
// is timed: same bytes, same CIDs, same roots, same counts. Prints the ids it
// wrote as a JSON list on stdout; progress on stderr; exit 1 on any failure.
'use strict'

const fs = require('node:fs')
const path = require('node:path')
const m = require('../common/measure.js')

const repo = require('@atproto/repo')
const cbor = require('@atproto/lex-cbor')
const lexData = require('@atproto/lex-data')
const crypto = require('@atproto/crypto')

const PEER = 'atproto-repo-js'
const HERE = __dirname

async function main() {
  const args = m.parseArgs(process.argv)
  const inputs = JSON.parse(fs.readFileSync(path.join(args.inputs, 'inputs.json'), 'utf8'))
  const read = (name) => new Uint8Array(fs.readFileSync(path.join(args.inputs, name)))
  const versions = Object.fromEntries(
    ['@atproto/repo', '@atproto/crypto', '@atproto/lex-cbor', '@atproto/lex-data'].map((p) => [p, m.packageVersion(HERE, p)]),
  )
  const wanted = (group) => !args.groups || args.groups.has(group)
  const written = []
  const emit = (id, measured, throughput, timing, check) =>
    written.push(m.write(args.out, m.result({ id, peer: PEER, versions, measured, throughput, timing, check })))

  if (wanted('repo.cbor_encode') || wanted('repo.cbor_decode')) {
    for (const { tier, file } of inputs.cbor) {
      const bytes = read(file)
      const value = cbor.decode(bytes)
      m.check(m.bytesEqual(cbor.encode(value), bytes), `cbor ${tier}: decode then encode differs from our bytes`)
      const throughput = { kind: 'bytes', per_iteration: bytes.length }
      if (wanted('repo.cbor_encode')) {
        const measured = await m.batched(() => cbor.encode(value), false, args.budget)
        emit(`repo.cbor_encode/${PEER}/${tier}`, measured, throughput, 'batched', 'encoded bytes equal ours')
      }
      if (wanted('repo.cbor_decode')) {
        const measured = await m.batched(() => cbor.decode(bytes), false, args.budget)
        emit(`repo.cbor_decode/${PEER}/${tier}`, measured, throughput, 'batched', 're-encoding the decoded value gives our bytes')
      }
    }
  }

  if (wanted('repo.cid')) {
    for (const { tier, file, cid } of inputs.cid) {
      const bytes = read(file)
      m.check((await lexData.cidForCbor(bytes)).toString() === cid, `cid ${tier}: differs from ours`)
      const measured = await m.batched(() => lexData.cidForCbor(bytes), true, args.budget)
      emit(`repo.cid/${PEER}/${tier}`, measured, { kind: 'bytes', per_iteration: bytes.length }, 'batched', 'CID equals ours')
    }
  }

  if (wanted('repo.mst_add')) {
    const pool = inputs.mst_pool
    const leaf = lexData.parseCid(inputs.mst_leaf)
    for (const { tier, file, root, expected } of inputs.mst_add) {
      const car = await repo.readCarWithRoot(read(file))
      m.check(car.root.toString() === root, `mst_add ${tier}: CAR root differs`)
      const storage = new repo.MemoryBlockstore(car.blocks)
      const base = lexData.parseCid(root)
      // The unit: open at the root, add one key, compute the new root,
      // collect the new node blocks.
      const add = async (key) => {
        const tree = await repo.MST.load(storage, base).add(key, leaf)
        const { root: newRoot, blocks } = await tree.getUnstoredBlocks()
        return { newRoot, blocks }
      }
      for (const { key, root: want } of expected) {
        const { newRoot } = await add(key)
        m.check(newRoot.toString() === want, `mst_add ${tier}: adding ${key} gives ${newRoot}, ours ${want}`)
      }
      const measured = await m.batched((i) => add(pool[i % pool.length]), true, args.budget)
      emit(`repo.mst_add/${PEER}/${tier}`, measured, { kind: 'elements', per_iteration: 1 }, 'batched',
        `${expected.length} adds reach our roots`)
    }
  }

  if (wanted('repo.mst_diff')) {
    for (const { tier, file, old_root: oldRoot, new_root: newRoot, want } of inputs.mst_diff) {
      const car = await repo.readCarWithRoot(read(file))
      m.check(car.root.toString() === newRoot, `mst_diff ${tier}: CAR root differs`)
      const storage = new repo.MemoryBlockstore(car.blocks)
      const [prev, curr] = [oldRoot, newRoot].map((c) => lexData.parseCid(c))
      // The unit: open both trees at their roots, list what changed.
      const diff = () => repo.DataDiff.of(repo.MST.load(storage, curr), repo.MST.load(storage, prev))
      const d = await diff()
      const got = [
        ...d.addList().map((a) => [a.key, null, a.cid.toString()]),
        ...d.updateList().map((u) => [u.key, u.prev.toString(), u.cid.toString()]),
        ...d.deleteList().map((x) => [x.key, x.cid.toString(), null]),
      ].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      m.check(JSON.stringify(got) === JSON.stringify(want), `mst_diff ${tier}: the diff differs from ours`)
      const measured = await m.batched(diff, true, args.budget)
      emit(`repo.mst_diff/${PEER}/${tier}`, measured, { kind: 'elements', per_iteration: 1 }, 'batched',
        `the ${want.length} created, updated and deleted keys and their CIDs equal the edit lists`)
    }
  }

  if (wanted('repo.commit_sign') || wanted('repo.commit_verify')) {
    const { file, secret_hex: secretHex, did_key: didKey } = inputs.commit
    const signedBytes = read(file)
    const keypair = await crypto.Secp256k1Keypair.import(Uint8Array.from(Buffer.from(secretHex, 'hex')))
    m.check(keypair.did() === didKey, 'commit: the secret gives another did:key')
    const { sig, ...unsigned } = cbor.decode(signedBytes)
    const sign = async () => cbor.encode(await repo.signCommit(unsigned, keypair))
    m.check(m.bytesEqual(await sign(), signedBytes), 'commit_sign: signed block differs from ours (RFC 6979, low-S)')
    const verify = async () => repo.verifyCommitSig(cbor.decode(signedBytes), didKey)
    m.check((await verify()) === true, 'commit_verify: our signed commit does not verify')
    const one = { kind: 'elements', per_iteration: 1 }
    if (wanted('repo.commit_sign')) {
      emit(`repo.commit_sign/${PEER}`, await m.batched(sign, true, args.budget), one, 'batched', 'signed block equals ours')
    }
    if (wanted('repo.commit_verify')) {
      emit(`repo.commit_verify/${PEER}`, await m.batched(async () => {
        if (!(await verify())) throw new Error('verification failed')
      }, true, args.budget), one, 'batched', 'our signed commit verifies')
    }
  }

  if (wanted('repo.car_read')) {
    for (const { tier, file, records, root } of inputs.car_read) {
      const bytes = read(file)
      // The unit: read with every block's hash checked, load into a block
      // store, walk the MST to list every record.
      const load = async () => {
        const car = await repo.readCarWithRoot(bytes)
        const storage = new repo.MemoryBlockstore(car.blocks)
        const commit = cbor.decode(car.blocks.get(car.root))
        const leaves = await repo.MST.load(storage, commit.data).leaves()
        return { root: car.root, count: leaves.length }
      }
      const got = await load()
      m.check(got.root.toString() === root && got.count === records, `car_read ${tier}: ${got.count} records, ours ${records}`)
      const measured = await m.batched(load, true, args.budget)
      emit(`repo.car_read/${PEER}/${tier}`, measured, { kind: 'elements', per_iteration: records }, 'batched',
        'record count and root equal ours; readCarWithRoot checks every block hash')
    }
  }
  process.stdout.write(JSON.stringify(written) + '\n')
}

main().catch((err) => {
  process.stderr.write(`atbench: peers: ${PEER}: ${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
