// A start that cannot listen (issue 32): PORT or MQTT_PORT already taken (a system Mosquitto on 1883, a second
// server) ends with one line naming the variable and the port, exit code 2 and no stack, like a bad variable.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { freePort, runProcess } from '../../bench/lib/processes.ts'
import { tempDataDir } from '../process-helpers.ts'

/** The embedded database migrates before the server listens: tens of seconds on a busy 2-core machine. */
const START_MS = 150_000
let occupied: Server
let takenPort: number

beforeAll(async () => {
  // Another program's listener, without SO_REUSEPORT (as Mosquitto's is), on every address.
  takenPort = freePort()
  occupied = createServer()
  await new Promise<void>((resolve) => occupied.listen({ port: takenPort, host: '0.0.0.0' }, () => resolve()))
})
afterAll(() => { occupied.close() })

const start = (env: Record<string, string>) => runProcess([process.execPath, 'src/main.ts'], { DATA_DIR: tempDataDir(), DEMO: '0', LOG_LEVEL: 'warn', ...env }, START_MS - 10_000)

/** The refusal: exit 2, and stderr is exactly one line (no stack, no source excerpt). */
function expectOneLine(outcome: { code: number; stderr: string }): string {
  expect(outcome.code).toBe(2)
  const lines = outcome.stderr.trim().split('\n')
  expect(lines).toHaveLength(1)
  return lines[0]!
}

describe('a port already in use', () => {
  test('PORT: one line naming PORT and the port', async () => {
    const line = expectOneLine(await start({ PORT: String(takenPort) }))
    expect(line).toContain(`PORT=${takenPort}`)
    expect(line).toContain('already in use')
  }, START_MS)

  test('MQTT_PORT: one line naming MQTT_PORT and the port; the HTTP port it opened is closed again', async () => {
    const httpPort = freePort()
    const line = expectOneLine(await start({ PORT: String(httpPort), MQTT_PORT: String(takenPort) }))
    expect(line).toStartWith(`MQTT_PORT=${takenPort}`)
    expect(line).toContain('already in use')
    expect(await fetch(`http://127.0.0.1:${httpPort}/healthz`).then(() => 'answered', () => 'closed')).toBe('closed')
  }, START_MS)
})

test('a bad variable is one line too', async () => {
  const line = expectOneLine(await start({ PORT: 'eighty' }))
  expect(line).toContain('PORT must be an integer')
})

test('a second server on the same embedded data directory is one line too, naming DATA_DIR and the process holding it', async () => {
  const dataDir = tempDataDir()
  // A live process (this test's) holds the directory, as a first `npm start` does.
  writeFileSync(join(dataDir, 'hrs.pid'), String(process.pid))
  const line = expectOneLine(await start({ DATA_DIR: dataDir }))
  expect(line).toStartWith(`DATA_DIR=${dataDir}: `)
  expect(line).toContain(`in use by process ${process.pid}`)
  rmSync(dataDir, { recursive: true, force: true })
})
