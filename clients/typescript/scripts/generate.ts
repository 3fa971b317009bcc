// The SDK's types (clients/typescript/src/api.ts), generated from the OpenAPI document the service itself serves.
//
//   npm run client:generate      (bun clients/typescript/scripts/generate.ts)
//
// Builds the app in-process on an in-memory PGlite (no listening, no external services, never the `_test`
// routes), asks it for GET /api/v1/openapi.json, and writes clients/typescript/src/api.ts with openapi-typescript.
// test/http/client-e2e.test.ts regenerates from its running server and fails when the committed file differs,
// so the committed SDK can never drift from the served document. The output is deterministic: it depends only
// on the document (no timestamps, no paths, no versions of the machine).
//
// The output is a .ts module of types only, not a .d.ts: the package's build (tsc) emits declarations for .ts
// sources but does not copy .d.ts inputs to dist/, and the SDK's own modules import these types.
//
// It then rebuilds the package's dist/ (buildPackage), which is committed so that installing the SDK builds nothing.
//
// This script is the repository's, not the package's (it builds the service), so the package does not ship it.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript'
import { createApp } from '../../../src/app.ts'
import { loadConfig } from '../../../src/config.ts'
import { createDeps } from '../../../src/deps.ts'

export const API_TYPES_PATH = fileURLToPath(new URL('../src/api.ts', import.meta.url))
export const OPENAPI_PATH = '/api/v1/openapi.json'
export const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))

/**
 * The package's build (`npm run build` there: tsc with tsconfig.build.json) into `outDir`, dist/ by default.
 * The repository's own TypeScript does it, so this works offline and without an install inside the package.
 */
export function buildPackage(outDir = join(PACKAGE_DIR, 'dist')): void {
  const tsc = fileURLToPath(new URL('../../../node_modules/.bin/tsc', import.meta.url))
  const run = Bun.spawnSync([tsc, '-p', join(PACKAGE_DIR, 'tsconfig.build.json'), '--outDir', outDir], { stdout: 'pipe', stderr: 'pipe' })
  if (run.exitCode !== 0) throw new Error(`the SDK's build failed (${run.exitCode}):\n${run.stdout}${run.stderr}`)
}

const BANNER = `${COMMENT_HEADER.trimEnd()}
// Source: GET ${OPENAPI_PATH} of this service. Regenerate with \`npm run client:generate\`;
// test/http/client-e2e.test.ts fails while this file differs from what the running service publishes.

`

/** openapi-typescript's rendering of `document`, with the banner: the exact text of api.ts. */
export async function generateTypes(document: unknown): Promise<string> {
  // openapi-typescript may annotate the object it is given; hand it a copy.
  const ast = await openapiTS(structuredClone(document) as OpenAPI3, { silent: true })
  return BANNER + astToString(ast)
}

/** The published document, from an in-process app on an in-memory database without test routes. */
export async function publishedDocument(): Promise<unknown> {
  // `{}` as the environment: DATABASE_URL, REDIS_URL, TEST_ROUTES… of the shell play no part.
  const config = loadConfig({}, { dataDir: 'memory://', testRoutes: false, demo: false, logLevel: 'error' })
  const deps = await createDeps(config)
  try {
    const app = createApp(deps)
    const response = await app.handle(new Request(`http://localhost${OPENAPI_PATH}`))
    if (response.status !== 200) throw new Error(`GET ${OPENAPI_PATH} answered ${response.status}: ${await response.text()}`)
    return await response.json()
  } finally {
    await deps.close()
  }
}

if (import.meta.main) {
  const text = await generateTypes(await publishedDocument())
  const previous = await Bun.file(API_TYPES_PATH).text().catch(() => undefined)
  await Bun.write(API_TYPES_PATH, text)
  console.log(`${previous === text ? 'unchanged' : 'wrote'} ${API_TYPES_PATH} (${text.split('\n').length} lines)`)
  buildPackage()
  console.log(`built ${join(PACKAGE_DIR, 'dist')}: commit it with api.ts`)
}
