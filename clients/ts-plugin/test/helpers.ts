import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Config as ConfigSchema, apply, type Internals } from '../src/index.js'
import type { Config } from '../src/config.js'
import { FakeCtx } from './fake-ctx.js'
import { FakeSomnid, until } from './fake-somnid.js'

export const FAKE_TOKEN = 'the-fake-s-token'

export async function setup(overrides: Record<string, unknown> = {}, internals: Internals = {}, opts: { start?: boolean; services?: Record<string, unknown> } = {}) {
  const somnid = new FakeSomnid()
  // somnid always has a token, and the plugin sends nothing but health without one: the fake
  // holds this one unless the test says how the plugin finds its token.
  const told = 'token' in overrides || 'tokenFile' in overrides
  if (!told) somnid.token = FAKE_TOKEN
  await somnid.start()
  if (opts.start === false) await somnid.stop()
  const ctx = new FakeCtx()
  Object.assign(ctx.services, opts.services ?? {})
  // A spool of its own per test: never the user's ~/.dsh.
  const capture = { spoolDir: spoolDir(), ...((overrides.capture as object | undefined) ?? {}) }
  const token = told ? {} : { token: FAKE_TOKEN }
  const config: Config = ConfigSchema({ baseUrl: somnid.url, retryMinMs: 20, retryMaxMs: 100, hookTimeoutMs: 300, ...token, ...overrides, capture })
  apply(ctx.asContext(), config, internals)
  return { somnid, ctx, config }
}

export async function ready(ctx: FakeCtx, somnid: FakeSomnid) {
  await until(() => ctx.tools.size > 0 && somnid.of('POST', '/v1/prompt').length > 0, 3000, 'plugin ready')
  await until(() => ctx.sections.size >= 2 && sectionText(ctx, 'identity') !== '', 3000, 'sections')
}

export function sectionText(ctx: FakeCtx, key: string): string {
  const s = ctx.sections.get(`dsh-somnid:${key}`)
  if (!s) return ''
  return typeof s.text === 'function' ? s.text({}) : s.text
}

export { until }

const made: string[] = []

/** A fresh directory under the system's temp dir, removed when this test file's process
 * exits (node --test runs each file in a process of its own). */
export function tempDir(prefix: string): string {
  if (made.length === 0) {
    process.once('exit', () => {
      for (const dir of made) {
        try {
          rmSync(dir, { recursive: true, force: true })
        } catch {
          // a dir the system will not let go of stays; the test's verdict does not change
        }
      }
    })
  }
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.push(dir)
  return dir
}

export function spoolDir(): string {
  return join(tempDir('dsh-somnid-test-'), 'spool')
}
