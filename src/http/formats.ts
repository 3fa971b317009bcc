// The string formats our schemas use, checked fast and strictly.
//
// @elysiajs/openapi bundles @sinclair/typemap, which on import replaces TypeBox's global `date`, `email`, `uuid`…
// format checks with ones that build a new zod schema on every call. Every checked field then cost tens of
// microseconds: a page of 50 animals (two dates each) spent milliseconds validating its own response. Importing
// it here first and then registering Elysia's own tables (from ajv-formats: RFC 3339 full-date, RFC 3986 URI,
// the HTML email pattern) undoes that for every format our schemas name.
import '@elysiajs/openapi'
import { FormatRegistry } from '@sinclair/typebox'
import { fullFormats } from 'elysia/type-system/format'

const USED_FORMATS = ['date', 'email', 'uri'] as const

for (const name of USED_FORMATS) {
  const check = fullFormats[name] as RegExp | ((value: string) => boolean)
  FormatRegistry.Set(name, typeof check === 'function' ? check : (value) => check.test(value))
}
