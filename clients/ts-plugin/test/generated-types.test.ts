import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'

// .test-build/test/ → package root
const root = new URL('../../', import.meta.url)

test('src/generated/api.ts matches openapi/openapi.json (run `npm run gen:types` when this fails)', async () => {
  const script = new URL('scripts/gen-types.mjs', root).href
  const { generateApiTypes } = (await import(script)) as { generateApiTypes: () => Promise<string> }
  const fresh = await generateApiTypes()
  const committed = readFileSync(new URL('src/generated/api.ts', root), 'utf8')
  assert.ok(committed === fresh, 'generated API types are stale: run `npm run gen:types`')
})
