// atbench peer probe: the official PDS's storage layer (@atproto/pds 0.4.217:
// its ActorStore, Sequencer and AccountManager on better-sqlite3), driven in
// process (no HTTP, no PLC) through the units of work of `--bench store`.
//
//   node probe.js --inputs DIR --out DIR [--mode full|quick|smoke] [--groups a,b]
//
// DIR holds inputs.json and records.json (benches/src/peers/store_inputs.rs).
// Set-up creates the accounts the way com.atproto.server.createAccount does
// (actor store, empty repo commit, account row with its scrypt password,
// identity/account/commit/sync events, repo root), minus the PLC operation,
// and writes the reader account's records through the PDS's own commit path
// (processWrites, 200 writes per commit), checking that every record CID it
// computes equals ours (same DAG-CBOR bytes). Then:
//
//   store.apply_commit  the createRecord handler's storage path: the account
//                       lookup, prepareCreate (lexicon validation, CBOR, CID),
//                       an actor-store transaction with the backlink check,
//                       processWrites and the sequencer's #commit event, then
//                       the account root update; callers on distinct accounts
//   store.current_cid   the actor store's read of the record's current CID
//   store.get_record    getRecord's path: DID lookup, actor-store read, the
//                       JSON body {uri, cid, value} serialised
//   store.list_records  listRecords' path, limit 50, newest first from a
//                       sampled cursor, the JSON body serialised
//
// The actor store opens the account's SQLite file per request (as the PDS
// does); "callers" are concurrent requests on node's one thread.
'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const m = require('../common/measure.js')

const dist = (p) => require(path.join('@atproto/pds/dist', p))
const { ActorStore } = dist('actor-store/actor-store')
const { Sequencer } = dist('sequencer')
const { Crawlers } = dist('crawlers')
const { BackgroundQueue } = dist('background')
const { AccountManager } = dist('account-manager/account-manager')
const { DiskBlobStore } = dist('disk-blobstore')
const { createSecretKeyObject } = dist('auth-verifier')
const prepare = dist('repo/prepare')
const crypto = require('@atproto/crypto')
const { AtUri } = require('@atproto/syntax')
const { IdResolver } = require('@atproto/identity')
const { jsonToLex, lexStringify } = require('@atproto/lex-json')

const PEER = 'official-pds'
const HERE = __dirname
const LIKE_LIMIT = 50

async function openPds(dir) {
  const backgroundQueue = new BackgroundQueue()
  const actorStore = new ActorStore(
    { directory: path.join(dir, 'actors'), cacheSize: 100, disableWalAutoCheckpoint: false },
    { blobstore: DiskBlobStore.creator(path.join(dir, 'blobs')), backgroundQueue },
  )
  const crawlers = new Crawlers(backgroundQueue, 'localhost', [])
  const sequencer = new Sequencer(path.join(dir, 'sequencer.sqlite'), crawlers)
  await sequencer.start()
  // The resolver is never asked anything: accounts are created without PLC.
  const idResolver = new IdResolver({ plcUrl: 'http://127.0.0.1:9' })
  const accountManager = new AccountManager(
    idResolver,
    createSecretKeyObject('atbench-peer-jwt-secret'),
    'did:web:localhost',
    ['.test'],
    { accountDbLoc: path.join(dir, 'account.sqlite'), disableWalAutoCheckpoint: false },
  )
  await accountManager.migrateOrThrow()
  return { actorStore, sequencer, accountManager, backgroundQueue }
}

// com.atproto.server.createAccount's steps, minus the PLC operation.
async function createAccount(pds, { did, secretHex }, index) {
  const signingKey = await crypto.Secp256k1Keypair.import(Uint8Array.from(Buffer.from(secretHex, 'hex')), { exportable: true })
  await pds.actorStore.create(did, signingKey)
  const commit = await pds.actorStore.transact(did, (txn) => txn.repo.createRepo([]))
  const handle = `bench${index}.test`
  await pds.accountManager.createAccount({
    did, handle, email: `${handle}@example.com`, password: `atbench-password-${index}`, repoCid: commit.cid, repoRev: commit.rev,
  })
  const { AccountStatus } = dist('account-manager/account-manager')
  const { syncEvtDataFromCommit } = dist('sequencer')
  await pds.sequencer.sequenceIdentityEvt(did, handle)
  await pds.sequencer.sequenceAccountEvt(did, AccountStatus.Active)
  await pds.sequencer.sequenceCommit(did, commit)
  await pds.sequencer.sequenceSyncEvt(did, syncEvtDataFromCommit(commit))
  await pds.accountManager.updateRepoRoot(did, commit.cid, commit.rev)
}

