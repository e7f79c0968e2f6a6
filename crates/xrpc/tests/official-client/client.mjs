// The official atproto TypeScript client, unchanged, against atpds.
//
// Run by crates/xrpc/tests/official_client.rs with PDS_URL (a fresh atpds)
// and PLC_URL (a local @did-plc/server the atpds registered its accounts
// with). Every check is counted; a failed one is printed with what came
// back. The last line is the summary the Rust test reads:
//   official-client: <passed> passed, <failed> failed
// and the exit code is 0 only when nothing failed.
//
// What it does, in order: a live Firehose (@atproto/sync, MemoryRunner
// from cursor 0) subscribed before anything is written; two accounts
// (com.atproto.server.createAccount), their DIDs resolved at the PLC
// directory; login with AtpAgent, getSession, refreshSession, a wrong
// password; create/put/delete/applyWrites on both accounts, each commit
// noted; the refusals (A writing to B: 403 and nothing written; no token:
// 401); every record read and listed back; a blob uploaded, referenced
// and fetched; getRepo verified with @atproto/repo's verifyRepoCar against
// the signing key of the DID document (and refused with the other
// account's key); then every #commit of those writes checked on the live
// Firehose and on a second one replaying from cursor 0: per account, in
// order, nothing missing, nothing extra, every op with its path and CID.
// Between the two: getServiceAuth checked with @atproto/xrpc-server's
// verifyJwt, app passwords (made, listed, a login, its restricted scope,
// revoked), checkAccountStatus and sync.getBlocks.

import { AtpAgent } from '@atproto/api'
import { XRPCError } from '@atproto/xrpc'
import { verifyRepoCar, readCar } from '@atproto/repo'
// A dependency of @atproto/sync (in the lock file): what a receiving
// service runs on a service-auth token.
import { verifyJwt } from '@atproto/xrpc-server'
import { Firehose, MemoryRunner } from '@atproto/sync'
import { IdResolver } from '@atproto/identity'

const PDS_URL = process.env.PDS_URL
const PLC_URL = process.env.PLC_URL
if (!PDS_URL || !PLC_URL) {
  console.error('client.mjs: set PDS_URL and PLC_URL')
  process.exit(2)
}
const WS_URL = PDS_URL.replace(/^http/, 'ws')
const FIREHOSE_WAIT_MS = Number(process.env.FIREHOSE_WAIT_MS ?? 20000)

let passed = 0
let failed = 0
function check(name, ok, detail) {
  if (ok) {
    passed += 1
  } else {
    failed += 1
    console.log(`FAIL ${name}${detail === undefined ? '' : `: ${detail}`}`)
  }
  return ok
}
const show = (v, replacer) => {
  try {
    return JSON.stringify(v, replacer)
  } catch {
    return String(v)
  }
}

/** A CID link as a string, whether decoded (CID) or plain JSON ({$link}). */
const linkOf = (ref) => (ref && typeof ref === 'object' && typeof ref.$link === 'string' ? ref.$link : ref?.toString())

/** JSON with object keys sorted, so two encodings of one value compare equal. */
const canon = (v) =>
  show(v, (_, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]]))
      : x,
  )

/** Runs `fn`, expecting an XRPC error of `status` (and `name` when given). */
async function refused(name, status, errorName, fn) {
  try {
    const res = await fn()
    check(name, false, `expected ${status} ${errorName ?? ''}, got success ${show(res?.data)}`)
  } catch (err) {
    if (!(err instanceof XRPCError)) {
      check(name, false, `expected an XRPCError, got ${err}`)
      return
    }
    const okStatus = err.status === status
    const okName = errorName === undefined || err.error === errorName
    check(name, okStatus && okName, `expected ${status} ${errorName ?? ''}, got ${err.status} ${err.error}: ${err.message}`)
  }
}

/** Runs `fn`; a thrown error fails check `name` and returns undefined. */
async function attempt(name, fn) {
  try {
    const value = await fn()
    check(name, true)
    return value
  } catch (err) {
    const detail = err instanceof XRPCError ? `${err.status} ${err.error}: ${err.message}` : String(err?.stack ?? err)
    check(name, false, detail)
    return undefined
  }
}

// ---------------------------------------------------------------- firehose

