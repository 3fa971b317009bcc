// The browsable API reference at /api/v1/docs: Swagger UI, served by this service from the swagger-ui-dist
// package, so the page renders with no internet. swagger-ui-dist was chosen over @scalar/api-reference because it
// ships its browser bundle with no dependencies (one package, ~30 MB), where Scalar's brings 200+ packages (Vue and
// ~25 @scalar/* packages, ~240 MB) into node_modules for the same single file.
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Elysia, t } from 'elysia'
import { ApiError } from './errors.ts'
import { op } from './operation.ts'
import { API_PREFIX } from './pipeline.ts'

const DOCS_PATH = `${API_PREFIX}/docs`
const ASSETS_PATH = `${DOCS_PATH}/assets`
const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))

const DOCUMENT_URL = `${API_PREFIX}/openapi.json`

// validatorUrl: null stops Swagger UI from sending the document to its public validator for a badge.
//
// ResolveAfterPaint: as soon as the document arrives, Swagger UI resolves its security schemes, and for an OpenAPI
// 3.1 document that walks the whole document (ApiDOM), about a second of main thread on a 2-core machine. It started
// 35 ms after the operation list was rendered and so kept the list from being painted until it finished; each
// resolution now waits for the next frame. Resolutions return nothing (they update the store), so deferring one
// changes nothing else.
const INIT_SCRIPT = `const ResolveAfterPaint = () => ({ statePlugins: { spec: { wrapActions: {
  requestResolvedSubtree: (resolve) => (path) => { requestAnimationFrame(() => setTimeout(() => resolve(path))) },
} } } })
const GuideFolded = (system) => {
  const React = system.React
  const h = React.createElement
  return {
    statePlugins: { spec: { wrapSelectors: { selectInfoDescriptionField: () => () => undefined } } },
    // The document is OpenAPI 3.1, whose title block is OAS31Info (the plain info component hands over to it).
    wrapComponents: { OAS31Info: (Original) => (props) => {
      const description = system.specSelectors.info().get('description') || ''
      const topics = [...description.matchAll(/^- \\*\\*([^*]+)\\*\\*/gm)].map((m) => m[1])
      const Markdown = system.getComponent('Markdown', true)
      const guide = h('details', { id: 'guide', className: 'guide', open: location.hash === '#guide' },
        h('summary', null, h('strong', null, 'Guide'), topics.length ? ': ' + topics.join(' · ') : ''),
        h('div', { className: 'info__description description' }, h(Markdown, { source: description })))
      return h(React.Fragment, null, h(Original, props), guide)
    } },
  }
}
window.ui = SwaggerUIBundle({
  url: ${JSON.stringify(DOCUMENT_URL)}, dom_id: '#reference', validatorUrl: null, plugins: [ResolveAfterPaint, GuideFolded],
  deepLinking: true, filter: true, docExpansion: 'list', defaultModelsExpandDepth: 0, displayRequestDuration: true,
})`

const packageFile = (name: string) => () => Bun.file(join(SWAGGER_UI_DIR, name))
/** The only files the page loads; anything else under assets/ is a 404. */
const ASSETS: Record<string, { type: string; body: () => Blob | string }> = {
  'swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', body: packageFile('swagger-ui-bundle.js') },
  'swagger-ui.css': { type: 'text/css; charset=utf-8', body: packageFile('swagger-ui.css') },
  'favicon-32x32.png': { type: 'image/png', body: packageFile('favicon-32x32.png') },
  'init.js': { type: 'text/javascript; charset=utf-8', body: () => INIT_SCRIPT },
}

/**
 * The document's description (the conventions every operation shares: a page and a half on a desktop, nearly four
 * screens on a phone) is folded into a "Guide" under the title (GuideFolded above), its summary naming its topics,
 * so the operations start on the first screen; /api/v1/docs#guide opens it.
 *
 * Swagger UI is laid out for a desktop; on a phone (390 px) a tag's long description and the responses' Links
 * column pushed the page sideways. Narrow screens put a tag's description under its name, drop the Links column
 * (the document declares no response links, so it only ever said "No links"), let long code words break, and scroll
 * whatever is still too wide inside its operation instead of the page.
 */
const PHONE_CSS = `body{margin:0} .topbar{display:none}
.swagger-ui .information-container .info{margin:24px 0 8px}
.swagger-ui details.guide{margin:0 0 16px;font:14px/1.5 sans-serif;color:#3b4151}
.swagger-ui details.guide>summary{cursor:pointer}
.swagger-ui details.guide[open]>summary{margin-bottom:8px}
@media (max-width: 600px) {
  .swagger-ui .info .title{font-size:26px}
  .swagger-ui .scheme-container{padding:12px 0}
  .swagger-ui .wrapper{padding:0 12px}
  .swagger-ui .opblock-tag{flex-wrap:wrap}
  .swagger-ui .opblock-tag>a{flex:1}
  .swagger-ui .opblock-tag small{order:1;flex:1 1 100%;padding:0 0 10px}
  .swagger-ui .markdown code,.swagger-ui .renderedMarkdown code{overflow-wrap:anywhere}
  .swagger-ui .response-col_links{display:none}
  .swagger-ui .opblock-body{overflow-x:auto}
}`

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Animal-Husbandry Records Service API v1</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="${ASSETS_PATH}/favicon-32x32.png">
<link rel="stylesheet" href="${ASSETS_PATH}/swagger-ui.css">
<link rel="preload" href="${DOCUMENT_URL}" as="fetch" crossorigin><!-- fetched while the bundle loads, not after it ran -->
<style>${PHONE_CSS}</style></head>
<body><div id="reference"></div>
<script src="${ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="${ASSETS_PATH}/init.js"></script></body></html>`

/**
 * The browser may load nothing from elsewhere: a stray external URL in the bundle fails instead of leaking the
 * reader's visit. Swagger UI sets inline styles and shows schema images as data: URLs.
 */
const CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'"

export function docsPage() {
  return new Elysia({ name: 'docs-page' })
    .get(DOCS_PATH, ({ set }) => {
      set.headers['content-type'] = 'text/html; charset=utf-8'
      set.headers['content-security-policy'] = CSP
      return PAGE
    }, {
      response: { 200: t.String({ description: 'HTML page rendering this document (Swagger UI, served by this service; nothing loads from elsewhere).' }) },
      detail: op({ operationId: 'getDocsPage', summary: 'Browsable API reference', tags: ['Platform'], auth: 'public' }),
    })
    .get(`${ASSETS_PATH}/:file`, ({ params, set }) => {
      const asset = Object.hasOwn(ASSETS, params.file) ? ASSETS[params.file]! : undefined
      if (!asset) throw new ApiError('not_found', 'No such file.')
      set.headers['content-type'] = asset.type
      set.headers['cache-control'] = 'public, max-age=3600'
      return asset.body()
    }, {
      params: t.Object({ file: t.String() }),
      detail: op({ operationId: 'getDocsAsset', summary: 'Files of the reference page', tags: ['Platform'], auth: 'public', hide: true }),
    })
}
