// A local PLC directory for the official-client test: @did-plc/server with
// its in-memory database (Database.mock(), no PostgreSQL), on a loopback
// port chosen by the OS. Prints `plc listening on http://127.0.0.1:PORT`
// once it accepts requests, then serves until stdin closes or it is
// signalled (the Rust test owns its lifetime).
import plc from '@did-plc/server'

const { PlcServer, Database } = plc

const server = PlcServer.create({ db: Database.mock(), port: 0 })
const http = await server.start()
const { port } = http.address()
console.log(`plc listening on http://127.0.0.1:${port}`)

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  await server.destroy().catch(() => {})
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
process.stdin.on('end', stop)
process.stdin.on('close', stop)
process.stdin.resume()