const idResolver = new IdResolver({ plcUrl: PLC_URL })

/** A Firehose from cursor 0 that records every commit op it verified. */
function subscribe(label) {
  const seen = []
  const errors = []
  const runner = new MemoryRunner({ startCursor: 0 })
  const firehose = new Firehose({
    idResolver,
    service: WS_URL,
    runner,
    excludeIdentity: true,
    excludeAccount: true,
    excludeSync: true,
    subscriptionReconnectDelay: 500,
    handleEvent: async (evt) => {
      if (evt.event === 'create' || evt.event === 'update' || evt.event === 'delete') {
        seen.push({
          seq: evt.seq,
          did: evt.did,
          commit: evt.commit.toString(),
          rev: evt.rev,
          action: evt.event,
          path: `${evt.collection}/${evt.rkey}`,
          cid: evt.event === 'delete' ? null : evt.cid.toString(),
        })
      }
    },
    onError: (err) => {
      errors.push(`${err?.name ?? 'Error'}: ${err?.message ?? err}${err?.cause ? ` (${err.cause})` : ''}`)
    },
  })
  firehose.start()
  return { label, seen, errors, firehose, runner }
}

/** The commits an account's firehose events make, in the order received. */
function commitsOf(events, did) {
  const commits = []
  let lastSeq = -Infinity
  let ordered = true
  for (const e of events.filter((e) => e.did === did)) {
    const last = commits[commits.length - 1]
    if (last && last.commit === e.commit) {
      last.ops.push({ action: e.action, path: e.path, cid: e.cid })
      continue
    }
    if (e.seq <= lastSeq) ordered = false
    lastSeq = e.seq
    commits.push({ commit: e.commit, seq: e.seq, ops: [{ action: e.action, path: e.path, cid: e.cid }] })
  }
  return { commits, ordered }
}

const opKey = (o) => `${o.action} ${o.path} ${o.cid}`
const sameOps = (a, b) => show(a.map(opKey).sort()) === show(b.map(opKey).sort())

/** Waits until `sub` holds every expected commit of every account, or the deadline. */
async function settle(sub, expected) {
  const want = [...expected.values()].reduce((n, list) => n + list.reduce((k, c) => k + c.ops.length, 0), 0)
  const deadline = Date.now() + FIREHOSE_WAIT_MS
  while (Date.now() < deadline && sub.seen.length < want) {
    await new Promise((r) => setTimeout(r, 50))
  }
  // A little longer, so an extra (unexpected) event has time to show.
  await new Promise((r) => setTimeout(r, 300))
  await sub.firehose.destroy()
  await sub.runner.processAll?.()
}

function checkFirehose(sub, expected) {
  check(`${sub.label}: no firehose errors`, sub.errors.length === 0, sub.errors.slice(0, 5).join(' | '))
  for (const [did, want] of expected) {
    const { commits, ordered } = commitsOf(sub.seen, did)
    check(`${sub.label}: ${did} seqs increase`, ordered)
    check(
      `${sub.label}: ${did} every commit, in order`,
      show(commits.map((c) => c.commit)) === show(want.map((c) => c.commit)),
      `got ${commits.length} commits ${show(commits.map((c) => c.commit))}, expected ${want.length} ${show(want.map((c) => c.commit))}`,
    )
    for (let i = 0; i < Math.min(commits.length, want.length); i++) {
      if (commits[i].commit !== want[i].commit) continue
      check(
        `${sub.label}: ${did} commit ${i} ops`,
        sameOps(commits[i].ops, want[i].ops),
        `got ${show(commits[i].ops)}, expected ${show(want[i].ops)}`,
      )
    }
  }
  const foreign = sub.seen.filter((e) => !expected.has(e.did))
  check(`${sub.label}: no commits of unknown accounts`, foreign.length === 0, show(foreign.slice(0, 3)))
}

// ---------------------------------------------------------------- writes

/** The writes made, per DID: [{commit, ops: [{action, path, cid}]}]. */
const expected = new Map()
/** The live records, per DID: path -> {cid, value}. */
const live = new Map()

async function noteCommit(agent, did, responseCommit, ops, what) {
  const latest = await agent.com.atproto.sync.getLatestCommit({ did })
  if (responseCommit) {
    check(`${what}: response commit is the latest`, responseCommit.cid === latest.data.cid, `${show(responseCommit)} vs ${show(latest.data)}`)
  }
  expected.get(did).push({ commit: latest.data.cid, ops })
}

