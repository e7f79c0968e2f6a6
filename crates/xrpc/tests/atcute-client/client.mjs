// A second client stack against atpds: @atcute/client with @atcute/car
// (and @atcute/repo, @atcute/cid, @atcute/crypto), unchanged, as a new user
// of that library would write it.
//
// Run by crates/xrpc/tests/atcute_client.rs with PDS_URL (a fresh atpds).
// Every check is counted; a failed one is printed with what came back. The
// last line is the summary the Rust test reads:
//   atcute-client: <passed> passed, <failed> failed
// and the exit code is 0 only when nothing failed.
//
// The session, in order: describeServer; createAccount of a new user;
// login (createSession) and a handler that carries the access token, as
// @atcute/client's README shows for a custom FetchHandler; getSession and
// refreshSession; a post with an image (uploadBlob with `Content-Type: */*`,
// the lexicon's input encoding, and a Blob with no type); records created,
// read, updated, listed (with a cursor), deleted; getRepo read with
// @atcute/car, every block's CID recomputed from its bytes, the records
// walked with @atcute/repo and verifyRecord checking the commit signature
// with the key of the DID document; sync getLatestCommit and getRecord (an
// inclusion proof verified the same way); app passwords (made, listed, a
// login, a refused privileged call, revoked); and the typed errors an
// @atcute user switches on (`response.data.error`). Outputs are checked
// against @atcute/atproto's lexicon schemas (`Client.call`) where it has one.

import { Client, ok, simpleFetchHandler, ClientResponseError, ClientValidationError } from '@atcute/client'
import {
  ComAtprotoServerDescribeServer,
  ComAtprotoServerCreateAccount,
  ComAtprotoServerCreateSession,
  ComAtprotoServerGetSession,
  ComAtprotoRepoCreateRecord,
  ComAtprotoRepoGetRecord,
  ComAtprotoRepoListRecords,
  ComAtprotoRepoPutRecord,
  ComAtprotoRepoDeleteRecord,
  ComAtprotoRepoDescribeRepo,
  ComAtprotoSyncGetLatestCommit,
  ComAtprotoServerCreateAppPassword,
  ComAtprotoServerListAppPasswords,
} from '@atcute/atproto'
import { fromUint8Array as readCar } from '@atcute/car'
import { fromUint8Array as readRepo, verifyRecord } from '@atcute/repo'
import * as CID from '@atcute/cid'
import { decode as decodeCbor } from '@atcute/cbor'
import { getPublicKeyFromDidController, Secp256k1PublicKey, P256PublicKey } from '@atcute/crypto'
import { createHash } from 'node:crypto'

const PDS_URL = process.env.PDS_URL
if (!PDS_URL) {
  console.error('client.mjs: set PDS_URL')
  process.exit(2)
}

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
const show = (v) => {
  try {
    return JSON.stringify(v)
  } catch {
    return String(v)
  }
}

/** Awaits `fn`; a thrown error fails check `name` and returns undefined. */
async function attempt(name, fn) {
  try {
    const value = await fn()
    check(name, true)
    return value
  } catch (err) {
    const detail =
      err instanceof ClientResponseError
        ? `${err.status} ${err.error}: ${err.description}`
        : err instanceof ClientValidationError
          ? `${err.message}`
          : String(err?.stack ?? err)
    check(name, false, detail)
    return undefined
  }
}

/** Expects a failed response of `status` whose `data.error` is `error`. */
async function refused(name, status, error, promise) {
  try {
    const res = await promise
    if (res.ok) {
      check(name, false, `expected ${status} ${error}, got ${res.status} ${show(res.data)}`)
      return
    }
    check(name, res.status === status && res.data.error === error, `expected ${status} ${error}, got ${res.status} ${show(res.data)}`)
  } catch (err) {
    check(name, false, `expected a response, got ${err}`)
  }
}

