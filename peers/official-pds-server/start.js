// atbench peer: the official PDS (@atproto/pds 0.4.217) as a whole HTTP
// server, for the benches that measure it through the same HTTP client as
// atpds (benches/src/official_pds.rs starts and stops it).
//
//   node start.js --dir DIR [--appview-url URL --appview-did DID]
//
// DIR must be empty or missing: it becomes the PDS's data directory
// (account, sequencer and DID-cache SQLite files, one SQLite file per
// actor) with its blobs on disk under DIR/blobs, as a PDS installed with
// the official defaults keeps them. A local PLC directory
// (@did-plc/server on its in-memory database) runs in the same process on
// a port of its own, so createAccount registers real did:plc identities
// without the network. Settings that differ from the package defaults,
// each because a benchmark needs it:
//   - rate limits off (PDS_RATE_LIMITS_ENABLED unset: the default is off;
//     stated here so that nobody turns them on by accident);
//   - no invite codes (invites are required by default);
//   - dev mode (http:// URLs, a localhost hostname, handles under .test);
//   - no crawlers, and an appview: by default one named at a closed
//     loopback port (the PDS registers its app.bsky routes only with an
//     appview configured, and getPreferences/putPreferences are among
//     them: it serves those itself), so nothing is proxied and nothing
//     leaves the machine; --appview-url/--appview-did (both or neither)
//     name a live one instead, such as the benches' appview stand-in on a
//     loopback port (benches/src/appview_standin.rs), which the PDS then
//     proxies app.bsky.* reads to with a service-auth JWT.
// Everything else, the scrypt password hashing and the SQLite settings
// included, is the package's default.
//
// Prints `official-pds listening on http://127.0.0.1:PORT plc
// http://127.0.0.1:PORT` once both answer, then serves until stdin
// closes or the process is signalled.
'use strict'

const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const crypto = require('node:crypto')
const { PDS, envToCfg, envToSecrets } = require('@atproto/pds')
const { Secp256k1Keypair } = require('@atproto/crypto')
const plc = require('@did-plc/server')

// The appview when none is named: a closed port, a DID nothing answers to.
const DEAD_APPVIEW_URL = 'http://127.0.0.1:9'
const DEAD_APPVIEW_DID = 'did:web:appview.invalid'

function parseArgs(argv) {
  const args = { dir: null, appviewUrl: null, appviewDid: null }
  for (let i = 2; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]]
    if (value === undefined) throw new Error(`${flag} needs a value`)
    if (flag === '--dir') args.dir = value
    else if (flag === '--appview-url') args.appviewUrl = value
    else if (flag === '--appview-did') args.appviewDid = value
    else throw new Error(`unknown option ${flag}`)
  }
  const usage = 'usage: start.js --dir DIR [--appview-url URL --appview-did DID]'
  if (!args.dir) throw new Error(usage)
  if ((args.appviewUrl === null) !== (args.appviewDid === null)) {
    throw new Error(`--appview-url and --appview-did go together (${usage})`)
  }
  if (args.appviewUrl !== null && !/^http:\/\/127\.0\.0\.1:[0-9]+$/.test(args.appviewUrl)) {
    throw new Error(`--appview-url must be http://127.0.0.1:PORT, not ${args.appviewUrl}`)
  }
  if (args.appviewDid !== null && !args.appviewDid.startsWith('did:')) {
    throw new Error(`--appview-did must be a DID, not ${args.appviewDid}`)
  }
  args.appviewUrl = args.appviewUrl ?? DEAD_APPVIEW_URL
  args.appviewDid = args.appviewDid ?? DEAD_APPVIEW_DID
  return args
}

// A port the OS says is free now (the PDS takes a port, not a listener).
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

async function main() {
  const args = parseArgs(process.argv)
  const dir = path.resolve(args.dir)
  fs.mkdirSync(dir, { recursive: true })
  if (fs.readdirSync(dir).length > 0) throw new Error(`${dir} is not empty`)

  const plcServer = plc.PlcServer.create({ db: plc.Database.mock(), port: 0 })
  const plcHttp = await plcServer.start()
  const plcUrl = `http://127.0.0.1:${plcHttp.address().port}`

  const port = await freePort()
  const rotation = await Secp256k1Keypair.create({ exportable: true })
  const rotationHex = Buffer.from(await rotation.export()).toString('hex')
  const env = {
    port,
    hostname: 'localhost',
    devMode: true,
    dataDirectory: dir,
    blobstoreDiskLocation: path.join(dir, 'blobs'),
    didPlcUrl: plcUrl,
    inviteRequired: false,
    rateLimitsEnabled: false,
    crawlers: [],
    bskyAppViewUrl: args.appviewUrl,
    bskyAppViewDid: args.appviewDid,
    jwtSecret: crypto.randomBytes(32).toString('hex'),
    adminPassword: crypto.randomBytes(16).toString('hex'),
    plcRotationKeyK256PrivateKeyHex: rotationHex,
    version: '0.4.217',
  }
  const cfg = envToCfg(env)
  const secrets = envToSecrets(env)
  const pds = await PDS.create(cfg, secrets)
  await pds.start()

  const url = `http://127.0.0.1:${port}`
  const health = await fetch(`${url}/xrpc/_health`)
  if (!health.ok) throw new Error(`${url}/xrpc/_health answered ${health.status}`)
  console.log(`official-pds listening on ${url} plc ${plcUrl}`)

  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await pds.destroy().catch(() => {})
    await plcServer.destroy().catch(() => {})
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  process.stdin.on('end', stop)
  process.stdin.on('close', stop)
  process.stdin.resume()
}

main().catch((err) => {
  console.error(`official-pds: ${err && err.stack ? err.stack : err}`)
  process.exit(1)
})