// The createRecord handler's storage path (api/com/atproto/repo/createRecord).
async function createRecord(pds, did, collection, record, rkey) {
  const account = await pds.accountManager.getAccount(did)
  if (!account) throw new Error(`no account ${did}`)
  const write = await prepare.prepareCreate({ did, collection, record, rkey, validate: undefined })
  const commit = await pds.actorStore.transact(did, async (txn) => {
    const conflicts = await txn.record.getBacklinkConflicts(write.uri, write.record)
    const deletions = conflicts.map((uri) => prepare.prepareDelete({ did: uri.did, collection: uri.collectionSafe, rkey: uri.rkeySafe }))
    const commit = await txn.repo.processWrites([...deletions, write], undefined)
    await pds.sequencer.sequenceCommit(did, commit)
    return commit
  })
  await pds.accountManager.updateRepoRoot(did, commit.cid, commit.rev)
  return { uri: write.uri.toString(), cid: write.cid.toString(), commit: commit.cid.toString() }
}

// applyWrites-style seeding: up to 200 creates per commit, the record CIDs checked.
async function seedRecords(pds, did, records) {
  for (let start = 0; start < records.length; start += 200) {
    const chunk = records.slice(start, start + 200)
    const writes = await Promise.all(chunk.map((r) =>
      prepare.prepareCreate({ did, collection: r.collection, rkey: r.rkey, record: jsonToLex(r.value), validate: undefined })))
    writes.forEach((w, k) => m.check(w.cid.toString() === chunk[k].cid,
      `record ${chunk[k].collection}/${chunk[k].rkey}: PDS CID ${w.cid}, ours ${chunk[k].cid}`))
    const commit = await pds.actorStore.transact(did, async (txn) => {
      const commit = await txn.repo.processWrites(writes, undefined)
      await pds.sequencer.sequenceCommit(did, commit)
      return commit
    })
    await pds.accountManager.updateRepoRoot(did, commit.cid, commit.rev)
  }
}

async function getRecordBody(pds, did, collection, rkey) {
  const repoDid = await pds.accountManager.getDidForActor(did)
  const uri = AtUri.make(repoDid, collection, rkey)
  const record = await pds.actorStore.read(repoDid, (store) => store.record.getRecord(uri, null))
  if (!record || record.takedownRef !== null) return null
  return { cid: record.cid, json: lexStringify({ uri: uri.toString(), cid: record.cid, value: record.value }) }
}

async function listRecordsBody(pds, did, collection, cursor) {
  const repoDid = await pds.accountManager.getDidForActor(did)
  const records = await pds.actorStore.read(repoDid, (store) =>
    store.record.listRecordsForCollection({ collection, limit: LIKE_LIMIT, reverse: false, cursor }))
  const last = records.at(-1)
  return { records, json: lexStringify({ records, cursor: last ? new AtUri(last.uri).rkey : undefined }) }
}

function sqliteSettings(dbFile) {
  const Database = require('better-sqlite3')
  const db = new Database(dbFile, { readonly: true })
  try {
    const one = (p) => db.pragma(p, { simple: true })
    return {
      journal_mode: one('journal_mode'), synchronous: one('synchronous'), page_size: one('page_size'),
      cache_size: one('cache_size'), wal_autocheckpoint: one('wal_autocheckpoint'), sqlite_version: db.prepare('select sqlite_version() v').get().v,
      opened: 'per request (ActorStore.read/transact open and close the account file)',
    }
  } finally {
    db.close()
  }
}