function post(text, extra = {}) {
  return { $type: 'app.bsky.feed.post', text, createdAt: new Date().toISOString(), ...extra }
}

async function create(agent, did, collection, record, what) {
  const res = await attempt(`${what}: createRecord`, () =>
    agent.com.atproto.repo.createRecord({ repo: did, collection, record }),
  )
  if (!res) return undefined
  const rkey = res.data.uri.split('/').pop()
  const path = `${collection}/${rkey}`
  check(`${what}: uri names the repo`, res.data.uri === `at://${did}/${path}`, res.data.uri)
  live.get(did).set(path, { cid: res.data.cid, value: record })
  await noteCommit(agent, did, res.data.commit, [{ action: 'create', path, cid: res.data.cid }], what)
  return { uri: res.data.uri, cid: res.data.cid, rkey, path }
}

async function main() {
  const anon = new AtpAgent({ service: PDS_URL })
  const described = await attempt('describeServer', () => anon.com.atproto.server.describeServer())
  const domain = described?.data.availableUserDomains?.[0] ?? '.test'
  check('describeServer: a user domain', typeof domain === 'string' && domain.startsWith('.'), domain)

  const liveSub = subscribe('live firehose')

  // Two accounts.
  const password = 'correct horse battery staple'
  const accounts = []
  for (const name of ['alice', 'bob']) {
    const handle = `${name}${domain}`
    const res = await attempt(`createAccount ${handle}`, () =>
      anon.com.atproto.server.createAccount({ handle, password, email: `${name}@example.com` }),
    )
    if (!res) throw new Error(`createAccount ${handle} failed: nothing else can run`)
    check(`createAccount ${handle}: did:plc`, /^did:plc:[a-z2-7]{24}$/.test(res.data.did), res.data.did)
    check(`createAccount ${handle}: handle`, res.data.handle === handle, res.data.handle)
    accounts.push({ handle, did: res.data.did })
    expected.set(res.data.did, [])
    live.set(res.data.did, new Map())
  }
  const [A, B] = accounts
  check('two distinct DIDs', A.did !== B.did)
  await refused('createAccount: handle taken', 400, 'HandleNotAvailable', () =>
    anon.com.atproto.server.createAccount({ handle: A.handle, password, email: 'x@example.com' }),
  )

  // Identity at the PLC directory.
  for (const acc of accounts) {
    const doc = await attempt(`PLC resolves ${acc.did}`, () => idResolver.did.resolve(acc.did, true))
    check(`${acc.did}: document id`, doc?.id === acc.did, show(doc))
    check(`${acc.did}: handle in alsoKnownAs`, (doc?.alsoKnownAs ?? []).includes(`at://${acc.handle}`), show(doc?.alsoKnownAs))
    acc.signingKey = await attempt(`${acc.did}: atproto signing key`, () => idResolver.did.resolveAtprotoKey(acc.did, true))
    check(`${acc.did}: signing key is a did:key`, typeof acc.signingKey === 'string' && acc.signingKey.startsWith('did:key:'), acc.signingKey)
    const resolved = await attempt(`resolveHandle ${acc.handle}`, () => anon.com.atproto.identity.resolveHandle({ handle: acc.handle }))
    check(`resolveHandle ${acc.handle}: did`, resolved?.data.did === acc.did, show(resolved?.data))
  }

  // Login with AtpAgent.
  for (const acc of accounts) {
    acc.agent = new AtpAgent({ service: PDS_URL })
    const res = await attempt(`login ${acc.handle}`, () => acc.agent.login({ identifier: acc.handle, password }))
    check(`login ${acc.handle}: did`, res?.data.did === acc.did, show(res?.data?.did))
    const s = await attempt(`getSession ${acc.handle}`, () => acc.agent.com.atproto.server.getSession())
    check(`getSession ${acc.handle}: did and handle`, s?.data.did === acc.did && s?.data.handle === acc.handle, show(s?.data))
  }
  await refused('login with a wrong password', 401, 'AuthenticationRequired', () =>
    new AtpAgent({ service: PDS_URL }).login({ identifier: A.handle, password: 'not the password' }),
  )
  // Refresh rotates the refresh token (an access token minted within the
  // same second as the last one may equal it: it carries no nonce).
  const before = A.agent.session?.refreshJwt
  await attempt('refreshSession', () => A.agent.sessionManager.refreshSession())
  check('refreshSession: a new refresh token', A.agent.session?.refreshJwt && A.agent.session.refreshJwt !== before)
  check('refreshSession: an access token', typeof A.agent.session?.accessJwt === 'string')
  const again = await attempt('getSession after refresh', () => A.agent.com.atproto.server.getSession())
  check('getSession after refresh: did', again?.data.did === A.did)

  // Preferences (app.bsky.actor.getPreferences / putPreferences), per account.
  const none = await attempt('getPreferences before any put', () => A.agent.app.bsky.actor.getPreferences())
  check('getPreferences: an empty array at first', Array.isArray(none?.data.preferences) && none.data.preferences.length === 0, show(none?.data))
  const prefs = [
    { $type: 'app.bsky.actor.defs#adultContentPref', enabled: false },
    { $type: 'app.bsky.actor.defs#savedFeedsPrefV2', items: [{ id: '3l6ovcmm2vd2j', type: 'timeline', value: 'following', pinned: true }] },
  ]
  await attempt('putPreferences', () => A.agent.app.bsky.actor.putPreferences({ preferences: prefs }))
  const back = await attempt('getPreferences after put', () => A.agent.app.bsky.actor.getPreferences())
  check('getPreferences: the array put', canon(back?.data.preferences) === canon(prefs), show(back?.data))
  const parsed = await attempt('AtpAgent.getPreferences', () => A.agent.getPreferences())
  check('AtpAgent.getPreferences: adult content off, following pinned',
    parsed?.moderationPrefs?.adultContentEnabled === false && (parsed?.savedFeeds ?? []).some((f) => f.value === 'following' && f.pinned), show(parsed))
  const theirs = await attempt('getPreferences of B', () => B.agent.app.bsky.actor.getPreferences())
  check("B does not see A's preferences", theirs?.data.preferences?.length === 0, show(theirs?.data))
  await refused('putPreferences outside app.bsky', 400, 'InvalidRequest', () =>
    A.agent.app.bsky.actor.putPreferences({ preferences: [{ $type: 'com.example.pref', on: true }] }),
  )
  await refused('getPreferences without a token', 401, undefined, () =>
    new AtpAgent({ service: PDS_URL }).app.bsky.actor.getPreferences(),
  )

  // Writes: create, put (create then update), delete, applyWrites.
  const a = A.agent
  const p1 = await create(a, A.did, 'app.bsky.feed.post', post('first post'), 'A post 1')
  const p2 = await create(a, A.did, 'app.bsky.feed.post', post('second post'), 'A post 2')
  const p3 = await create(a, A.did, 'app.bsky.feed.post', post('third post, deleted later'), 'A post 3')
  for (const [i, text] of ['me', 'me, renamed'].entries()) {
    const record = { $type: 'app.bsky.actor.profile', displayName: text }
    const res = await attempt(`A putRecord profile ${i}`, () =>
      a.com.atproto.repo.putRecord({ repo: A.did, collection: 'app.bsky.actor.profile', rkey: 'self', record }),
    )
    if (res) {
      const path = 'app.bsky.actor.profile/self'
      live.get(A.did).set(path, { cid: res.data.cid, value: record })
      await noteCommit(a, A.did, res.data.commit, [{ action: i === 0 ? 'create' : 'update', path, cid: res.data.cid }], `A putRecord ${i}`)
    }
  }
  if (p3) {
    const res = await attempt('A deleteRecord post 3', () =>
      a.com.atproto.repo.deleteRecord({ repo: A.did, collection: 'app.bsky.feed.post', rkey: p3.rkey }),
    )
    if (res) {
      live.get(A.did).delete(p3.path)
      await noteCommit(a, A.did, res.data.commit, [{ action: 'delete', path: p3.path, cid: null }], 'A deleteRecord')
    }
  }
  if (p1 && p2) {
    const created = post('made by applyWrites')
    const updated = post('second post, edited by applyWrites')
    const like = { $type: 'app.bsky.feed.like', subject: { uri: p1.uri, cid: p1.cid }, createdAt: new Date().toISOString() }
    const res = await attempt('A applyWrites', () =>
      a.com.atproto.repo.applyWrites({
        repo: A.did,
        writes: [
          { $type: 'com.atproto.repo.applyWrites#create', collection: 'app.bsky.feed.post', rkey: '3kapplywrite2', value: created },
          { $type: 'com.atproto.repo.applyWrites#create', collection: 'app.bsky.feed.like', value: like },
          { $type: 'com.atproto.repo.applyWrites#update', collection: 'app.bsky.feed.post', rkey: p2.rkey, value: updated },
          { $type: 'com.atproto.repo.applyWrites#delete', collection: 'app.bsky.feed.post', rkey: p1.rkey },
        ],
      }),
    )
    if (res) {
      const results = res.data.results ?? []
      check('applyWrites: four results', results.length === 4, show(results))
      const [rc, rl, ru] = results
      const likePath = rl?.uri ? `app.bsky.feed.like/${rl.uri.split('/').pop()}` : undefined
      const ops = [
        { action: 'create', path: 'app.bsky.feed.post/3kapplywrite2', cid: rc?.cid },
        { action: 'create', path: likePath, cid: rl?.cid },
        { action: 'update', path: p2.path, cid: ru?.cid },
        { action: 'delete', path: p1.path, cid: null },
      ]
      const records = live.get(A.did)
      records.set(ops[0].path, { cid: rc?.cid, value: created })
      records.set(ops[1].path, { cid: rl?.cid, value: like })
      records.set(ops[2].path, { cid: ru?.cid, value: updated })
      records.delete(p1.path)
      await noteCommit(a, A.did, res.data.commit, ops, 'A applyWrites')
    }
  }
  await refused('applyWrites: stale swapCommit', 400, 'InvalidSwap', () =>
    a.com.atproto.repo.applyWrites({
      repo: A.did,
      swapCommit: expected.get(A.did)[0]?.commit,
      writes: [{ $type: 'com.atproto.repo.applyWrites#create', collection: 'app.bsky.feed.post', value: post('never') }],
    }),
  )
  const b = B.agent
  await create(b, B.did, 'app.bsky.feed.post', post('bob was here'), 'B post 1')
  if (p1) {
    // The subject is gone by now; a like is a record like any other.
    await create(b, B.did, 'app.bsky.feed.like', { $type: 'app.bsky.feed.like', subject: { uri: p1.uri, cid: p1.cid }, createdAt: new Date().toISOString() }, 'B like')
  }

  // Blob: upload, reference, fetch back.
  const bytes = new Uint8Array(3000).map((_, i) => (i * 31 + 7) & 0xff)
  const uploaded = await attempt('uploadBlob', () => a.uploadBlob(bytes, { encoding: 'image/png' }))
  if (uploaded) {
    const blob = uploaded.data.blob
    check('uploadBlob: size and mime', blob.size === bytes.length && blob.mimeType === 'image/png', show(blob))
    const cid = linkOf(blob.ref)
    const withImage = post('with an image', { embed: { $type: 'app.bsky.embed.images', images: [{ alt: 'noise', image: blob }] } })
    const ref = await create(a, A.did, 'app.bsky.feed.post', withImage, 'A post with blob')
    const got = await attempt('sync.getBlob', () => anon.com.atproto.sync.getBlob({ did: A.did, cid }))
    check('sync.getBlob: same bytes', got && Buffer.compare(Buffer.from(got.data), Buffer.from(bytes)) === 0)
    const listed = await attempt('sync.listBlobs', () => anon.com.atproto.sync.listBlobs({ did: A.did }))
    check('sync.listBlobs: has the blob', listed?.data.cids.includes(cid), show(listed?.data))
    const missing = await attempt('listMissingBlobs', () => a.com.atproto.repo.listMissingBlobs({}))
    check('listMissingBlobs: none missing', missing?.data.blobs.length === 0, show(missing?.data))
    if (ref) {
      const rec = await attempt('getRecord of the blob post', () =>
        anon.com.atproto.repo.getRecord({ repo: A.did, collection: 'app.bsky.feed.post', rkey: ref.rkey }),
      )
      const image = rec?.data.value?.embed?.images?.[0]?.image
      check('the record references the blob', linkOf(image?.ref) === cid, show(image))
    }
  }

  // Refusals: A writing to B's repo; writing without a token.
  const headB = (await anon.com.atproto.sync.getLatestCommit({ did: B.did })).data
  const countB = live.get(B.did).size
  await refused('A createRecord in B: 403', 403, undefined, () =>
    a.com.atproto.repo.createRecord({ repo: B.did, collection: 'app.bsky.feed.post', record: post('not mine') }),
  )
  await refused('A putRecord in B: 403', 403, undefined, () =>
    a.com.atproto.repo.putRecord({ repo: B.did, collection: 'app.bsky.actor.profile', rkey: 'self', record: { $type: 'app.bsky.actor.profile', displayName: 'hijacked' } }),
  )
  const bPaths = [...live.get(B.did).keys()]
  if (bPaths.length > 0) {
    const [collection, rkey] = bPaths[0].split('/')
    await refused('A deleteRecord in B: 403', 403, undefined, () =>
      a.com.atproto.repo.deleteRecord({ repo: B.did, collection, rkey }),
    )
  }
  await refused('A applyWrites in B: 403', 403, undefined, () =>
    a.com.atproto.repo.applyWrites({ repo: B.did, writes: [{ $type: 'com.atproto.repo.applyWrites#create', collection: 'app.bsky.feed.post', value: post('not mine') }] }),
  )
  await refused('createRecord without a token: 401', 401, 'AuthRequired', () =>
    anon.com.atproto.repo.createRecord({ repo: A.did, collection: 'app.bsky.feed.post', record: post('anonymous') }),
  )
  const headB2 = (await anon.com.atproto.sync.getLatestCommit({ did: B.did })).data
  check('B unchanged after the refusals: same head', headB2.cid === headB.cid && headB2.rev === headB.rev, `${show(headB)} -> ${show(headB2)}`)
  const listedB = await anon.com.atproto.repo.listRecords({ repo: B.did, collection: 'app.bsky.feed.post' })
  check('B unchanged after the refusals: its posts', listedB.data.records.length === [...live.get(B.did).keys()].filter((p) => p.startsWith('app.bsky.feed.post/')).length && live.get(B.did).size === countB, show(listedB.data.records.map((r) => r.uri)))

  // Read everything back.
  for (const acc of accounts) {
    const records = live.get(acc.did)
    for (const [path, want] of records) {
      const [collection, rkey] = path.split('/')
      const got = await attempt(`getRecord ${acc.handle} ${path}`, () => anon.com.atproto.repo.getRecord({ repo: acc.did, collection, rkey }))
      check(`getRecord ${path}: cid`, got?.data.cid === want.cid, `${got?.data.cid} vs ${want.cid}`)
      if (!want.value.embed) {
        check(`getRecord ${path}: value`, canon(got?.data.value) === canon(want.value), `${show(got?.data.value)} vs ${show(want.value)}`)
      } else {
        check(`getRecord ${path}: text`, got?.data.value?.text === want.value.text, show(got?.data.value))
      }
    }
    const collections = [...new Set([...records.keys()].map((p) => p.split('/')[0]))].sort()
    const described = await attempt(`describeRepo ${acc.handle}`, () => anon.com.atproto.repo.describeRepo({ repo: acc.did }))
    check(`describeRepo ${acc.handle}: did, handle`, described?.data.did === acc.did && described?.data.handle === acc.handle, show(described?.data))
    check(`describeRepo ${acc.handle}: collections`, show([...(described?.data.collections ?? [])].sort()) === show(collections), show(described?.data.collections))
    for (const collection of collections) {
      const want = [...records.keys()].filter((p) => p.startsWith(`${collection}/`)).sort()
      const all = await attempt(`listRecords ${collection}`, () => anon.com.atproto.repo.listRecords({ repo: acc.did, collection, limit: 100 }))
      const got = (all?.data.records ?? []).map((r) => r.uri.split('/').slice(-2).join('/'))
      check(`listRecords ${acc.handle} ${collection}: every record`, show([...got].sort()) === show(want), `${show(got)} vs ${show(want)}`)
      // Paged one by one with the cursor, then reversed: the same set.
      const paged = []
      let cursor
      for (let i = 0; i < 20; i++) {
        const page = await anon.com.atproto.repo.listRecords({ repo: acc.did, collection, limit: 1, cursor })
        paged.push(...page.data.records.map((r) => r.uri.split('/').slice(-2).join('/')))
        cursor = page.data.cursor
        if (!cursor || page.data.records.length === 0) break
      }
      check(`listRecords ${collection}: paged with limit 1`, show(paged) === show(got), `${show(paged)} vs ${show(got)}`)
      const rev = await anon.com.atproto.repo.listRecords({ repo: acc.did, collection, limit: 100, reverse: true })
      const revPaths = rev.data.records.map((r) => r.uri.split('/').slice(-2).join('/'))
      check(`listRecords ${collection}: reverse`, show(revPaths) === show([...got].reverse()), `${show(revPaths)} vs ${show(got)}`)
    }
    if (acc === A && p1) {
      await refused('getRecord of a deleted record', 400, 'RecordNotFound', () =>
        anon.com.atproto.repo.getRecord({ repo: A.did, collection: 'app.bsky.feed.post', rkey: p1.rkey }),
      )
    }
  }

  // getRepo, verified with @atproto/repo against the DID document's key.
  for (const acc of accounts) {
    const car = await attempt(`getRepo ${acc.handle}`, () => anon.com.atproto.sync.getRepo({ did: acc.did }))
    if (!car || !acc.signingKey) continue
    const verified = await attempt(`verifyRepoCar ${acc.handle}`, () => verifyRepoCar(car.data, acc.did, acc.signingKey))
    if (verified) {
      const creates = new Map(verified.creates.map((c) => [`${c.collection}/${c.rkey}`, c.cid.toString()]))
      const want = new Map([...live.get(acc.did)].map(([p, r]) => [p, r.cid]))
      check(`verifyRepoCar ${acc.handle}: records = what was written`, show([...creates].sort()) === show([...want].sort()), `${show([...creates])} vs ${show([...want])}`)
      const head = (await anon.com.atproto.sync.getLatestCommit({ did: acc.did })).data
      check(`verifyRepoCar ${acc.handle}: commit rev = getLatestCommit`, verified.commit.rev === head.rev, `${verified.commit.rev} vs ${head.rev}`)
    }
    const other = acc === A ? B : A
    let wrongKeyAccepted = true
    try {
      await verifyRepoCar(car.data, acc.did, other.signingKey)
    } catch {
      wrongKeyAccepted = false
    }
    check(`verifyRepoCar ${acc.handle}: refused with the other account's key`, !wrongKeyAccepted)
  }

  // Service auth: the token a service receiving it accepts
  // (@atproto/xrpc-server's verifyJwt, against the key of the DID document
  // the PLC directory serves), and the lexicon's expiry refusals.
  const lxm = 'app.bsky.feed.getTimeline'
  const gsa = await attempt('getServiceAuth', () => A.agent.com.atproto.server.getServiceAuth({ aud: B.did, lxm }))
  if (gsa) {
    const getKey = (iss, force) => idResolver.did.resolveAtprotoKey(iss, force)
    const payload = await attempt('getServiceAuth: verifyJwt accepts the token', () => verifyJwt(gsa.data.token, B.did, lxm, getKey))
    check('getServiceAuth: iss, aud, lxm', payload?.iss === A.did && payload?.aud === B.did && payload?.lxm === lxm, show(payload))
    let otherLxm = true
    try {
      await verifyJwt(gsa.data.token, B.did, 'app.bsky.feed.getAuthorFeed', getKey)
    } catch {
      otherLxm = false
    }
    check('getServiceAuth: verifyJwt refuses it for another method', !otherLxm)
  }
  const now = Math.floor(Date.now() / 1000)
  await refused('getServiceAuth: exp more than an hour ahead', 400, 'BadExpiration', () =>
    A.agent.com.atproto.server.getServiceAuth({ aud: B.did, lxm, exp: now + 7200 }),
  )
  await refused('getServiceAuth: a method-less token more than a minute ahead', 400, 'BadExpiration', () =>
    A.agent.com.atproto.server.getServiceAuth({ aud: B.did, exp: now + 600 }),
  )

  // App passwords: made, listed without the secret, a login with its
  // restricted scope, revoked (its session ends, it logs in no more).
  const apName = 'official client'
  const ap = await attempt('createAppPassword', () => A.agent.com.atproto.server.createAppPassword({ name: apName }))
  check('createAppPassword: xxxx-xxxx-xxxx-xxxx', /^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/.test(ap?.data.password ?? ''), ap?.data.password)
  const listedAp = await attempt('listAppPasswords', () => A.agent.com.atproto.server.listAppPasswords())
  check('listAppPasswords: the one made, without its secret',
    listedAp?.data.passwords.length === 1 && listedAp.data.passwords[0].name === apName && !show(listedAp.data).includes(ap?.data.password ?? '-'), show(listedAp?.data))
  const apAgent = new AtpAgent({ service: PDS_URL })
  if (ap) {
    await attempt('login with the app password', () => apAgent.login({ identifier: A.handle, password: ap.data.password }))
    const apSess = await attempt('getSession with the app password', () => apAgent.com.atproto.server.getSession())
    check('app-password session: the account', apSess?.data.did === A.did, show(apSess?.data))
    await refused('app-password session cannot create app passwords', 401, 'InvalidToken', () =>
      apAgent.com.atproto.server.createAppPassword({ name: 'nested' }),
    )
    await attempt('revokeAppPassword', () => A.agent.com.atproto.server.revokeAppPassword({ name: apName }))
    await refused('the revoked app password session ends', 401, 'AuthRequired', () => apAgent.com.atproto.server.getSession())
    await refused('the revoked app password logs in no more', 401, 'AuthenticationRequired', () =>
      new AtpAgent({ service: PDS_URL }).login({ identifier: A.handle, password: ap.data.password }),
    )
    const after = await attempt('listAppPasswords after the revocation', () => A.agent.com.atproto.server.listAppPasswords())
    check('listAppPasswords: none left', after?.data.passwords.length === 0, show(after?.data))
  }

  // checkAccountStatus and sync.getBlocks against the repository's head.
  const headA = (await anon.com.atproto.sync.getLatestCommit({ did: A.did })).data
  const status = await attempt('checkAccountStatus', () => A.agent.com.atproto.server.checkAccountStatus())
  check('checkAccountStatus: activated, at the head',
    status?.data.activated === true && status.data.repoCommit === headA.cid && status.data.repoRev === headA.rev, show(status?.data))
  check('checkAccountStatus: validDid (the PLC document names this PDS and the key)', status?.data.validDid === true, show(status?.data))
  check('checkAccountStatus: every record counted', status?.data.indexedRecords === live.get(A.did).size, `${status?.data.indexedRecords} vs ${live.get(A.did).size}`)
  const wantBlocks = [headA.cid, ...[...live.get(A.did).values()].slice(0, 3).map((r) => r.cid)]
  const blocks = await attempt('sync.getBlocks', () => anon.com.atproto.sync.getBlocks({ did: A.did, cids: wantBlocks }))
  if (blocks) {
    const car = await attempt('sync.getBlocks: a CAR whose blocks hash to their CIDs', () => readCar(blocks.data))
    const got = (car?.blocks.cids() ?? []).map((c) => c.toString())
    check('sync.getBlocks: the blocks asked for', show([...got].sort()) === show([...new Set(wantBlocks)].sort()), `${show(got)} vs ${show(wantBlocks)}`)
  }
  await refused('sync.getBlocks: a CID the repo does not hold', 400, 'BlockNotFound', () =>
    anon.com.atproto.sync.getBlocks({ did: A.did, cids: ['bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm'] }),
  )

  // The firehose: the live one, then a replay from cursor 0.
  await settle(liveSub, expected)
  checkFirehose(liveSub, expected)
  const replay = subscribe('replayed firehose')
  await settle(replay, expected)
  checkFirehose(replay, expected)
  const total = [...expected.values()].reduce((n, l) => n + l.length, 0)
  console.log(`official-client: ${total} commits written by 2 accounts, ${liveSub.seen.length} ops seen live, ${replay.seen.length} replayed`)
}

try {
  await main()
} catch (err) {
  check('the script ran to its end', false, String(err?.stack ?? err))
}
console.log(`official-client: ${passed} passed, ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
