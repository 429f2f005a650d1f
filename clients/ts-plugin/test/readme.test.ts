// The README's install block stays true to what the end-to-end test installs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url))
const settings = (text: string) => text.split('\n').map((l) => l.replace(/#.*$/, '').trimEnd()).filter(Boolean)

test("the README's pnpm-workspace.yaml and CLI version are tests/dsh's", () => {
  const readme = readFileSync(here('../../README.md'), 'utf8')
  const block = /cat > pnpm-workspace\.yaml <<'YAML'\n([\s\S]*?)\nYAML\n/.exec(readme)
  assert.ok(block, 'the README writes pnpm-workspace.yaml')
  const e2e = readFileSync(here('../../../../tests/dsh/pnpm-workspace.yaml'), 'utf8')
  assert.deepEqual(settings(block[1]!), settings(e2e))
  const cli = JSON.parse(readFileSync(here('../../../../tests/dsh/package.json'), 'utf8')).dependencies['@deepseek-ai/dsh']
  assert.ok(readme.includes(`"@deepseek-ai/dsh":"${cli}"`), `the README installs @deepseek-ai/dsh ${cli}`)
})