/** A FetchHandler that carries a session's access token. */
function bearer(service, session) {
  return async (pathname, init) => {
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${session.accessJwt}`)
    return fetch(new URL(pathname, service), { ...init, headers })
  }
}

/** A minimal PNG (8-byte signature, IHDR, IDAT, IEND): what infer sniffs. */
function pngBytes() {
  const sig = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]
  const ihdr = [0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0, 0x90, 0x77, 0x53, 0xde]
  const idat = [0, 0, 0, 12, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00, 0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0]
  const iend = [0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]
  return new Uint8Array([...sig, ...ihdr, ...idat, ...iend])
}

/** The CID of `bytes` computed here (sha-256, CIDv1), as a string. */
function cidOf(codec, bytes) {
  const digest = createHash('sha256').update(bytes).digest()
  return CID.toString(CID.fromDigest(codec, new Uint8Array(digest)))
}

/** The commit signing key of a DID document, for @atcute/repo's verifyRecord. */
async function signingKey(didDoc) {
  const vm = (didDoc?.verificationMethod ?? []).find((m) => m.id === `${didDoc.id}#atproto` || m.id === '#atproto')
  if (!vm) throw new Error(`no #atproto verification method in ${show(didDoc)}`)
  const found = getPublicKeyFromDidController(vm)
  return found.type === 'secp256k1'
    ? Secp256k1PublicKey.importRaw(found.publicKeyBytes)
    : P256PublicKey.importRaw(found.publicKeyBytes)
}

const post = (text, extra = {}) => ({ $type: 'app.bsky.feed.post', text, createdAt: new Date().toISOString(), ...extra })

async function main() {
  const anon = new Client({ handler: simpleFetchHandler({ service: PDS_URL }) })

  // --- a new user
  const described = await attempt('describeServer (schema-checked)', () => ok(anon.call(ComAtprotoServerDescribeServer)))
  const domain = described?.availableUserDomains?.[0] ?? '.test'
  const handle = `carol${domain}`
  const password = 'a long and lovely password'
  const created = await attempt('createAccount', () =>
    ok(anon.call(ComAtprotoServerCreateAccount, { input: { handle, password, email: 'carol@example.com' } })),
  )
  if (!created) throw new Error('createAccount failed: nothing else can run')
  const did = created.did
  check('createAccount: a did:plc', /^did:plc:[a-z2-7]{24}$/.test(did), did)
  check('createAccount: tokens', typeof created.accessJwt === 'string' && typeof created.refreshJwt === 'string')
  await refused('createAccount: handle taken -> HandleNotAvailable', 400, 'HandleNotAvailable',
    anon.post('com.atproto.server.createAccount', { input: { handle, password, email: 'x@example.com' } }))
  await refused('createAccount: bad handle -> InvalidHandle', 400, 'InvalidHandle',
    anon.post('com.atproto.server.createAccount', { input: { handle: 'no_underscores!', password } }))

  // --- login
  const session = await attempt('createSession (login)', () =>
    ok(anon.call(ComAtprotoServerCreateSession, { input: { identifier: handle, password } })),
  )
  if (!session) throw new Error('login failed: nothing else can run')
  check('createSession: did and handle', session.did === did && session.handle === handle, show(session))
  await refused('createSession: wrong password -> AuthenticationRequired', 401, 'AuthenticationRequired',
    anon.post('com.atproto.server.createSession', { input: { identifier: handle, password: 'wrong' } }))
  const rpc = new Client({ handler: bearer(PDS_URL, session) })
  const me = await attempt('getSession', () => ok(rpc.call(ComAtprotoServerGetSession)))
  check('getSession: did and handle', me?.did === did && me?.handle === handle, show(me))
  const refreshed = await attempt('refreshSession', () =>
    ok(new Client({ handler: bearer(PDS_URL, { accessJwt: session.refreshJwt }) }).post('com.atproto.server.refreshSession')),
  )
  check('refreshSession: a new refresh token', refreshed && refreshed.refreshJwt !== session.refreshJwt)
  if (refreshed) Object.assign(session, { accessJwt: refreshed.accessJwt, refreshJwt: refreshed.refreshJwt })
  await refused('getSession without a token -> AuthRequired', 401, 'AuthRequired',
    anon.get('com.atproto.server.getSession'))

  // --- a post with an image
  const png = pngBytes()
  const upStar = await attempt('uploadBlob with Content-Type */*', () =>
    ok(rpc.post('com.atproto.repo.uploadBlob', { input: png, headers: { 'content-type': '*/*' } })),
  )
  const blob = upStar?.blob
  check('uploadBlob */*: sniffed image/png', blob?.mimeType === 'image/png', show(blob))
  check('uploadBlob */*: size', blob?.size === png.length, show(blob))
  const blobCid = blob?.ref?.$link
  check('uploadBlob */*: ref is the raw CID of the bytes', blobCid === cidOf(CID.CODEC_RAW, png), `${blobCid} vs ${cidOf(CID.CODEC_RAW, png)}`)
  const upUntyped = await attempt('uploadBlob with an untyped Blob', () =>
    ok(rpc.post('com.atproto.repo.uploadBlob', { input: new Blob([png]) })),
  )
  check('uploadBlob untyped: same blob', upUntyped?.blob?.ref?.$link === blobCid && upUntyped?.blob?.mimeType === 'image/png', show(upUntyped))
  const withImage = post('hello from atcute', {
    embed: { $type: 'app.bsky.embed.images', images: [{ alt: 'a pixel', image: blob, aspectRatio: { width: 1, height: 1 } }] },
  })
  const imagePost = await attempt('createRecord: post with the image', () =>
    ok(rpc.call(ComAtprotoRepoCreateRecord, { input: { repo: did, collection: 'app.bsky.feed.post', record: withImage } })),
  )
  // atpds does not validate against app.bsky lexicons (a Deviation in xrpc's crate doc): `unknown`.
  check('createRecord: validationStatus valid or unknown', ['valid', 'unknown'].includes(imagePost?.validationStatus), show(imagePost))
  const got = await attempt('sync.getBlob', () => ok(anon.get('com.atproto.sync.getBlob', { params: { did, cid: blobCid }, as: 'bytes' })))
  check('sync.getBlob: same bytes', got && Buffer.compare(Buffer.from(got), Buffer.from(png)) === 0)
  const rawBlob = await fetch(`${PDS_URL}/xrpc/com.atproto.sync.getBlob?did=${did}&cid=${blobCid}`)
  check('sync.getBlob: served as image/png', rawBlob.headers.get('content-type') === 'image/png', rawBlob.headers.get('content-type'))
  await rawBlob.arrayBuffer()

  // --- CRUD and list
  const live = new Map() // path -> cid
  if (imagePost) live.set(`app.bsky.feed.post/${imagePost.uri.split('/').pop()}`, imagePost.cid)
  const rkeys = []
  for (let i = 0; i < 5; i++) {
    const res = await attempt(`createRecord ${i}`, () =>
      ok(rpc.call(ComAtprotoRepoCreateRecord, { input: { repo: did, collection: 'app.bsky.feed.post', record: post(`post ${i}`) } })),
    )
    if (res) {
      const rkey = res.uri.split('/').pop()
      rkeys.push(rkey)
      live.set(`app.bsky.feed.post/${rkey}`, res.cid)
      check(`createRecord ${i}: uri`, res.uri === `at://${did}/app.bsky.feed.post/${rkey}`, res.uri)
      check(`createRecord ${i}: commit`, typeof res.commit?.cid === 'string' && typeof res.commit?.rev === 'string', show(res.commit))
    }
  }
  const first = rkeys[0]
  const read = await attempt('getRecord', () =>
    ok(rpc.call(ComAtprotoRepoGetRecord, { params: { repo: did, collection: 'app.bsky.feed.post', rkey: first } })),
  )
  check('getRecord: value and cid', read?.value?.text === 'post 0' && read?.cid === live.get(`app.bsky.feed.post/${first}`), show(read))
  const profile = { $type: 'app.bsky.actor.profile', displayName: 'Carol', description: 'made with atcute' }
  const put = await attempt('putRecord: profile', () =>
    ok(rpc.call(ComAtprotoRepoPutRecord, { input: { repo: did, collection: 'app.bsky.actor.profile', rkey: 'self', record: profile } })),
  )
  if (put) live.set('app.bsky.actor.profile/self', put.cid)
  const edited = post('post 1, edited')
  const update = await attempt('putRecord: update post 1', () =>
    ok(rpc.call(ComAtprotoRepoPutRecord, { input: { repo: did, collection: 'app.bsky.feed.post', rkey: rkeys[1], record: edited, swapRecord: live.get(`app.bsky.feed.post/${rkeys[1]}`) } })),
  )
  if (update) live.set(`app.bsky.feed.post/${rkeys[1]}`, update.cid)
  check('putRecord: a new cid', update && update.cid !== read?.cid)
  const del = await attempt('deleteRecord post 2', () =>
    ok(rpc.call(ComAtprotoRepoDeleteRecord, { input: { repo: did, collection: 'app.bsky.feed.post', rkey: rkeys[2] } })),
  )
  if (del) live.delete(`app.bsky.feed.post/${rkeys[2]}`)
  // Listed two at a time, following the cursor to the end.
  const listed = []
  let cursor
  for (let page = 0; page < 10; page++) {
    const res = await attempt(`listRecords page ${page}`, () =>
      ok(rpc.call(ComAtprotoRepoListRecords, { params: { repo: did, collection: 'app.bsky.feed.post', limit: 2, cursor } })),
    )
    if (!res) break
    listed.push(...res.records)
    cursor = res.cursor
    if (!cursor || res.records.length === 0) break
  }
  const livePosts = [...live].filter(([p]) => p.startsWith('app.bsky.feed.post/'))
  check('listRecords: every live post once', listed.length === livePosts.length && livePosts.every(([p, c]) => listed.some((r) => r.uri === `at://${did}/${p}` && r.cid === c)),
    `listed ${show(listed.map((r) => r.uri))}, live ${show(livePosts.map(([p]) => p))}`)
  const keys = listed.map((r) => r.uri.split('/').pop())
  check('listRecords: newest first', keys.every((k, i) => i === 0 || keys[i - 1] > k), show(keys))
  const reversed = await attempt('listRecords reverse', () =>
    ok(rpc.call(ComAtprotoRepoListRecords, { params: { repo: did, collection: 'app.bsky.feed.post', reverse: true } })),
  )
  check('listRecords reverse: oldest first', show(reversed?.records.map((r) => r.uri.split('/').pop())) === show([...keys].reverse()))
  const repoInfo = await attempt('describeRepo', () => ok(rpc.call(ComAtprotoRepoDescribeRepo, { params: { repo: handle } })))
  check('describeRepo: both collections', ['app.bsky.actor.profile', 'app.bsky.feed.post'].every((c) => repoInfo?.collections.includes(c)), show(repoInfo?.collections))
  check('describeRepo: handle correct', repoInfo?.handleIsCorrect === true && repoInfo?.did === did, show(repoInfo))

  // --- sync: getLatestCommit, getRepo (every CID checked), getRecord
  const latest = await attempt('sync.getLatestCommit', () => ok(anon.call(ComAtprotoSyncGetLatestCommit, { params: { did } })))
  check('getLatestCommit: the last write', latest?.cid === del?.commit?.cid && latest?.rev === del?.commit?.rev, `${show(latest)} vs ${show(del?.commit)}`)
  const car = await attempt('sync.getRepo', () => ok(anon.get('com.atproto.sync.getRepo', { params: { did }, as: 'bytes' })))
  let key
  try {
    key = await signingKey(repoInfo?.didDoc)
    check('DID document: the #atproto key', true)
  } catch (err) {
    check('DID document: the #atproto key', false, String(err))
  }
  if (car) {
    const reader = await attempt('@atcute/car reads getRepo', () => readCar(car))
    if (reader) {
      check('getRepo: one root, the latest commit', reader.roots.length === 1 && reader.roots[0].$link === latest?.cid, show(reader.roots))
      let blocks = 0
      let bad = []
      let commit
      for (const entry of reader) {
        blocks += 1
        const claimed = CID.toString(entry.cid)
        const computed = cidOf(entry.cid.codec, entry.bytes)
        if (entry.cid.codec !== CID.CODEC_DCBOR || claimed !== computed) bad.push(`${claimed} (computed ${computed})`)
        if (claimed === latest?.cid) commit = decodeCbor(entry.bytes)
      }
      check('getRepo: every block CID is its bytes hashed', blocks > 0 && bad.length === 0, `${bad.length} of ${blocks}: ${bad.slice(0, 3).join(', ')}`)
      check('getRepo: commit names the DID, v3, rev', commit?.did === did && commit?.version === 3 && commit?.rev === latest?.rev, show(commit && { did: commit.did, version: commit.version, rev: commit.rev }))
      const entries = await attempt('@atcute/repo walks the records', () => [...readRepo(car)])
      if (entries) {
        const inRepo = new Map(entries.map((e) => [`${e.collection}/${e.rkey}`, e.cid.$link]))
        check('getRepo: exactly the live records, same CIDs', inRepo.size === live.size && [...live].every(([p, c]) => inRepo.get(p) === c),
          `repo ${show([...inRepo])}, live ${show([...live])}`)
        const recordCids = entries.filter((e) => cidOf(CID.CODEC_DCBOR, e.bytes) !== e.cid.$link)
        check('getRepo: every record CID is its bytes hashed', recordCids.length === 0, show(recordCids.map((e) => e.cid.$link)))
        const image = entries.find((e) => e.record?.embed?.$type === 'app.bsky.embed.images')
        check('getRepo: the image post references the blob', image?.record.embed.images[0].image.ref.$link === blobCid, show(image?.record))
      }
      if (key) {
        await attempt('verifyRecord: profile in getRepo, signature checked', () =>
          verifyRecord({ did, collection: 'app.bsky.actor.profile', rkey: 'self', carBytes: car, publicKey: key }))
      }
    }
  }
  const proof = await attempt('sync.getRecord', () =>
    ok(anon.get('com.atproto.sync.getRecord', { params: { did, collection: 'app.bsky.feed.post', rkey: rkeys[1] }, as: 'bytes' })),
  )
  if (proof && key) {
    const verified = await attempt('verifyRecord: sync.getRecord proof, signature checked', () =>
      verifyRecord({ did, collection: 'app.bsky.feed.post', rkey: rkeys[1], carBytes: proof, publicKey: key }))
    check('sync.getRecord: the edited record', verified?.cid === live.get(`app.bsky.feed.post/${rkeys[1]}`) && verified?.record?.text === edited.text, show(verified))
    const blocks = [...readCar(proof)]
    check('sync.getRecord: every block CID is its bytes hashed', blocks.every((e) => CID.toString(e.cid) === cidOf(e.cid.codec, e.bytes)))
  }
  const goneProof = await anon.get('com.atproto.sync.getRecord', { params: { did, collection: 'app.bsky.feed.post', rkey: rkeys[2] }, as: 'bytes' })
  if (goneProof.ok && key) {
    // The reference answers a deleted record with a proof of its absence.
    let absent = false
    try {
      await verifyRecord({ did, collection: 'app.bsky.feed.post', rkey: rkeys[2], carBytes: goneProof.data, publicKey: key })
    } catch {
      absent = true
    }
    check('sync.getRecord of a deleted record: no record proven', absent)
  } else {
    check('sync.getRecord of a deleted record: RecordNotFound', goneProof.status === 400 && goneProof.data.error === 'RecordNotFound', `${goneProof.status} ${show(goneProof.data)}`)
  }

  // --- app passwords
  const appPass = await attempt('createAppPassword', () =>
    ok(rpc.call(ComAtprotoServerCreateAppPassword, { input: { name: 'atcute-app' } })),
  )
  check('createAppPassword: xxxx-xxxx-xxxx-xxxx', /^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/.test(appPass?.password ?? ''), appPass?.password)
  await refused('createAppPassword: same name -> InvalidRequest', 400, 'InvalidRequest',
    rpc.post('com.atproto.server.createAppPassword', { input: { name: 'atcute-app' } }))
  const passwords = await attempt('listAppPasswords', () => ok(rpc.call(ComAtprotoServerListAppPasswords)))
  check('listAppPasswords: the one made', passwords?.passwords.length === 1 && passwords.passwords[0].name === 'atcute-app', show(passwords))
  if (appPass) {
    const appSession = await attempt('login with the app password', () =>
      ok(anon.call(ComAtprotoServerCreateSession, { input: { identifier: did, password: appPass.password } })),
    )
    if (appSession) {
      const appRpc = new Client({ handler: bearer(PDS_URL, appSession) })
      await attempt('app password session: createRecord', () =>
        ok(appRpc.post('com.atproto.repo.createRecord', { input: { repo: did, collection: 'app.bsky.feed.like', record: { $type: 'app.bsky.feed.like', subject: { uri: imagePost?.uri, cid: imagePost?.cid }, createdAt: new Date().toISOString() } } })),
      )
      await refused('app password session: createAppPassword refused', 401, 'InvalidToken',
        appRpc.post('com.atproto.server.createAppPassword', { input: { name: 'nested' } }))
    }
    await attempt('revokeAppPassword', () => ok(rpc.post('com.atproto.server.revokeAppPassword', { input: { name: 'atcute-app' }, as: null })))
    await refused('login with the revoked app password', 401, 'AuthenticationRequired',
      anon.post('com.atproto.server.createSession', { input: { identifier: did, password: appPass.password } }))
  }

  // --- the typed errors
  await refused('getRecord of a deleted record -> RecordNotFound', 400, 'RecordNotFound',
    anon.get('com.atproto.repo.getRecord', { params: { repo: did, collection: 'app.bsky.feed.post', rkey: rkeys[2] } }))
  await refused('putRecord with a stale swapRecord -> InvalidSwap', 400, 'InvalidSwap',
    rpc.post('com.atproto.repo.putRecord', { input: { repo: did, collection: 'app.bsky.feed.post', rkey: rkeys[1], record: post('no'), swapRecord: read?.cid } }))
  await refused('createRecord with a stale swapCommit -> InvalidSwap', 400, 'InvalidSwap',
    rpc.post('com.atproto.repo.createRecord', { input: { repo: did, collection: 'app.bsky.feed.post', record: post('no'), swapCommit: imagePost?.commit?.cid } }))
  await refused('createRecord without a token -> AuthRequired', 401, 'AuthRequired',
    anon.post('com.atproto.repo.createRecord', { input: { repo: did, collection: 'app.bsky.feed.post', record: post('no') } }))
  await refused('getLatestCommit of an unknown DID -> RepoNotFound', 400, 'RepoNotFound',
    anon.get('com.atproto.sync.getLatestCommit', { params: { did: 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa' } }))
  await refused('getBlob of an unknown CID -> BlobNotFound', 400, 'BlobNotFound',
    anon.get('com.atproto.sync.getBlob', { params: { did, cid: cidOf(CID.CODEC_RAW, new Uint8Array([1, 2, 3])) }, as: 'bytes' }))
  await refused('a record whose $type is not its collection -> InvalidRequest', 400, 'InvalidRequest',
    rpc.post('com.atproto.repo.createRecord', { input: { repo: did, collection: 'app.bsky.feed.post', record: { $type: 'app.bsky.feed.like', text: 'x' } } }))
  await refused('a bad collection NSID -> InvalidRequest', 400, 'InvalidRequest',
    rpc.post('com.atproto.repo.createRecord', { input: { repo: did, collection: 'not an nsid', record: post('no') } }))
  await refused('an unknown method -> MethodNotImplemented', 501, 'MethodNotImplemented', anon.get('com.example.nothing'))
  const wrongKind = new Client({ handler: bearer(PDS_URL, { accessJwt: session.refreshJwt }) })
  await refused('a refresh token used as access -> AuthRequired', 401, 'AuthRequired', wrongKind.get('com.atproto.server.getSession'))
}

try {
  await main()
} catch (err) {
  check('the session ran to its end', false, String(err?.stack ?? err))
}
console.log(`atcute-client: ${passed} passed, ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
