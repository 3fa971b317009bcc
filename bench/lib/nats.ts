// Private nats-server processes with JetStream (Debian's `nats-server`) for the ingest-log tests and bench: one
// server, or a cluster of three, on free loopback ports, each with its own store directory; every wait bounded.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './processes.ts'

/** The nats-server binary, if this machine has one (`apt-get install nats-server`; .ci/run installs it). */
export const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((p) => existsSync(p))

export interface NatsNode {
  readonly name: string
  readonly url: string
  /** Kills the process (SIGKILL: as a crash would, nothing flushed). */
  kill(): Promise<void>
  /** Starts it again on the same ports and store directory. */
  start(): Promise<void>
  /**
   * Stops the process (SIGSTOP) as a partition or a hung host would: its connections stay open and silent, unlike a
   * crash's, which the kernel closes. `resume` lets it run on (SIGCONT).
   */
  pause(): void
  resume(): void
  /** Stops it and removes its store. */
  remove(): Promise<void>
}

interface NodeSpec { name: string; port: number; monitorPort: number; clusterPort?: number; routes?: number[]; clusterName?: string }

function node(spec: NodeSpec, dir: string): NatsNode {
  let proc: ReturnType<typeof Bun.spawn> | undefined
  const args = [
    NATS_SERVER!, '-a', '127.0.0.1', '-p', String(spec.port), '-m', String(spec.monitorPort), '-n', spec.name,
    '-js', '-sd', join(dir, spec.name),
    ...(spec.clusterPort ? ['--cluster_name', spec.clusterName!, '--cluster', `nats://127.0.0.1:${spec.clusterPort}`,
      '--routes', spec.routes!.map((p) => `nats://127.0.0.1:${p}`).join(',')] : []),
  ]
  const self: NatsNode = {
    name: spec.name,
    url: `nats://127.0.0.1:${spec.port}`,
    async start() {
      proc = Bun.spawn(args, { stdout: 'ignore', stderr: 'pipe' })
      const deadline = Date.now() + 20_000
      // Up when it answers on its monitoring port (JetStream's own health follows once the cluster has a leader).
      while (true) {
        if (proc.exitCode !== null) throw new Error(`nats-server ${spec.name} exited with ${proc.exitCode}: ${(await new Response(proc.stderr as ReadableStream).text()).trim().slice(-500)}`)
        const up = await fetch(`http://127.0.0.1:${spec.monitorPort}/varz`).then((r) => r.ok, () => false)
        if (up) return
        if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`nats-server ${spec.name} did not start within 20 s`) }
        await Bun.sleep(50)
      }
    },
    pause() { proc?.kill('SIGSTOP') },
    resume() { proc?.kill('SIGCONT') },
    async kill() {
      if (!proc || proc.exitCode !== null) return
      proc.kill('SIGKILL')
      await proc.exited
    },
    async remove() {
      await self.kill()
      rmSync(join(dir, spec.name), { recursive: true, force: true })
    },
  }
  return self
}

/** Waits until JetStream answers on `monitorPort` (its meta leader elected, in a cluster). */
async function jetStreamReady(monitorPorts: number[], timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  for (const port of monitorPorts) {
    while (!(await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false))) {
      if (Date.now() > deadline) throw new Error('JetStream did not become ready within 30 s')
      await Bun.sleep(100)
    }
  }
}

export interface NatsDeployment {
  readonly nodes: NatsNode[]
  /** The client URLs, comma-separated, as INGEST_LOG takes them. */
  readonly servers: string
  close(): Promise<void>
}

/** Ports nobody listens on right now, all different (the kernel may hand one out twice in a row). */
function distinctFreePorts(count: number): number[] {
  const ports = new Set<number>()
  while (ports.size < count) ports.add(freePort())
  return [...ports]
}

/**
 * One server (`size` 1) or a cluster of `size` servers routed to one another. A free port can be taken by someone
 * else between our probe and the server's bind (other tests run beside): a start that fails is tried again on
 * other ports, twice.
 */
export async function startNats(size = 1): Promise<NatsDeployment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNatsOnce(size)
    } catch (error) {
      if (attempt === 3) throw error
      console.warn(`nats: start ${attempt} of 3 failed, trying other ports: ${String(error)}`)
    }
  }
}

async function startNatsOnce(size: number): Promise<NatsDeployment> {
  if (!NATS_SERVER) throw new Error('nats-server is not installed (apt-get install nats-server)')
  const dir = mkdtempSync(join(tmpdir(), 'hrs-nats-'))
  const free = distinctFreePorts(size * 3)
  const ports = Array.from({ length: size }, (_, i) => ({ port: free[3 * i]!, monitorPort: free[3 * i + 1]!, clusterPort: size > 1 ? free[3 * i + 2] : undefined }))
  const nodes = ports.map((p, i) => node({
    name: `n${i + 1}`, port: p.port, monitorPort: p.monitorPort,
    ...(size > 1 ? { clusterName: 'hrs', clusterPort: p.clusterPort, routes: ports.filter((_, j) => j !== i).map((q) => q.clusterPort!) } : {}),
  }, dir))
  try {
    await Promise.all(nodes.map((n) => n.start()))
    await jetStreamReady(ports.map((p) => p.monitorPort))
  } catch (error) {
    await Promise.all(nodes.map((n) => n.kill()))
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    nodes,
    servers: nodes.map((n) => n.url).join(','),
    async close() {
      await Promise.all(nodes.map((n) => n.kill()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