async function main() {
  const args = m.parseArgs(process.argv)
  const inputs = JSON.parse(fs.readFileSync(path.join(args.inputs, 'inputs.json'), 'utf8'))
  const reader = inputs.reader
  const records = JSON.parse(fs.readFileSync(path.join(args.inputs, reader.records_file), 'utf8'))
  const versions = Object.fromEntries(['@atproto/pds', '@atproto/repo', 'better-sqlite3'].map((p) => [p, m.packageVersion(HERE, p)]))
  const wanted = (group) => !args.groups || args.groups.has(group)
  const dir = fs.mkdtempSync(path.join(args.inputs, 'pds-'))
  const pds = await openPds(dir)
  const log = (msg) => process.stderr.write(`atbench: peers: ${PEER}: ${msg}\n`)
  const written = []
  let sqlite = null
  const emit = (id, measured, check) => written.push(m.write(args.out, m.result({
    id, peer: PEER, versions, measured, throughput: { kind: 'elements', per_iteration: 1 }, timing: 'per-op', check, extra: { sqlite },
  })))
  const callerCounts = [1, Math.min(10, inputs.writers.length)]
  try {
    const t0 = Date.now()
    for (const [i, w] of inputs.writers.entries()) await createAccount(pds, { did: w.did, secretHex: w.secret_hex }, i)
    await createAccount(pds, { did: reader.did, secretHex: reader.secret_hex }, inputs.writers.length)
    await seedRecords(pds, reader.did, records)
    const { dbLocation } = await pds.actorStore.getLocation(reader.did)
    sqlite = sqliteSettings(dbLocation)
    log(`set-up: ${inputs.writers.length + 1} accounts, ${records.length} records written through processWrites ` +
      `(every record CID equal to ours) in ${((Date.now() - t0) / 1000).toFixed(1)} s`)

    if (wanted('store.apply_commit')) {
      const bodies = inputs.writers.map((w) => w.bodies.map((b) => jsonToLex(b)))
      const done = inputs.writers.map(() => 0)
      let last = inputs.writers.map(() => null)
      for (const callers of callerCounts) {
        const measured = await m.perOp((c) => async (i) => {
          last[c] = await createRecord(pds, inputs.writers[c].did, 'app.bsky.feed.post', bodies[c][i % bodies[c].length], undefined)
          done[c]++
        }, callers, args.budget)
        // Read back: every answered write is in the account, the last one by its CID.
        for (let c = 0; c < callers; c++) {
          const did = inputs.writers[c].did
          const count = await pds.actorStore.read(did, (s) => s.record.recordCount())
          m.check(count === done[c], `apply_commit: ${did} holds ${count} records, ${done[c]} were answered`)
          const rkey = new AtUri(last[c].uri).rkey
          const got = await getRecordBody(pds, did, 'app.bsky.feed.post', rkey)
          m.check(got && got.cid === last[c].cid, `apply_commit: ${last[c].uri} does not read back`)
        }
        emit(`store.apply_commit/${PEER}/callers-${callers}`, measured, 'every answered write read back (record count per account, last record by CID)')
      }
    }

    const sampled = reader.sampled
    const cidOf = new Map(records.map((r) => [`${r.collection}/${r.rkey}`, r.cid]))
    if (wanted('store.current_cid')) {
      const currentCid = (collection, rkey) =>
        pds.actorStore.read(reader.did, (s) => s.record.getCurrentRecordCid(AtUri.make(reader.did, collection, rkey)))
      for (const [collection, rkey] of sampled) {
        const cid = await currentCid(collection, rkey)
        m.check(cid && cid.toString() === cidOf.get(`${collection}/${rkey}`), `current_cid ${collection}/${rkey}`)
      }
      for (const callers of callerCounts) {
        const measured = await m.perOp((c) => async (i) => {
          const [collection, rkey] = sampled[(c * 37 + i) % sampled.length]
          if (!(await currentCid(collection, rkey))) throw new Error('current_cid: record missing')
        }, callers, args.budget)
        emit(`store.current_cid/${PEER}/callers-${callers}`, measured, `all ${sampled.length} sampled keys give our CIDs`)
      }
    }

    if (wanted('store.get_record')) {
      for (const [collection, rkey] of sampled.slice(0, 64)) {
        const got = await getRecordBody(pds, reader.did, collection, rkey)
        m.check(got && got.cid === cidOf.get(`${collection}/${rkey}`) && JSON.parse(got.json).cid === got.cid, `get_record ${collection}/${rkey}`)
      }
      for (const callers of callerCounts) {
        const measured = await m.perOp((c) => async (i) => {
          const [collection, rkey] = sampled[(c * 37 + i) % sampled.length]
          if (!(await getRecordBody(pds, reader.did, collection, rkey))) throw new Error('get_record: record missing')
        }, callers, args.budget)
        emit(`store.get_record/${PEER}/callers-${callers}`, measured, '64 sampled records: CID and JSON body equal ours')
      }
    }

    if (wanted('store.list_records')) {
      for (const { cursor, rkeys } of reader.pages) {
        const page = await listRecordsBody(pds, reader.did, reader.list_collection, cursor)
        const got = page.records.map((r) => new AtUri(r.uri).rkey)
        m.check(JSON.stringify(got) === JSON.stringify(rkeys), `list_records below ${cursor}: page differs from ours`)
        m.check(page.records.every((r) => r.cid === cidOf.get(`${reader.list_collection}/${new AtUri(r.uri).rkey}`)), `list_records below ${cursor}: CIDs`)
      }
      const cursors = reader.cursors
      for (const callers of callerCounts) {
        const measured = await m.perOp((c) => async (i) => {
          const page = await listRecordsBody(pds, reader.did, reader.list_collection, cursors[(c * 13 + i) % cursors.length])
          if (page.records.length !== LIKE_LIMIT) throw new Error('list_records: short page')
        }, callers, args.budget)
        emit(`store.list_records/${PEER}.callers-${callers}/limit-${LIKE_LIMIT}`, measured, `${reader.pages.length} pages equal ours (rkeys, order, CIDs)`)
      }
    }
  } finally {
    await pds.sequencer.destroy()
    await pds.accountManager.db.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  process.stdout.write(JSON.stringify(written) + '\n')
}

main().catch((err) => {
  process.stderr.write(`atbench: peers: ${PEER}: ${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
